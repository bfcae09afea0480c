"""Offline bundles (`sori bundle`): the wheels for a board's platform, the models of its
profile and a config in one tar with a manifest of checksums, installed on a device with no
network."""

from sori.provisioning.bundle.layout import MANIFEST, Manifest
from sori.provisioning.bundle.pack import PackOptions, pack
from sori.provisioning.bundle.unpack import InstallOptions, install_bundle

__all__ = ["MANIFEST", "InstallOptions", "Manifest", "PackOptions", "install_bundle", "pack"]
