"""Wake detection: is the audio the user calling Sori by name? (see `base.WakeDetector`)."""
