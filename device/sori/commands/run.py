"""`sori run`: the voice assistant as a service (see `sori.daemon`)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import logging
import signal
import threading
from pathlib import Path
from typing import Any

from sori.actions import Timers
from sori.api_access import build_access, ensure_token, is_loopback, load_token, split_bind
from sori.assemble import (
    build_handlers,
    build_registry,
    build_sink,
    build_voice,
    replies,
    routes,
    used_handlers,
)
from sori.clock import Clock, MonotonicClock
from sori.commands.options import add_home_options, load_home, presets_from_config
from sori.commands.shutdown import (
    FINAL_MARGIN_S,
    Workers,
    exit_now,
    ignore_stop_signals,
    leftover_threads,
    stop_quietly_until_serving,
)
from sori.config import Config
from sori.daemon import Daemon
from sori.errors import AudioError, ConfigError, SoriError
from sori.home import Home
from sori.http_api import HttpApi
from sori.logs import setup_logging
from sori.playback import Player
from sori.tts.cache import ReplyCache

log = logging.getLogger("sori.run")


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "run",
        help="run the assistant: hear, understand, act and speak until stopped",
        description="Run the voice assistant: microphone (or a file) through hearing, "
        "understanding, actions and speech, plus a local HTTP API (health, metrics, say, "
        "events). With a file as input it exits once the file's last turn has finished. "
        "SIGTERM stops it gracefully; SIGHUP reloads the packs and the home.",
    )
    add_home_options(parser)
    parser.add_argument(
        "--input", default="mic", metavar="mic|FILE|none",
        help="audio in: the microphone, a WAV/FLAC file, or none (HTTP turns only)",
    )  # fmt: skip
    parser.add_argument(
        "--output", default="speaker", metavar="speaker|FILE.wav",
        help="audio out: the speaker (speaker:DEVICE for another one) or a WAV file",
    )  # fmt: skip
    parser.add_argument(
        "--http", metavar="HOST:PORT", help="HTTP API address (default http.bind); 'off' for none"
    )
    return parser


class Swappable:
    """Preset understanding that SIGHUP can replace while hearing holds on to it."""

    def __init__(self, presets: Any) -> None:
        self.current = presets

    def __getattr__(self, name: str) -> Any:
        return getattr(self.current, name)

    def match(self, text: str) -> Any:
        return self.current.match(text)


def preset_replies(presets: Any, limit: int) -> list[str]:
    """Responses of the presets' sample phrases: the replies worth having in the cache."""
    found: dict[str, None] = {}
    for phrase in presets.phrases():
        match = presets.match(phrase)
        if match is not None and match.response:
            found[match.response] = None
            if len(found) >= limit:
                break
    return list(found)


def build_daemon(
    args: argparse.Namespace,
    config: Config,
    home: Home,
    clock: Clock | None = None,
    warm_presets: bool = True,
) -> Daemon:
    """Every stage, loaded and connected; blocking (models load here)."""
    clock = clock or MonotonicClock()
    language = config.intents.language
    presets = presets_from_config(config.intents, home)
    understanding = Swappable(presets)
    voice = build_voice(config)
    cache = ReplyCache(voice, config.tts.cache_size)
    said = replies(language)
    if config.tts.cache:
        cache.warm([*said.values(), *config.tts.warm])
    timers = Timers()
    registry = build_registry(config, home, timers, clock, build_handlers(config))
    player = Player(build_sink(args.output), cache, clock)
    thinker, closers, stoppers, threads = (
        _thinking(config, presets) if config.daemon.thinking else (None, [], [], [])
    )
    daemon = Daemon(
        understanding=understanding,
        thinker=thinker,
        registry=registry,
        player=player,
        timers=timers,
        replies=said,
        clock=clock,
        barge_in=config.daemon.barge_in,
        earcon=config.daemon.earcon,
    )

    def reload() -> str:
        """Validate the whole new config, then swap presets and home; nothing is swapped
        when any check fails. Returns a note on what needs a restart ("" when nothing)."""
        new_config, new_home = load_home(args)  # every key checked; ConfigError names it
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
        if new_config.tts.cache:
            _warm_later(cache, new_presets, new_config.tts.cache_size)
        later = restart_sections(config, new_config)
        return f"restart to apply [{'], ['.join(later)}]" if later else ""

    daemon.reloader = reload
    daemon.closers.extend(closers)
    daemon.stoppers.extend([cache.stop_warming, *stoppers])
    daemon.threads.extend(threads)
    if config.tts.cache and warm_presets:
        daemon.threads.append(_warm_later(cache, presets, config.tts.cache_size))
    return daemon


HANDLER_SECTIONS = {
    "mqtt": "mqtt",
    "home_assistant": "home_assistant",
    "webhook": "webhook",
    "shell": "shell",
}
"""Handler name → the config section its connection is built from."""
RELOADED_SECTIONS = ("home", "intents", "source")
"""What SIGHUP applies; every other section is read once at start."""


def handler_changes(running: Config, new: Config) -> list[str]:
    """How `new` would change the handlers built from `running`, in words; empty if not."""
    old_used, new_used = used_handlers(running), used_handlers(new)
    changes = []
    if new.actions.default_handler != running.actions.default_handler:
        changes.append(
            f"actions.default_handler changes from {running.actions.default_handler!r} "
            f"to {new.actions.default_handler!r}"
        )
    if new_used - old_used:
        changes.append(f"handler {', '.join(sorted(new_used - old_used))} would be added")
    if old_used - new_used:
        changes.append(f"handler {', '.join(sorted(old_used - new_used))} would be removed")
    if new.actions.timeout_s != running.actions.timeout_s:
        changes.append("actions.timeout_s changes")
    for name in sorted(old_used & new_used):
        section = HANDLER_SECTIONS.get(name)
        if section and getattr(new, section) != getattr(running, section):
            changes.append(f"[{section}] changes")
    return changes


def restart_sections(running: Config, new: Config) -> list[str]:
    """Sections that differ but take effect only after a restart (handlers excluded)."""
    skip = {*RELOADED_SECTIONS, *HANDLER_SECTIONS.values(), "actions"}
    return [
        f.name
        for f in dataclasses.fields(Config)
        if f.name not in skip and getattr(new, f.name) != getattr(running, f.name)
    ]


def _thinking(config: Config, presets: Any) -> tuple[Any, list, list, list[threading.Thread]]:
    """The language-model router (issue 4's tiers), its local model loading in the background;
    with what shutdown needs: closers, stoppers and the loading thread.

    The daemon has matched the presets already, so the router starts at the local model.
    """
    from sori.commands.thinking import build_router

    try:
        router, local, edge = build_router(config, presets)
    except SoriError as exc:
        log.warning("language-model tiers unavailable, answering 'not understood': %s", exc)
        return None, [], [], []
    router.presets = None

    def preload() -> None:
        try:
            local.load()
        except Exception as exc:  # the router reports a failing tier per turn
            log.warning("local language model did not load: %s", exc)

    loader = threading.Thread(target=preload, name="sori-llm-load", daemon=True)
    loader.start()

    # Freed while the interpreter runs; Daemon.close bounds the wait with its deadline.
    closers = [local.close, *([edge.aclose] if edge is not None else [])]
    return router, closers, [local.stop], [loader]


def _warm_later(cache: ReplyCache, presets: Any, limit: int) -> threading.Thread:
    """Synthesize the presets' replies on a background thread; turns need not wait."""

    def warm() -> None:
        try:
            added = cache.warm(preset_replies(presets, limit // 2))
            log.info("reply cache warmed: %d preset replies", added)
        except Exception as exc:  # a cold cache is slower, not broken
            log.warning("warming the reply cache failed: %s", exc)

    thread = threading.Thread(target=warm, name="sori-warm", daemon=True)
    thread.start()
    return thread


def run(args: argparse.Namespace) -> int:
    stop_quietly_until_serving()
    config, home = load_home(args)  # a bad config raises ConfigError naming the key
    setup_logging(config.daemon.log_format, args.verbose)
    bind, token = api_access(args, config)  # before any model loads: a bad bind exits 2 now
    if args.input not in ("mic", "none") and not Path(args.input).is_file():
        raise AudioError(f"--input {args.input}: no such file (or 'mic', or 'none')")
    try:
        return asyncio.run(serve(args, config, home, bind, token))
    finally:
        ignore_stop_signals()


def api_access(args: argparse.Namespace, config: Config) -> tuple[str, str | None]:
    """The HTTP bind ("" for none) and the API token; refuses a LAN bind without a token."""
    bind = config.http.bind if args.http is None else ("" if args.http == "off" else args.http)
    if not bind:
        return "", None
    host, port = split_bind(bind)
    token = ensure_token(config.http) if is_loopback(host) else load_token(config.http)
    build_access(config.http, host, port, token)
    return bind, token


async def serve(
    args: argparse.Namespace,
    config: Config,
    home: Home,
    bind: str | None = None,
    token: str | None = None,
) -> int:
    """Run until SIGTERM/SIGINT (or the input file's end), then stop within
    `daemon.shutdown_s`, whatever is still running (`sori.commands.shutdown`)."""
    if bind is None:
        bind, token = api_access(args, config)
    loop = asyncio.get_running_loop()
    workers = Workers()
    loop.set_default_executor(workers)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    stopping = asyncio.create_task(stop.wait())
    building = asyncio.ensure_future(asyncio.to_thread(build_daemon, args, config, home))
    daemon: Daemon | None = None
    api = source = listening = error = None
    try:
        if not await _first(building, stopping):
            return 0
        daemon = building.result()
        loop.add_signal_handler(signal.SIGHUP, lambda: daemon.spawn(daemon.reload()))
        api = HttpApi(daemon, bind, config.http, token) if bind else None
        if api is not None:
            await api.start()
        if args.input != "none":
            hearing = asyncio.ensure_future(asyncio.to_thread(_hearing, args.input, config, daemon))
            if not await _first(hearing, stopping):
                return 0
            source, events = hearing.result()
            listening = asyncio.create_task(daemon.listen(events))
        log.info("ready", extra={"http": api.url if api else "", "input": args.input})
        waits = [stopping] if listening is None else [stopping, listening]
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        if listening is not None and listening.done() and listening.exception():
            raise listening.exception()
        log.info("stopping", extra={"turns": daemon.turns_done})
        return 0
    except BaseException as exc:
        error = exc
        raise
    finally:
        stopping.cancel()
        await _shut_down(
            loop.time() + config.daemon.shutdown_s, workers, building, daemon, api, source,
            listening, error,
        )  # fmt: skip


async def _first(work: asyncio.Future, stopping: asyncio.Task) -> bool:
    """Wait for `work` unless a stop comes first; False when it did."""
    await asyncio.wait([work, stopping], return_when=asyncio.FIRST_COMPLETED)
    return work.done()


async def _shut_down(
    deadline: float, workers: Workers, building: asyncio.Future, daemon: Daemon | None,
    api: HttpApi | None, source: Any, listening: asyncio.Task | None, error: BaseException | None,
) -> None:  # fmt: skip
    """Everything stopped by `deadline` (loop time); what is still running then, native work
    included, is left to the kernel: the process exits at once (`exit_now`) with the code
    the error (if any) would have given."""
    loop = asyncio.get_running_loop()

    def left() -> float:
        return max(0.0, deadline - FINAL_MARGIN_S - loop.time())

    for sig in (signal.SIGTERM, signal.SIGINT):  # a second signal changes nothing
        loop.add_signal_handler(sig, lambda: None)
    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.remove_signal_handler(signal.SIGHUP)
    if daemon is None and not building.done():  # a stop while loading: wait for the build
        await asyncio.wait([building], timeout=left())
        if building.done() and not building.cancelled() and building.exception() is None:
            daemon = building.result()
    unfinished: list[str] = []
    if source is not None:
        source.close()
    if listening is not None and not listening.done():
        listening.cancel()
        _, pending = await asyncio.wait([listening], timeout=left())
        unfinished += ["hearing"] if pending else []
    if api is not None:
        _, pending = await asyncio.wait([asyncio.ensure_future(api.close())], timeout=left())
        unfinished += ["http api"] if pending else []
    if daemon is not None:
        unfinished += await daemon.close(left())
    elif not building.done():
        unfinished.append("startup")
    workers.drop_queued()
    while workers.busy and left() > 0:
        await asyncio.sleep(0.02)
    unfinished += [f"{workers.busy} worker jobs"] if workers.busy else []
    while leftover_threads() and left() > 0:
        await asyncio.sleep(0.02)
    unfinished += leftover_threads()
    # asyncio.run would cancel what is left and wait for it without limit
    others = asyncio.all_tasks() - {asyncio.current_task(), building}
    for task in others:
        task.cancel()
    if others:
        _, pending = await asyncio.wait(others, timeout=left())
        unfinished += [f"task {t.get_name()}" for t in pending]
    if unfinished:
        code = 0
        if error is not None:
            code = _error_code(error)
            log.error("sori run failed: %s", error)
        exit_now(code, ", ".join(unfinished))


def _error_code(exc: BaseException) -> int:
    """The exit code cli.main gives an error (SoriError 2, interrupted 130, others 1)."""
    if isinstance(exc, SoriError):
        return 2
    if isinstance(exc, KeyboardInterrupt):
        return 130
    return 1


def _hearing(input_name: str, config: Config, daemon: Daemon):  # noqa: ANN202
    """The audio source and the async stream of hearing events (`sori.pipeline`)."""
    from sori.audio.sources import FileSource, MicSource
    from sori.commands.hearing import build_hearing, build_recognizer, front_end
    from sori.pipeline import hear

    understanding = daemon.understanding
    if input_name != "mic":  # a broken file is refused before the recognizer loads
        source = FileSource(input_name, config.audio.frame_ms)
    phrases = understanding.phrases(config.stt.phrases.max_phrases)
    recognizer = build_recognizer(config.stt, phrases, config.audio, config.vad.pre_roll_ms)
    if input_name == "mic":  # opened last: audio buffered while models load would be stale
        source = MicSource(config.audio.device, config.audio.frame_ms).open()
    hearing = build_hearing(config, recognizer, understanding, daemon.clock, daemon.clock.now_ns())
    return source, hear(front_end(config, source.frames()), hearing)
