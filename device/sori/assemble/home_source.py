"""Where the home comes from: the config's own [home] lists, or, with
`[home] source = "home_assistant"`, Home Assistant's registries (the entities exposed to
Assist), read at start-up and on every reload (SIGHUP). Devices listed in the file are
added to the imported ones and win on the same id (a handler or topic of one's own).

Home Assistant is read within `home.source_timeout_s` in all. When it cannot be read (down,
too slow, a redirect, registries in a shape it never sends, names with control
characters), the home read last from it stays, or at a first start the file's own lists
alone, and one line says why: the speaker keeps serving instead of dying at start-up."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from typing import Any

from sori.core.config import AreaConfig, Config, DeviceConfig, check_home
from sori.core.errors import BackendError, ConfigError
from sori.provisioning.ha_import import fetch_registries, home_tables

log = logging.getLogger(__name__)

_last_good: dict[str, dict[str, Any]] = {}
"""The tables read last from each Home Assistant URL, for the reloads that cannot read it."""


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
    try:
        registries = asyncio.run(fetch_registries(ha.url, token, config.home.source_timeout_s))
        tables = home_tables(registries)
        merged = _merged(config, tables, complete=True)
    except (BackendError, ConfigError) as exc:  # HA's side: the file itself was checked
        kept = _last_good.get(ha.url)
        log.warning(
            "home: cannot use Home Assistant at %s (%s); keeping %s", ha.url, exc,
            "the last good home read from it" if kept else "the config's own areas and devices",
        )  # fmt: skip
        # Without HA's areas, the file's devices may name areas no longer known.
        return _merged(config, kept or {"areas": [], "devices": []}, complete=kept is not None)
    _last_good[ha.url] = tables
    log.info(
        "home from Home Assistant: %d areas, %d devices",
        len(merged.home.areas), len(merged.home.devices),
    )  # fmt: skip
    return merged


def _merged(config: Config, tables: dict[str, Any], *, complete: bool) -> Config:
    """The config's own areas and devices added to the imported ones (own ones win on the
    same id), checked whole when `complete`."""
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
    home = dataclasses.replace(config.home, areas=areas, devices=devices)
    where = f"{config.source or 'config'} + Home Assistant {config.home_assistant.url}"
    check_home(home, where, complete=complete)
    return dataclasses.replace(config, home=home)
