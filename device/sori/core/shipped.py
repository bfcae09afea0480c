"""Files shipped with the package: the intent packs, the example config, the systemd unit
and the model catalog.

A wheel or sdist install carries them as package data under `sori/_shipped/` (setup.py's
build step copies them there); a checkout (the editable install the tests use) reads them
where they are edited, in the repository, so each file has one home.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

PACKAGED_DIR = "_shipped"
"""Folder inside the installed `sori` package that holds the shipped files."""

IN_CHECKOUT = {
    "intents": "intents",
    "sori.example.toml": "device/sori.example.toml",
    "sori.service": "device/sori.service",
    "catalog.toml": "models/catalog.toml",
}
"""Each shipped file or folder by its packaged name, and where it lives in a checkout
(relative to the repository root). setup.py holds the same map."""


def shipped_path(name: str) -> Path:
    """Where the shipped file or folder `name` (a key of IN_CHECKOUT) is on this install."""
    if name not in IN_CHECKOUT:
        raise KeyError(f"{name!r} is not shipped; one of {', '.join(IN_CHECKOUT)}")
    packaged = resources.files("sori").joinpath(PACKAGED_DIR, name)
    # A package on disk gives a real Path; sori is never imported from a zip.
    if isinstance(packaged, Path) and packaged.exists():
        return packaged
    return Path(__file__).resolve().parents[3] / IN_CHECKOUT[name]
