"""Offline bundles (`sori bundle`): the wheels for a board's platform, the models of its
profile and a config in one tar with a manifest of checksums, installed on a device with no
network."""

from sori.bundle.layout import MANIFEST, Manifest
from sori.bundle.pack import PackOptions, pack
from sori.bundle.unpack import InstallOptions, install_bundle

__all__ = ["MANIFEST", "InstallOptions", "Manifest", "PackOptions", "install_bundle", "pack"]
