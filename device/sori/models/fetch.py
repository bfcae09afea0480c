"""Download a catalog model with resume (HTTP Range), check its sha256 and install it.

A download goes to <models>/.partial/NAME.download; an interrupted one resumes from where it
stopped on the next fetch. Only a download whose checksum matches is unpacked, and the
install is one rename (`store.install`), so a failure at any step leaves no model under its
name.
"""

from __future__ import annotations

import errno
import http.client
import logging
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from sori.errors import ModelError
from sori.models.catalog import CatalogEntry
from sori.models.store import PARTIAL, install, sha256_of

log = logging.getLogger(__name__)

TIMEOUT_S = 30.0
"""Socket timeout of one read, in seconds: a stalled server fails instead of hanging."""
BLOCK = 1 << 16
"""Bytes read and written at a time."""
_DISK_FULL = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}

Progress = Callable[[int, int | None], None]
"""Called with (bytes so far, total bytes or None)."""


def fetch(
    entry: CatalogEntry,
    root: Path,
    *,
    allow_unverified: bool = False,
    progress: Progress | None = None,
) -> tuple[Path, str]:
    """Download, verify and install `entry` under `root`; the installed path and the
    download's sha256. Raises ModelError with what to do on any failure."""
    if not entry.sha256 and not allow_unverified:
        raise ModelError(
            f"{entry.name} has no verified sha256 in the catalog; fetch it with "
            "--allow-unverified to accept the download as it comes (its checksum is printed)"
        )
    partial = root / PARTIAL
    download = partial / f"{entry.name}.download"
    try:
        partial.mkdir(parents=True, exist_ok=True)
        _download(entry, download, progress)
        digest = sha256_of(download)
        if entry.sha256 and digest != entry.sha256:
            download.unlink()
            raise ModelError(
                f"{entry.name}: checksum mismatch (got {digest}, catalog says {entry.sha256}); "
                "the download was deleted. Fetch again; if it repeats, the upstream file "
                "changed: check the catalog entry"
            )
        path = install(root, entry, download, digest)
        download.unlink()
        return path, digest
    except OSError as exc:
        if exc.errno in _DISK_FULL:
            raise ModelError(
                f"{entry.name}: disk full writing to {root} ({exc.strerror}); about "
                f"{entry.size_mb:g} MB is needed (twice that for an archive while it unpacks). "
                "Free space or fetch into another folder with --dir; the partial download "
                "stays and resumes"
            ) from None
        raise ModelError(f"{entry.name}: cannot write to {root}: {exc}") from None


def _download(entry: CatalogEntry, target: Path, progress: Progress | None) -> None:
    errors = []
    for url in entry.urls:
        try:
            _download_from(url, target, progress)
            return
        except ModelError as exc:
            errors.append(str(exc))
    raise ModelError(f"{entry.name}: download failed: " + "; ".join(errors))


def _download_from(url: str, target: Path, progress: Progress | None) -> None:
    have = target.stat().st_size if target.exists() else 0
    request = urllib.request.Request(url, headers={"User-Agent": "sori-models"})
    if have:
        request.add_header("Range", f"bytes={have}-")
    try:
        response = urllib.request.urlopen(request, timeout=TIMEOUT_S)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:  # asked past the end: the partial is already whole
            return
        raise ModelError(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ModelError(f"{url}: cannot connect ({reason}); check the network") from None
    with response:
        resumed = response.status == 206
        if have and not resumed:
            log.info("%s: server ignored the range; downloading from the start", url)
            have = 0
        length = response.headers.get("Content-Length")
        total = have + int(length) if length and length.isdigit() else None
        done = have
        with target.open("ab" if resumed else "wb") as out:
            try:
                while block := response.read(BLOCK):
                    out.write(block)
                    done += len(block)
                    if progress:
                        progress(done, total)
            except (OSError, http.client.HTTPException, ValueError) as exc:
                if isinstance(exc, OSError) and exc.errno in _DISK_FULL:
                    raise
                raise ModelError(
                    f"{url}: interrupted after {done} bytes ({exc or type(exc).__name__}); "
                    "run the same fetch again to resume"
                ) from None
    if total is not None and done < total:
        raise ModelError(
            f"{url}: the server closed the connection after {done} of {total} bytes; "
            "run the same fetch again to resume"
        )


def stderr_progress(name: str) -> Progress | None:
    """A one-line progress display on stderr when it is a terminal; None otherwise."""
    if not sys.stderr.isatty():
        return None
    last = [0.0]

    def show(done: int, total: int | None) -> None:
        now = time.monotonic()
        if now - last[0] < 0.2 and done != total:
            return
        last[0] = now
        if total:
            bar = "#" * int(30 * done / total)
            text = f"{name} [{bar:<30}] {done / 1e6:.1f}/{total / 1e6:.1f} MB"
        else:
            text = f"{name} {done / 1e6:.1f} MB"
        print("\r" + text, end="", file=sys.stderr, flush=True)

    return show
