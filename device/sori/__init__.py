"""Sori (소리): an on-device voice assistant runtime, Korean first."""

__version__ = "0.1.0"
__all__ = ["__version__"]
