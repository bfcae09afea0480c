"""`sori run`: the voice assistant as a service (see `sori.serving.daemon`)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sori.commands.console import FLUSH_NS, SETTLE_NS, Console
from sori.commands.options import add_home_options, load_home
from sori.commands.shutdown import (
    FINAL_MARGIN_S,
    Workers,
    exit_now,
    ignore_stop_signals,
    leftover_threads,
    stop_quietly_until_serving,
)
from sori.core.config import Config
from sori.core.errors import AudioError, SoriError
from sori.core.home import Home
from sori.core.logs import setup_logging
from sori.serving.api_access import build_access, ensure_token, is_loopback, load_token, split_bind

if TYPE_CHECKING:  # the daemon needs the extras; imported where it is built
    from sori.serving.daemon import Daemon
    from sori.serving.http_api import HttpApi

log = logging.getLogger("sori.run")


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "run",
        help="run the assistant: hear, understand, act and speak until stopped",
        description="Run the voice assistant: microphone (or a file) through hearing, "
        "understanding, actions and speech, plus a local HTTP API (health, metrics, say, "
        "events). With a file as input it exits once the file's last turn has finished. "
        "SIGTERM stops it gracefully; SIGHUP reloads the packs and the home. "
        "Stdout gets one plain line per turn (what was heard, what was done or answered, "
        "how fast) and a 'no turn:' line saying why when speech made none; logs go to "
        "stderr.",
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
    parser.add_argument(
        "--no-wake", action="store_true",
        help="hear every utterance as a command, without the wake phrase ([wake] enabled)",
    )  # fmt: skip
    parser.add_argument(
        "--log-format", choices=("json", "text"),
        help="stderr logs as JSON lines or plain text (default daemon.log_format: json)",
    )  # fmt: skip
    return parser


def run(args: argparse.Namespace) -> int:
    stop_quietly_until_serving()
    config, home = load_home(args)  # a bad config raises ConfigError naming the key
    setup_logging(getattr(args, "log_format", None) or config.daemon.log_format, args.verbose)
    bind, token = api_access(args, config)  # before any model loads: a bad bind exits 2 now
    if args.input not in ("mic", "none") and not Path(args.input).is_file():
        raise AudioError(f"--input {args.input}: no such file (or 'mic', or 'none')")
    if config.wyoming.enabled:
        from sori.serving.wyoming_server import check_wyoming

        check_wyoming(config)
    if args.input != "none":
        from sori.assemble.hearing import build_array

        build_array(config)  # a bad [audio.array] is refused before any model loads
    try:
        return asyncio.run(serve(args, config, home, bind, token))
    finally:
        ignore_stop_signals()


def api_access(args: argparse.Namespace, config: Config) -> tuple[str, str | None]:
    """The HTTP bind ("" for none) and the API token; refuses a LAN bind without a token."""
    bind = config.http.bind if args.http is None else ("" if args.http == "off" else args.http)
    if not bind:
        return "", None
    said = None if args.http is None else f"--http {args.http}"  # messages quote the flag
    host, port = split_bind(bind, said)
    token = ensure_token(config.http) if is_loopback(host) else load_token(config.http)
    build_access(config.http, host, port, token, said)
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
    from sori.assemble.daemon import build_daemon
    from sori.serving.http_api import HttpApi

    if bind is None:
        bind, token = api_access(args, config)
    loop = asyncio.get_running_loop()
    workers = Workers()
    loop.set_default_executor(workers)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    stopping = asyncio.create_task(stop.wait())
    if args.input != "none" or config.wyoming.enabled:
        from sori.assemble.hearing import load_model_early

        load_model_early(config.stt)  # beside the daemon's build
    building = asyncio.ensure_future(
        asyncio.to_thread(
            build_daemon,
            config,
            home,
            args.output,
            lambda: load_home(args),
            input_name=args.input,
            no_wake=getattr(args, "no_wake", False),
        )  # fmt: skip
    )
    log.info("building")  # packs, voice and handlers load; a stop from now is graceful
    daemon: Daemon | None = None
    api = source = listening = error = None
    try:
        if not await _first(building, stopping):
            return 0
        daemon = building.result()
        console = Console(list(config.wake.phrases), daemon.conversation.gated)
        daemon.listeners.append(console.observe)
        daemon.start()
        loop.add_signal_handler(signal.SIGHUP, lambda: daemon.spawn(daemon.reload()))
        api = HttpApi(daemon, bind, config.http, token) if bind else None
        if api is not None:
            await api.start()
        recognizer = None
        if args.input != "none" or config.wyoming.enabled:  # loaded once, for both
            from sori.assemble.hearing import hearing_recognizer  # the recognizer's libraries
            from sori.hearing.stt.base import release

            loading = asyncio.ensure_future(
                asyncio.to_thread(hearing_recognizer, config, daemon.understanding, warm_later=True)
            )
            if not await _first(loading, stopping):
                return 0
            recognizer = loading.result()
            daemon.stoppers.append(lambda: release(recognizer))
        link = None
        if config.wyoming.enabled:
            from sori.serving.wyoming_server import announce_name, serve_beside
            from sori.serving.wyoming_server.satellite import attach_satellite

            if config.wyoming.satellite and args.input != "none":
                name = announce_name(config, zeroconf=True)
                link = attach_satellite(config, daemon, name)
            voice = daemon.player.cache.voice
            wyoming = asyncio.ensure_future(
                serve_beside(
                    config,
                    home,
                    daemon.understanding,
                    voice,
                    recognizer,
                    link,
                    daemon.turns.answerer,
                )  # fmt: skip
            )
            if not await _first(wyoming, stopping):
                return 0
            daemon.closers.append(wyoming.result().close)
        if args.input != "none":
            from sori.assemble.hearing import build_array, open_hearing

            array = build_array(config)
            if array is not None:
                daemon.microphones = array.microphones
            hearing = asyncio.ensure_future(
                asyncio.to_thread(
                    open_hearing,
                    args.input,
                    config,
                    daemon.understanding,
                    daemon.clock,
                    daemon.conversation,
                    recognizer,
                    link.tap if link is not None else None,
                    array,
                )  # fmt: skip
            )
            if not await _first(hearing, stopping):
                return 0
            source, events = hearing.result()
            listening = asyncio.create_task(daemon.listen(events))
            if args.input == "mic":
                explaining = asyncio.create_task(_explain_every_minute(console, daemon))
                daemon.closers.append(lambda: _cancelled(explaining))
        log.info("ready", extra={"http": api.url if api else "", "input": args.input})
        waits = [stopping] if listening is None else [stopping, listening]
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        if listening is not None and listening.done() and listening.exception():
            raise listening.exception()
        console.flush()  # the input ended (or a stop): what speech made no turn, and why
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


async def _explain_every_minute(console: Console, daemon: Daemon) -> None:
    """With the microphone, utterances that made no turn are explained once a minute."""
    while True:
        await asyncio.sleep(FLUSH_NS / 1e9)
        console.flush(daemon.clock.now_ns() - SETTLE_NS)


async def _cancelled(task: asyncio.Task) -> None:
    task.cancel()


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
            daemon = building.result()  # closed below, never started: no timer rings now
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
