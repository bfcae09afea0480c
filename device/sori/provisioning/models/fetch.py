"""Download a catalog model with resume (HTTP Range), check its sha256 and install it.

A download goes to <models>/.partial/NAME.download; an interrupted one resumes from where it
stopped on the next fetch. Only a download whose checksum matches is unpacked, and the
install is one rename (`store.install`), so a failure at any step leaves no model under its
name.

Every download is bounded by the catalog's size_mb, so a broken or hostile server cannot
hold `sori models fetch` or fill the disk: it may not grow past `max_download_bytes`
(stopped while it downloads), it must keep MIN_RATE_BYTES_S over every RATE_WINDOW_S, and
it must end within a total deadline that counts connecting and the headers too (a server
sending a byte every few seconds passes every per-read timeout).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from sori.core.errors import ModelError
from sori.provisioning.models.catalog import CatalogEntry
from sori.provisioning.models.store import PARTIAL, install, sha256_of

log = logging.getLogger(__name__)

READ_TIMEOUT_S = 30.0
"""Longest wait for the connection or for the next bytes, in seconds."""
MIN_RATE_BYTES_S = 50_000.0
"""Slowest download accepted, in bytes per second averaged over RATE_WINDOW_S (50 kB/s:
a tenth of a slow 4 Mbit/s line); a slower one stops and resumes on the next fetch."""
RATE_WINDOW_S = 60.0
"""Seconds over which the download rate is averaged (a short stall is no failure)."""
SETUP_S = 120.0
"""Seconds of the total deadline for connecting, redirects and a slow start."""
SIZE_MARGIN = 1.5
SIZE_SLACK_BYTES = 1_000_000
"""A download may be at most SIZE_MARGIN times the catalog's size_mb plus this (size_mb
is the upstream's rounded figure)."""
_DISK_FULL = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}

Progress = Callable[[int, int | None], None]
"""Called with (bytes so far, total bytes or None)."""


@dataclass(frozen=True)
class DownloadLimits:
    """How slow and how long one download may be (tests shrink them)."""

    min_rate_bytes_s: float = MIN_RATE_BYTES_S
    """Slowest average rate over `rate_window_s`, in bytes per second."""
    rate_window_s: float = RATE_WINDOW_S
    """Seconds the rate is averaged over."""
    read_timeout_s: float = READ_TIMEOUT_S
    """Longest wait for the connection or the next bytes, in seconds."""
    setup_s: float = SETUP_S
    """Seconds allowed on top of the transfer itself (connecting, redirects)."""

    def deadline_s(self, max_bytes: int) -> float:
        """Seconds one download of at most `max_bytes` may take in all: the setup plus
        all of it at the minimum rate, so a download that keeps the rate ends in time."""
        return self.setup_s + max_bytes / self.min_rate_bytes_s


DEFAULT_LIMITS = DownloadLimits()


def max_download_bytes(entry: CatalogEntry) -> int:
    """The largest download accepted for `entry`, in bytes."""
    return int(entry.size_mb * 1e6 * SIZE_MARGIN) + SIZE_SLACK_BYTES


def fetch(
    entry: CatalogEntry,
    root: Path,
    *,
    allow_unverified: bool = False,
    progress: Progress | None = None,
    limits: DownloadLimits = DEFAULT_LIMITS,
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
        asyncio.run(_download(entry, download, progress, limits))
        digest = sha256_of(download)
        if entry.sha256 and digest != entry.sha256:
            download.unlink()
            raise ModelError(
                f"{entry.name}: checksum mismatch (got {digest}, catalog says {entry.sha256}); "
                "the download was deleted. Fetch again; if it repeats, the upstream file "
                "changed: check the catalog entry"
            )
        try:
            path = install(root, entry, download, digest)
        except ModelError:  # a bomb or a broken archive: fetching it again gives the same
            download.unlink()
            raise
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


async def _download(
    entry: CatalogEntry, target: Path, progress: Progress | None, limits: DownloadLimits
) -> None:
    """Try each URL in turn, each within the total deadline."""
    most = max_download_bytes(entry)
    deadline_s = limits.deadline_s(most)
    timeout = aiohttp.ClientTimeout(
        sock_connect=limits.read_timeout_s, sock_read=limits.read_timeout_s
    )
    errors = []
    # The bytes as served: the checksum is of the file, never of a decoded transfer.
    headers = {"User-Agent": "sori-models", "Accept-Encoding": "identity"}
    async with aiohttp.ClientSession(
        timeout=timeout, trust_env=True, headers=headers, auto_decompress=False
    ) as session:
        for url in entry.urls:
            try:
                async with asyncio.timeout(deadline_s):
                    await _download_from(session, url, target, progress, limits, most)
                return
            except TimeoutError:
                errors.append(
                    f"{url}: not done within {deadline_s:.0f} s (the most a {entry.size_mb:g} MB "
                    f"model may take at {limits.min_rate_bytes_s / 1000:g} kB/s); run the same "
                    "fetch again to resume, on a better network"
                )
            except ModelError as exc:
                errors.append(str(exc))
    raise ModelError(f"{entry.name}: download failed: " + "; ".join(errors))


async def _download_from(
    session: aiohttp.ClientSession,
    url: str,
    target: Path,
    progress: Progress | None,
    limits: DownloadLimits,
    most: int,
) -> None:
    have = target.stat().st_size if target.exists() else 0
    done = have
    try:
        async with session.get(url, headers={"Range": f"bytes={have}-"} if have else {}) as got:
            if got.status == 416 and have:  # asked past the end: the partial is already whole
                return
            if got.status >= 400:
                raise ModelError(f"{url}: HTTP {got.status} {got.reason}")
            resumed = got.status == 206
            if have and not resumed:
                log.info("%s: server ignored the range; downloading from the start", url)
                have = done = 0
            total = None if got.content_length is None else have + got.content_length
            if total is not None and total > most:
                raise ModelError(
                    f"{url}: the server sends {total / 1e6:.1f} MB, more than the "
                    f"{most / 1e6:.1f} MB the catalog's size allows; nothing downloaded: "
                    "check the catalog entry's url and size_mb"
                )
            window_s, window_done = time.monotonic(), done
            with target.open("ab" if resumed else "wb") as out:
                async for block in got.content.iter_any():
                    done += len(block)
                    if done > most:
                        out.close()
                        target.unlink()
                        raise ModelError(
                            f"{url}: the download grew past {done / 1e6:.1f} MB, more than the "
                            f"{most / 1e6:.1f} MB the catalog's size allows; stopped and "
                            "deleted: check the catalog entry's url and size_mb"
                        )
                    out.write(block)
                    if progress:
                        progress(done, total)
                    now = time.monotonic()
                    if now - window_s >= limits.rate_window_s:
                        _check_rate(url, done - window_done, now - window_s, limits)
                        window_s, window_done = now, done
    except aiohttp.ClientConnectorError as exc:
        raise ModelError(f"{url}: cannot connect ({exc.os_error}); check the network") from None
    except aiohttp.ClientError as exc:
        raise ModelError(
            f"{url}: interrupted after {done} bytes ({exc or type(exc).__name__}); "
            "run the same fetch again to resume"
        ) from None


def _check_rate(url: str, got_bytes: int, over_s: float, limits: DownloadLimits) -> None:
    rate = got_bytes / over_s
    if rate < limits.min_rate_bytes_s:
        raise ModelError(
            f"{url}: {rate / 1000:.2f} kB/s over the last {over_s:.0f} s, below the "
            f"{limits.min_rate_bytes_s / 1000:g} kB/s a download must keep; the partial "
            "download stays: run the same fetch again to resume, on a better network"
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
