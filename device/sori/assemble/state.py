"""Build the state source questions are answered from (`[state]`), and the answerer."""

from __future__ import annotations

import logging
import os

from sori.acting.state import StateSource
from sori.core.config import Config
from sori.core.home import Home
from sori.understanding.answering import Answerer

log = logging.getLogger(__name__)


def state_topics(config: Config, home: Home) -> dict[str, str]:
    """Entity id → MQTT state topic of every device of the home."""
    from sori.acting.state.mqtt import state_topic

    overrides = {d.id: d.state_topic for d in config.home.devices}
    return {d.id: state_topic(d, config.state.topic, overrides.get(d.id, "")) for d in home.devices}


def _mqtt(config: Config, home: Home) -> StateSource:
    from sori.acting.mqtt_connection import parse_url
    from sori.acting.state.mqtt import MqttStateSource

    m = config.mqtt
    host, port, tls = parse_url(m.url)
    source = MqttStateSource(
        host, port, tls, state_topics(config, home), m.client_id, m.username,
        os.environ.get(m.password_env, ""), config.state.timeout_s, m.url,
    )  # fmt: skip
    source.start()  # retained messages arrive while the rest starts
    return source


def _home_assistant(config: Config) -> StateSource:
    from sori.acting.state.home_assistant import HomeAssistantStateSource

    ha = config.home_assistant
    return HomeAssistantStateSource(ha.url, ha.token_env, config.state.timeout_s)


def build_state_source(config: Config, home: Home) -> StateSource | None:
    """The configured source; with "auto", each device read where its handler acts."""
    chosen = config.state.source
    if chosen == "none":
        return None
    if chosen == "mqtt":
        return _mqtt(config, home)
    if chosen == "home_assistant":
        return _home_assistant(config)
    from sori.acting.state.routed import RoutedStateSource

    handlers = {d.id: d.handler or config.actions.default_handler for d in config.home.devices}
    used = set(handlers.values()) | {config.actions.default_handler}
    sources: dict[str, StateSource] = {}
    if "mqtt" in used:
        sources["mqtt"] = _mqtt(config, home)
    if "home_assistant" in used:
        sources["home_assistant"] = _home_assistant(config)
    if not sources:
        log.info("questions have no state source (no device uses mqtt or home_assistant)")
        return None
    return RoutedStateSource(sources, handlers, config.actions.default_handler)


def build_answerer(config: Config, home: Home) -> Answerer:
    return Answerer(build_state_source(config, home), home, config.intents.language)


def reload_answerer(answerer: Answerer, config: Config, home: Home) -> None:
    """A reload's new home: new devices are asked, and their state topics followed."""
    from sori.acting.state.mqtt import MqttStateSource
    from sori.acting.state.routed import RoutedStateSource

    answerer.home = home
    source = answerer.source
    if isinstance(source, RoutedStateSource):
        source.route = {
            d.id: d.handler or config.actions.default_handler for d in config.home.devices
        }
        source = source.sources.get("mqtt")
    if isinstance(source, MqttStateSource):
        source.watch(state_topics(config, home))
