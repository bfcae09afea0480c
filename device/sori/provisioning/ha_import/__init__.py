"""The home as Home Assistant knows it: areas, floors, devices and the entities exposed to
Assist, read over HA's websocket API and turned into sori.toml's [home] tables."""

from sori.provisioning.ha_import.client import Registries, fetch_registries
from sori.provisioning.ha_import.home import home_tables, home_toml

__all__ = ["Registries", "fetch_registries", "home_tables", "home_toml"]
