"""A mosquitto of a script's own on a free loopback port, for the benchmarks and soaks
that need a real broker (`scripts/exit_soak.py`, `scripts/bench_arbitration.py`); the
tests have theirs in `tests/broker.py`.

    from loopback_broker import start_mosquitto  # scripts/ is on the path of a script

Nothing beyond 127.0.0.1 is opened, and persistence is off.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

INSTALL_HINT = "mosquitto is not installed: run 'bash scripts/install.sh --test'"


def mosquitto_exe() -> str | None:
    """The mosquitto binary (the Debian package puts it in /usr/sbin), or None."""
    exe = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    return exe if Path(exe).exists() else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_mosquitto(folder: Path, nodelay: bool = False) -> tuple[subprocess.Popen, str]:
    """A running mosquitto (its config and log in `folder`) and its URL; `nodelay`: with
    `set_tcp_nodelay true`. Exits with a message when it is not installed or does not
    start within 10 s. Terminate the process when done."""
    exe = mosquitto_exe()
    if exe is None:
        raise SystemExit(INSTALL_HINT)
    port = free_port()
    lines = [f"listener {port} 127.0.0.1", "allow_anonymous true", "persistence false"]
    conf = folder / f"mosquitto-{port}.conf"
    conf.write_text("\n".join(lines + (["set_tcp_nodelay true"] if nodelay else [])) + "\n")
    # Its log goes to a file: a pipe nobody reads fills, and then the broker stops.
    with open(folder / f"mosquitto-{port}.log", "wb") as log:
        proc = subprocess.Popen([exe, "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=log)
    end = time.monotonic() + 10
    while time.monotonic() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc, f"mqtt://127.0.0.1:{port}"
        time.sleep(0.05)
    proc.terminate()
    raise SystemExit(f"mosquitto did not start on 127.0.0.1:{port}: see {folder}")
