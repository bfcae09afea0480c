"""Build step that copies the shipped files into the package (see device/sori/core/shipped.py).

The packs, the example config, the systemd unit and the model catalog are edited where they
live in the repository (intents/, device/, models/); a wheel carries them as package data
under sori/_shipped/, where importlib.resources finds them on an installed system.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
# Packaged name -> path in the repository; device/sori/core/shipped.py holds the same map.
SHIPPED = {
    "intents": "intents",
    "sori.example.toml": "device/sori.example.toml",
    "sori.service": "device/sori.service",
    "catalog.toml": "models/catalog.toml",
}


class BuildWithShipped(build_py):
    """build_py, then the shipped files into build/lib/sori/_shipped."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install reads them from the checkout
            return
        target = Path(self.build_lib) / "sori" / "_shipped"
        for name, source in SHIPPED.items():
            src = ROOT / source
            if not src.exists():
                raise SystemExit(f"setup.py: {source} is missing; build from a full checkout")
            dest = target / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir():
                shutil.copytree(
                    src,
                    dest,
                    dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
                )
            else:
                shutil.copy2(src, dest)


setup(cmdclass={"build_py": BuildWithShipped})
