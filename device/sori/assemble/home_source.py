"""Where the home comes from: the config's own [home] lists, or, with
`[home] source = "home_assistant"`, Home Assistant's registries (the entities exposed to
Assist), read at start-up and on every reload (SIGHUP). Devices listed in the file are
added to the imported ones and win on the same id (a handler or topic of one's own)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os

from sori.config import AreaConfig, Config, DeviceConfig, check_home
from sori.errors import ConfigError
from sori.ha_import import fetch_registries, home_tables

log = logging.getLogger(__name__)


def with_home_source(config: Config) -> Config:
    """`config` with its home filled from its source; blocking (call it off the event loop)."""
    if config.home.source != "home_assistant":
        return config
    ha = config.home_assistant
    if not ha.url:
        raise ConfigError(
            'home.source = "home_assistant" needs home_assistant.url (http://HOST:8123)'
        )
    token = os.environ.get(ha.token_env, "")
    if not token:
        raise ConfigError(
            f'home.source = "home_assistant" needs a long-lived access token in ${ha.token_env}'
        )
    tables = home_tables(asyncio.run(fetch_registries(ha.url, token)))
    own_areas = {a.id: a for a in config.home.areas}
    areas = [
        own_areas.pop(a["id"], None) or AreaConfig(a["id"], a["name"], a["aliases"])
        for a in tables["areas"]
    ]
    areas += own_areas.values()
    own_devices = {d.id: d for d in config.home.devices}
    devices = [
        own_devices.pop(d["id"], None)
        or DeviceConfig(
            id=d["id"],
            name=d["name"],
            domain=d["domain"],
            area=d["area"],
            aliases=d["aliases"],
            device_class=d.get("device_class", ""),
        )  # fmt: skip
        for d in tables["devices"]
    ]
    devices += own_devices.values()
    log.info("home from Home Assistant: %d areas, %d devices", len(areas), len(devices))
    home = dataclasses.replace(config.home, areas=areas, devices=devices)
    check_home(home, f"{config.source or 'config'} + Home Assistant {ha.url}")
    return dataclasses.replace(config, home=home)
