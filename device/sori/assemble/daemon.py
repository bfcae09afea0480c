"""Build the daemon: every stage loaded and connected, and how a reload (SIGHUP) swaps the
presets and the home without touching what was built once."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from sori.assemble.acting import (
    HANDLER_SECTIONS,
    build_handlers,
    build_registry,
    build_timers,
    handler_changes,
    routes,
)
from sori.assemble.arbitration import attach_arbitration
from sori.assemble.presence import attach_presence
from sori.assemble.speaking import build_sink, build_voice, replies, warm_later
from sori.assemble.state import build_answerer, reload_answerer
from sori.assemble.thinking import start_thinking
from sori.assemble.understanding import Swappable, presets_from_config
from sori.assemble.wake import build_conversation
from sori.core.clock import Clock, MonotonicClock
from sori.core.config import Config
from sori.core.errors import ConfigError
from sori.core.home import Home
from sori.hearing.audio.played import PlayedAudio
from sori.serving.conversation.context import FollowUps
from sori.serving.daemon import Daemon
from sori.speaking.cache import ReplyCache
from sori.speaking.playback import Player

RELOADED_SECTIONS = ("home", "intents", "source")
"""What SIGHUP applies; every other section is read once at start."""


def build_daemon(
    config: Config,
    home: Home,
    output: str,
    load: Callable[[], tuple[Config, Home]],
    clock: Clock | None = None,
    warm_presets: bool = True,
    input_name: str = "none",
    no_wake: bool = False,
) -> Daemon:
    """Every stage, loaded and connected, speaking to `output` (see `build_sink`);
    blocking (models load here). `load` reads the config and home again on a reload.
    `input_name` ("mic", a file, "none") and `no_wake` decide how turns are gated
    (`build_conversation`)."""
    clock = clock or MonotonicClock()
    presets = presets_from_config(config.intents, home)
    understanding = Swappable(presets)
    voice = build_voice(config)
    cache = ReplyCache(voice, config.tts.cache_size)
    said = replies(config.intents.language)
    if config.tts.cache:
        cache.warm([*said.values(), *config.tts.warm])
    timers = build_timers(config)
    answerer = build_answerer(config, home)
    registry = build_registry(config, home, timers, clock, build_handlers(config), answerer.source)
    player = Player(build_sink(output), cache, clock)
    conversation = build_conversation(config, input_name, no_wake)
    if conversation.live:  # the microphone hears the speaker: Sori's own voice
        player.played = conversation.echo = PlayedAudio()
    thinker, closers, stoppers, threads = (
        start_thinking(config, presets) if config.daemon.thinking else (None, [], [], [])
    )
    daemon = Daemon(
        understanding=understanding,
        thinker=thinker,
        answerer=answerer,
        registry=registry,
        player=player,
        timers=timers,
        replies=said,
        clock=clock,
        barge_in=config.daemon.barge_in,
        earcon=config.daemon.earcon,
        hold_after_ms=config.router.hold_after_ms if thinker is not None else 0,
        followups=FollowUps(
            understanding, config.conversation.context_s, config.conversation.brightness_step
        ),
        conversation=conversation,
    )

    def reload() -> str:
        """Validate the whole new config, then swap presets and home; nothing is swapped
        when any check fails. Returns a note on what needs a restart ("" when nothing)."""
        new_config, new_home = load()  # every key checked; ConfigError names it
        where = new_config.source or "config"
        running_home = registry.home
        if running_home.devices and not new_home.devices:
            raise ConfigError(
                f"{where}: the new config has no devices (home.devices is empty) while "
                f"{len(running_home.devices)} are in use; refusing to empty the home. Fix the "
                "file and send SIGHUP again"
            )
        changed = handler_changes(config, new_config)
        if changed:
            raise ConfigError(
                f"{where}: {'; '.join(changed)}; handlers are built once at start: restart "
                "to change handlers (sudo systemctl restart sori)"
            )
        new_presets = presets_from_config(new_config.intents, new_home)  # a bad pack raises
        understanding.current = new_presets
        registry.reload(new_home, routes(new_config))
        reload_answerer(answerer, new_config, new_home)
        if new_config.tts.cache:
            warm_later(cache, new_presets, new_config.tts.cache_size)
        later = restart_sections(config, new_config)
        return f"restart to apply [{'], ['.join(later)}]" if later else ""

    daemon.reloader = reload
    attach_presence(config, daemon, registry)
    attach_arbitration(config, daemon)
    edge = thinker.edge if thinker is not None else None
    if edge is not None:  # the client's per-endpoint TTFB p95 in /metrics
        daemon.metrics.edge_endpoints = edge.ttfb_report
    daemon.closers.extend([*closers, answerer.close])
    daemon.stoppers.extend([cache.stop_warming, *stoppers])
    daemon.threads.extend(threads)
    if config.tts.cache and warm_presets:
        daemon.threads.append(warm_later(cache, presets, config.tts.cache_size))
    return daemon


def restart_sections(running: Config, new: Config) -> list[str]:
    """Sections that differ but take effect only after a restart (handlers excluded)."""
    skip = {*RELOADED_SECTIONS, *HANDLER_SECTIONS.values(), "actions"}
    return [
        f.name
        for f in dataclasses.fields(Config)
        if f.name not in skip and getattr(new, f.name) != getattr(running, f.name)
    ]
