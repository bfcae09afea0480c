"""A real Home Assistant on loopback, for the end-to-end tests in tests/real_ha/ and by hand.

    python3 scripts/real_ha.py install             # the cached venv (minutes, once)
    python3 scripts/real_ha.py start DIR [--port N]   # prints {url, token, pid, ...}
    python3 scripts/real_ha.py stop DIR

`install` puts `homeassistant==2024.3.3` (the last release for Python 3.11) with
`josepy<2` (its acme dependency breaks on josepy 2) into a venv outside the repository,
`$SORI_REAL_HA_DIR/venv` (default `~/.cache/sori-real-ha/venv`), together with the
requirements of every integration the tests load (read from their manifests and pinned by
HA's own package_constraints.txt), so HA installs nothing when it starts.

`start` writes a minimal configuration.yaml into DIR (no `default_config:`, so no zeroconf,
ssdp, dhcp, bluetooth or usb discovery: HA announces nothing; http on 127.0.0.1 only),
starts `hass --skip-pip` on a free loopback port, waits for it, onboards it through REST
(the owner, analytics off, the integration step; not core config, which sets up internet
services), makes a long-lived access token, checks that HA listens on loopback only and
holds no UDP socket, and writes DIR/real_ha.json (`url`, `token`, `pid`, `log`); it
prints the same JSON. `stop` ends that PID (SIGTERM,
then SIGKILL after 30 s). The JSON's `token` is a secret of this throwaway instance only.

Imported, `RealHa.start(folder)` and `.stop()` do the same (the pytest fixture's way).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HA_VERSION = "2024.3.3"
PINS = [f"homeassistant=={HA_VERSION}", "josepy<2"]
PYTHON = os.environ.get("SORI_REAL_HA_PYTHON") or shutil.which("python3.11") or sys.executable
"""The venv's Python: 2024.3.3 wants 3.11 or 3.12."""
CACHE = Path(os.environ.get("SORI_REAL_HA_DIR") or Path.home() / ".cache" / "sori-real-ha")
VENV = CACHE / "venv"
MARKER = VENV / "sori-real-ha.json"
"""Written last by `install`: what the venv holds (a changed list installs again)."""

LOADED = (
    # What HA 2024.3 always sets up (bootstrap.py: CORE_INTEGRATIONS, DEFAULT_INTEGRATIONS,
    # LOGGING_INTEGRATIONS); frontend is "critical": without it HA starts in recovery mode.
    "homeassistant", "persistent_notification", "application_credentials", "backup",
    "frontend", "hardware", "logger", "network", "system_health", "automation", "person",
    "scene", "script", "tag", "zone", "counter", "input_boolean", "input_button",
    "input_datetime", "input_number", "input_select", "input_text", "schedule", "timer",
    "system_log",
    # What configuration.yaml below names, and what the tests add through config flows.
    "api", "websocket_api", "http", "config", "onboarding", "template", "light", "switch",
    "intent", "intent_script", "conversation", "assist_pipeline", "stt", "tts", "wake_word",
    "media_source", "wyoming", "mqtt",
)  # fmt: skip
IMPORTED = ("zeroconf",)
"""Imported, never set up: the wyoming config flow imports zeroconf's module for a type."""
DISCOVERY = ("zeroconf", "ssdp", "dhcp", "bluetooth", "usb", "homekit", "cloud", "upnp")
"""Integrations that announce or listen on the network; none may be loaded."""

CONFIGURATION = """\
# Written by scripts/real_ha.py: a minimal Home Assistant on loopback, for Sori's tests.
# No default_config: nothing announces itself on the network (no zeroconf, ssdp, dhcp).
homeassistant:
  name: Sori test home
  language: ko
  country: KR
  currency: KRW
  time_zone: Asia/Seoul
  unit_system: metric
  latitude: 37.5665
  longitude: 126.978
  elevation: 38
  internal_url: "{url}"

http:
  server_host: 127.0.0.1
  server_port: {port}

api:
websocket_api:
config:
onboarding:
intent:
conversation:
  intents:
    SoriTestNightMode:
      - "야간 모드 켜 줘"
      - "야간 모드 켜줘"
intent_script:
  SoriTestNightMode:
    action:
      - service: input_boolean.turn_on
        target:
          entity_id: input_boolean.night_mode
    speech:
      text: "야간 모드를 켰어요"
  SoriTestHeard:  # custom_sentences/ko/sori_tests.yaml: "그 는 {{heard}}"
    action:
      - service: input_text.set_value
        target:
          entity_id: input_text.heard
        data:
          value: "{{{{ heard }}}}"
    speech:
      text: "들었어요"
assist_pipeline:
stt:
tts:
wake_word:
media_source:

input_text:
  heard:
    name: 들은 말
    max: 255

input_boolean:
  living_light_power:
    name: 거실 조명 전원
  relay_power:
    name: 릴레이 전원
  night_mode:
    name: 야간 모드

light:
  - platform: template
    lights:
      living_light:
        unique_id: sori_test_living_light
        friendly_name: 거실 조명
        value_template: "{{{{ is_state('input_boolean.living_light_power', 'on') }}}}"
        turn_on:
          service: input_boolean.turn_on
          target:
            entity_id: input_boolean.living_light_power
        turn_off:
          service: input_boolean.turn_off
          target:
            entity_id: input_boolean.living_light_power

switch:
  - platform: template
    switches:
      secret_relay:
        unique_id: sori_test_secret_relay
        friendly_name: 비밀 릴레이
        value_template: "{{{{ is_state('input_boolean.relay_power', 'on') }}}}"
        turn_on:
          service: input_boolean.turn_on
          target:
            entity_id: input_boolean.relay_power
        turn_off:
          service: input_boolean.turn_off
          target:
            entity_id: input_boolean.relay_power
"""

CUSTOM_SENTENCES = """\
# Written by scripts/real_ha.py: a sentence HA's own agent knows and Sori's presets do not
# (a satellite test hands it over): what follows "그 는" goes to input_text.heard.
language: ko
intents:
  SoriTestHeard:
    data:
      - sentences:
          - "그 는 {heard}"
lists:
  heard:
    wildcard: true
"""

OWNER = {"name": "Sori Test", "username": "sori", "password": "sori-test-password-1"}


def log(message: str) -> None:
    print(f"real_ha: {message}", file=sys.stderr, flush=True)


# --- install ----------------------------------------------------------------------------


def venv_python() -> Path:
    return VENV / "bin" / "python"


def installed() -> bool:
    """The venv holds PINS and every requirement of LOADED (as the marker says)."""
    try:
        marker = json.loads(MARKER.read_text())
        return marker == {"pins": PINS, "requirements": integration_requirements()}
    except (OSError, ValueError, SystemExit):
        return False


def install() -> Path:
    """The venv's python, installing what is missing first (cached: seconds when done)."""
    if installed():
        return venv_python()
    CACHE.mkdir(parents=True, exist_ok=True)
    if not venv_python().exists():
        log(f"creating {VENV} ({PYTHON})")
        subprocess.run([PYTHON, "-m", "venv", str(VENV)], check=True)
    pip = [str(venv_python()), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    log(f"installing {' '.join(PINS)} (a few minutes, once)")
    subprocess.run([*pip, *PINS], check=True)
    requirements = integration_requirements()
    constraints = package_dir() / "package_constraints.txt"
    log(f"installing the loaded integrations' requirements: {' '.join(requirements)}")
    subprocess.run([*pip, "-c", str(constraints), *PINS, *requirements], check=True)
    MARKER.write_text(json.dumps({"pins": PINS, "requirements": requirements}))
    return venv_python()


def package_dir() -> Path:
    found = sorted(VENV.glob("lib/python3*/site-packages/homeassistant"))
    if not found:
        raise SystemExit(f"real_ha: no homeassistant package under {VENV}")
    return found[0]


def integration_requirements() -> list[str]:
    """The pip requirements of LOADED and every integration they depend on, from the
    installed manifests (what HA would otherwise pip-install while it starts)."""
    loaded = closure(("dependencies",))
    bad = loaded & set(DISCOVERY)
    if bad:
        raise SystemExit(f"real_ha: {sorted(bad)} would be loaded; they use the network")
    # Imported, though not set up: an integration's code imports its after_dependencies
    # (analytics imports energy, which imports recorder: sqlalchemy).
    requirements: set[str] = set()
    for domain in closure(("dependencies", "after_dependencies")) | set(IMPORTED):
        requirements.update(manifest(domain).get("requirements", []))
    return sorted(requirements)


def manifest(domain: str) -> dict[str, Any]:
    return json.loads((package_dir() / "components" / domain / "manifest.json").read_text())


def closure(keys: tuple[str, ...]) -> set[str]:
    """LOADED and every integration reached from it through the manifests' `keys`."""
    seen: set[str] = set()
    wanted = list(LOADED)
    while wanted:
        domain = wanted.pop()
        if domain not in seen:
            seen.add(domain)
            for key in keys:
                wanted.extend(manifest(domain).get(key, []))
    return seen


# --- start and stop ---------------------------------------------------------------------


@dataclass
class RealHa:
    """A running Home Assistant: its base URL, an owner's long-lived token, its PID."""

    url: str
    token: str
    pid: int
    folder: str
    log: str

    @classmethod
    def start(cls, folder: Path, port: int = 0, timeout_s: float = 300) -> RealHa:
        python = install()
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        port = port or free_port()
        url = f"http://127.0.0.1:{port}"
        (folder / "configuration.yaml").write_text(
            CONFIGURATION.format(url=url, port=port), encoding="utf-8"
        )
        sentences = folder / "custom_sentences" / "ko" / "sori_tests.yaml"
        sentences.parent.mkdir(parents=True, exist_ok=True)
        sentences.write_text(CUSTOM_SENTENCES, encoding="utf-8")
        log_path = folder / "hass.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("SORI_")}
        with open(log_path, "ab") as out:
            proc = subprocess.Popen(
                [str(python), "-m", "homeassistant", "--config", str(folder), "--skip-pip"],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,  # SIGINT of the test run reaches it only by stop()
            )
        ha = cls(url, "", proc.pid, str(folder), str(log_path))
        try:
            ha._wait_until_up(proc, timeout_s)
            ha.token = ha._onboard()
            ha._wait_until_running(timeout_s)
            ha.check_loopback_only()
        except BaseException:
            ha.stop()
            raise
        (folder / "real_ha.json").write_text(json.dumps(asdict(ha)))
        return ha

    def _wait_until_up(self, proc: subprocess.Popen, timeout_s: float) -> None:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"hass exited {proc.returncode}; see {self.log}:\n{tail(self.log)}"
                )
            failed = failures(self.log)
            if failed:
                raise RuntimeError(f"Home Assistant: {failed}; see {self.log}")
            with contextlib.suppress(OSError, ValueError):
                status, _ = http(f"{self.url}/api/onboarding", timeout_s=2)
                if status == 200:
                    return
            time.sleep(0.5)
        raise TimeoutError(f"Home Assistant did not answer within {timeout_s} s; see {self.log}")

    def _onboard(self) -> str:
        """The owner, analytics (off) and integration steps, and a long-lived token. Not
        the core-config step: finishing it sets up google_translate, met and
        radio_browser, which reach the internet."""
        client_id = f"{self.url}/"
        _, created = http(
            f"{self.url}/api/onboarding/users",
            {"client_id": client_id, "language": "ko", **OWNER},
        )
        _, tokens = http(
            f"{self.url}/auth/token",
            form={
                "grant_type": "authorization_code",
                "code": created["auth_code"],
                "client_id": client_id,
            },
        )
        access = tokens["access_token"]
        http(f"{self.url}/api/onboarding/analytics", {}, token=access)
        http(
            f"{self.url}/api/onboarding/integration",
            {"client_id": client_id, "redirect_uri": f"{self.url}/?auth_callback=1"},
            token=access,
        )
        result = websocket_call(
            self.url,
            access,
            {"type": "auth/long_lived_access_token", "client_name": "sori-tests", "lifespan": 365},
        )
        return result

    def _wait_until_running(self, timeout_s: float) -> None:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            _, config = http(f"{self.url}/api/config", token=self.token)
            if config.get("state") == "RUNNING":
                return
            time.sleep(0.5)
        raise TimeoutError(f"Home Assistant did not reach RUNNING; see {self.log}")

    def components(self) -> set[str]:
        return set(http(f"{self.url}/api/config", token=self.token)[1]["components"])

    def check_loopback_only(self) -> None:
        """No discovery integration is loaded; every socket HA listens on is on
        127.0.0.0/8; it holds no UDP socket at all (mDNS and SSDP are UDP)."""
        loaded = {c.split(".")[0] for c in self.components()} & set(DISCOVERY)
        if loaded:
            raise RuntimeError(f"Home Assistant loaded {sorted(loaded)}: it would announce itself")
        sockets = process_sockets(self.pid)
        udp = [s for s in sockets if s[0].startswith("udp")]
        if udp:
            raise RuntimeError(f"Home Assistant holds UDP sockets: {udp}")
        listening = [s for s in sockets if s[0].startswith("tcp") and s[3] == "0A"]
        if not listening or any(not s[1].startswith("127.") for s in listening):
            raise RuntimeError(f"Home Assistant listens beyond loopback: {listening}")

    def stop(self) -> None:
        stop_pid(self.pid)


def process_sockets(pid: int) -> list[tuple[str, str, int, str]]:
    """(proto, local address, local port, tcp state hex) of each socket `pid` holds."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    found = []
    for proto in ("tcp", "tcp6", "udp", "udp6"):
        lines = Path(f"/proc/{pid}/net/{proto}").read_text().splitlines()[1:]
        for line in lines:
            fields = line.split()
            if fields[9] in inodes:
                address, port = fields[1].split(":")
                found.append((proto, hex_address(address), int(port, 16), fields[3]))
    return found


def hex_address(value: str) -> str:
    raw = bytes.fromhex(value)
    if len(raw) == 4:
        return socket.inet_ntop(socket.AF_INET, raw[::-1])
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
    return socket.inet_ntop(socket.AF_INET6, words)


def stop_pid(pid: int, grace_s: float = 30) -> None:
    """SIGTERM `pid` (HA's own clean stop), SIGKILL after `grace_s`."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    end = time.monotonic() + grace_s
    while time.monotonic() < end:
        with contextlib.suppress(ChildProcessError):
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                return
        if not Path(f"/proc/{pid}").exists():
            return
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


# --- HTTP and websocket, standard library only (this file runs outside any venv) ------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(
    url: str,
    body: Any = None,
    *,
    token: str = "",
    form: dict[str, str] | None = None,
    method: str = "",
    timeout_s: float = 30,
) -> tuple[int, Any]:
    """(status, JSON answer or text) of one request; raises on an error status."""
    headers = {}
    data = None
    if form is not None:
        data = urllib.parse.urlencode(form).encode()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    elif body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data, headers, method=method or None)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as reply:
            raw = reply.read()
            status = reply.status
    except urllib.error.HTTPError as exc:
        raise RuntimeError(f"{url}: {exc.code} {exc.read()[:300]!r}") from None
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode("utf-8", "replace")


def websocket_call(url: str, token: str, *commands: dict[str, Any]) -> Any:
    """The results of `commands` sent in order over one websocket (the last one's when one
    is sent, else a list); a failed command raises."""
    ws = WebSocket.authenticated(url, token)
    try:
        results = []
        for i, command in enumerate(commands, start=1):
            ws.send({"id": i, **command})
            while True:
                reply = ws.receive()
                if reply.get("id") == i and reply.get("type") == "result":
                    break
            if not reply["success"]:
                raise RuntimeError(f"{command['type']}: {reply['error']}")
            results.append(reply.get("result"))
        return results[0] if len(results) == 1 else results
    finally:
        ws.close()


class WebSocket:
    """Just enough of RFC 6455 for HA's API: text frames, client-masked, no extensions."""

    @classmethod
    def authenticated(cls, url: str, token: str) -> WebSocket:
        """A websocket to `url`'s /api/websocket, past auth_ok."""
        ws = cls(url.replace("http://", "") + "/api/websocket")
        hello = ws.receive()
        assert hello["type"] == "auth_required", hello
        ws.send({"type": "auth", "access_token": token})
        answer = ws.receive()
        if answer["type"] != "auth_ok":
            ws.close()
            raise RuntimeError(f"websocket auth: {answer}")
        return ws

    def __init__(self, host_path: str) -> None:
        import base64

        host, _, path = host_path.partition("/")
        name, port = host.rsplit(":", 1)
        self.sock = socket.create_connection((name, int(port)), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (
                f"GET /{path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                "Sec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise ConnectionError("websocket handshake: connection closed")
            head += chunk
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"websocket handshake: {head[:200]!r}")

    def send(self, message: dict[str, Any]) -> None:
        self._frame(0x1, json.dumps(message).encode())

    def send_binary(self, payload: bytes) -> None:
        """A binary frame (an assist pipeline's audio: its handler id byte, then PCM)."""
        self._frame(0x2, payload)

    def _frame(self, opcode: int, payload: bytes) -> None:
        mask = os.urandom(4)
        n = len(payload)
        if n < 126:
            header = bytes([0x80 | opcode, 0x80 | n])
        elif n < 65536:
            header = bytes([0x80 | opcode, 0x80 | 126]) + n.to_bytes(2, "big")
        else:
            header = bytes([0x80 | opcode, 0x80 | 127]) + n.to_bytes(8, "big")
        key = int.from_bytes(mask * ((n + 3) // 4), "big") if n else 0
        masked = (int.from_bytes(payload, "big") ^ (key >> (8 * (-n % 4)))).to_bytes(n, "big")
        self.sock.sendall(header + mask + masked)

    def _exact(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("websocket closed")
            data += chunk
        return data

    def receive(self) -> dict[str, Any]:
        message = b""
        while True:
            first, second = self._exact(2)
            n = second & 0x7F
            if n == 126:
                n = int.from_bytes(self._exact(2), "big")
            elif n == 127:
                n = int.from_bytes(self._exact(8), "big")
            payload = self._exact(n)
            opcode = first & 0x0F
            if opcode == 0x8:
                raise ConnectionError("websocket closed by Home Assistant")
            if opcode in (0x9, 0xA):  # ping, pong
                continue
            message += payload
            if first & 0x80:
                return json.loads(message)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


def failures(path: str) -> str:
    """The first line of the log that says HA cannot serve as configured ("" if none)."""
    with contextlib.suppress(OSError):
        for line in Path(path).read_text(errors="replace").splitlines():
            if "Setup failed for" in line or "recovery mode" in line.lower():
                return line.split("] ", 1)[-1]
    return ""


def tail(path: str, lines: int = 40) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("install", help="the cached venv with Home Assistant")
    start = sub.add_parser("start", help="start, onboard, print url/token/pid as JSON")
    start.add_argument("folder", type=Path, help="HA's configuration folder (made fresh)")
    start.add_argument("--port", type=int, default=0, help="default: a free one")
    stop = sub.add_parser("stop", help="stop the HA started in FOLDER")
    stop.add_argument("folder", type=Path)
    args = parser.parse_args(argv)
    if args.command == "install":
        print(install())
    elif args.command == "start":
        print(json.dumps(asdict(RealHa.start(args.folder, args.port))))
    else:
        state = json.loads((args.folder / "real_ha.json").read_text())
        stop_pid(state["pid"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
