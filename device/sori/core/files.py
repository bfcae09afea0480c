"""Replacing a file the user owns: all of it or none of it, with its mode kept.

A config, a home table or a state file is written to a temporary file beside the target,
flushed to disk and renamed over it, so a full disk or a crash leaves the old file whole.
A symlinked target is followed (the link stays a link); an existing file keeps its mode,
and a file holding secrets is made 0600.

A state file Sori cannot use (`read_json` refuses it, or its shape is wrong) is set aside
(`set_aside`: renamed PATH.bad-<time>, one log line) and the defaults are used, so a
damaged file never stops a start.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import time
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

PRIVATE_MODE = 0o600
"""Mode of a new file that holds a secret (a password, an API key, a token)."""

NEW_FILE_MODE = 0o644
"""Mode of a new file that holds nothing secret (before the umask)."""


def replace_file(path: Path | str, text: str, *, private: bool = False) -> Path:
    """Write `text` to `path` atomically and return the file written (the link's target
    when `path` is a symlink). An existing file keeps its mode, narrowed to 0600 when
    `private`; a new one gets 0600 when `private`, else 0644 under the umask."""
    target = Path(path)
    if target.is_symlink():
        target = target.resolve()
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
        if private:
            mode &= PRIVATE_MODE
    except FileNotFoundError:
        if private:
            mode = PRIVATE_MODE
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = NEW_FILE_MODE & ~umask
    temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    temp.unlink(missing_ok=True)  # a crashed run's leftover; never written through
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_MODE)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, mode)  # whatever the umask
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    _sync_folder(target.parent)
    return target


def state_folder() -> Path:
    """Where Sori keeps what it learns and owes across restarts (timers, the echo path):
    systemd's state directory ($STATE_DIRECTORY, /var/lib/sori), else ~/.local/state/sori."""
    state = os.environ.get("STATE_DIRECTORY", "").split(":")[0]
    return Path(state) if state else Path("~/.local/state/sori").expanduser()


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable (best effort: some filesystems refuse)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_json(path: Path, max_bytes: int) -> Any:
    """The JSON document in the state file `path`. Raises ValueError saying what is wrong
    (larger than `max_bytes`, not UTF-8, not JSON, nested too deeply), OSError when it
    cannot be read."""
    with path.open("rb") as f:
        raw = f.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise ValueError(f"larger than {max_bytes} bytes")
    if not raw.strip():
        raise ValueError("empty")
    try:
        return json.loads(raw.decode("utf-8"))
    except RecursionError:  # json recurses per nesting level
        raise ValueError("nested too deeply") from None


def set_aside(path: Path, why: str, instead: str) -> Path | None:
    """Rename the state file `path`, which Sori cannot use because of `why`, to
    PATH.bad-<UTC time> (kept for a person to look at) and log one line saying so and what
    is used `instead`. The new path, or None when it could not be renamed."""
    why = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in why[:300])
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = path.with_name(f"{path.name}.bad-{stamp}")
    count = 1
    while aside.exists():  # two bad files within a second: keep both
        count += 1
        aside = path.with_name(f"{path.name}.bad-{stamp}-{count}")
    try:
        path.rename(aside)
    except OSError as exc:
        log.error("%s: %s; %s (could not set it aside: %s)", path, why, instead, exc)
        return None
    log.error("%s: %s; set aside as %s, %s", path, why, aside.name, instead)
    return aside
