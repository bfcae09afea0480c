"""Provisioning a device: the model catalog and store, offline bundles, board profiles,
the doctor, and importing the home from Home Assistant."""
