"""Unpack a bundle tar member by member, each checked before its bytes are written.

The manifest comes first and is checked whole; then every later member must be a regular
file the manifest lists, with the size it declares, and its sha256 is computed as it is
written. Links, devices, folders, sparse files, duplicates and members the manifest does
not list are refused at their header, before any of their data is read, and nothing is
written but files below `into` (opened with O_EXCL, so no link is ever followed).

A compressed bundle (gzip, bzip2, xz) is decompressed through a window: tarfile reads a
pax or long-name header whole, so one read may not exceed a small bound, and no byte past
what the manifest accounts for is decompressed at all. A small .tar.gz that would expand
to gigabytes is refused at the first header that does not match the manifest.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import hashlib
import lzma
import shutil
import tarfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, BinaryIO

from sori.core.errors import BundleError
from sori.provisioning.bundle.layout import MANIFEST, MANIFEST_MAX_BYTES, REMAKE, SUMS, Manifest

Say = Callable[[str], None]
READ_MAX_BYTES = 256 << 10
"""Largest single read from the uncompressed stream: a block of a member's data, or a pax
or long-name header (a real one is well under a kilobyte)."""
_MEMBER_OVERHEAD_BYTES = READ_MAX_BYTES + 4 * tarfile.BLOCKSIZE
"""Most tar framing one member may bring: its header, a pax header, and padding."""
ROOM_MARGIN_BYTES = 64 << 20
"""Free space left on the store's file system after unpacking."""
_UNREADABLE = (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError, RecursionError)
"""What a damaged or hostile stream raises while it is read (RecursionError: tarfile
follows a chain of pax headers by recursion)."""


class StepFailed(BundleError):
    """The bundle is sound but installing it failed (pip, the disk); exit 1."""


class _Window:
    """The bundle's uncompressed bytes as tarfile reads them, with two bounds: no single
    read over READ_MAX_BYTES, and nothing read or skipped to past `limit`."""

    def __init__(self, stream: IO[bytes], limit: int, where: str) -> None:
        self._stream = stream
        self.limit = limit
        self._where = where

    def read(self, size: int = -1) -> bytes:
        if not 0 <= size <= READ_MAX_BYTES:
            raise BundleError(
                f"{self._where}: a tar header claims {size} bytes of names or attributes; {REMAKE}"
            )
        self._check(self._stream.tell() + size)
        return self._stream.read(size)

    def seek(self, offset: int, whence: int = 0) -> int:
        if whence != 0:
            raise BundleError(f"{self._where}: the tar reader seeks from its end; {REMAKE}")
        self._check(offset)
        return self._stream.seek(offset)

    def tell(self) -> int:
        return self._stream.tell()

    def seekable(self) -> bool:
        return True

    def _check(self, end: int) -> None:
        if end > self.limit:
            raise BundleError(
                f"{self._where} holds more than its manifest accounts for ({self.limit} "
                f"bytes unpacked); {REMAKE}"
            )


def unpack_checked(bundle: Path, into: Path, say: Say) -> Manifest:
    """Unpack `bundle` into the empty folder `into` and return its manifest, every member
    checked. BundleError (nothing usable was unpacked) or StepFailed (the disk)."""
    say(f"checking {bundle}")
    if not bundle.is_file():
        what = "does not exist" if not bundle.exists() else "is not a file"
        raise BundleError(f"bundle {bundle} {what}; check the path")
    where = str(bundle)
    try:
        with contextlib.ExitStack() as stack:
            stream = _uncompressed(stack.enter_context(bundle.open("rb")), stack)
            window = _Window(stream, MANIFEST_MAX_BYTES + 2 * _MEMBER_OVERHEAD_BYTES, where)
            tar = stack.enter_context(tarfile.open(fileobj=window, mode="r:"))
            manifest = _read_manifest(tar, where)
            declared = sum(manifest.sizes.values())
            _check_room(into, declared)
            window.limit = (
                window.tell() + MANIFEST_MAX_BYTES + declared
                + (len(manifest.files) + 2) * _MEMBER_OVERHEAD_BYTES
            )  # fmt: skip
            _unpack_members(tar, manifest, into, where)
    except _UNREADABLE as exc:
        raise BundleError(f"{bundle} is not a readable bundle ({exc}); {REMAKE}") from None
    say(f"{len(manifest.files)} members match their size and sha256")
    return manifest


def _uncompressed(raw: BinaryIO, stack: contextlib.ExitStack) -> IO[bytes]:
    """The tar's bytes: `raw` itself, or decompressed as its first bytes say (what
    `tar -a` and tarfile's "r:*" accept besides plain tar)."""
    magic = raw.read(6)
    raw.seek(0)
    if magic.startswith(b"\x1f\x8b"):
        return stack.enter_context(gzip.GzipFile(fileobj=raw))
    if magic.startswith(b"BZh"):
        return stack.enter_context(bz2.BZ2File(raw))
    if magic.startswith(b"\xfd7zXZ\x00"):
        return stack.enter_context(lzma.LZMAFile(raw))
    return raw


def _read_manifest(tar: tarfile.TarFile, where: str) -> Manifest:
    first = tar.next()
    if first is None or first.name != MANIFEST:
        raise BundleError(
            f"{where}: the first member is not {MANIFEST}, so this is not a bundle made by "
            f"`sori bundle` (or it was repacked); {REMAKE}"
        )
    if not first.isreg() or first.issparse() or first.size > MANIFEST_MAX_BYTES:
        raise BundleError(
            f"{where}: {MANIFEST} is not a plain file of at most {MANIFEST_MAX_BYTES} bytes; "
            f"{REMAKE}"
        )
    data = tar.extractfile(first)
    assert data is not None  # a regular file always has data
    text = b"".join(_blocks(data, first.size, where))
    try:
        return Manifest.from_json(text.decode("utf-8"), where)
    except UnicodeDecodeError:
        raise BundleError(f"{where}: {MANIFEST} is not UTF-8 text; {REMAKE}") from None


def _check_room(into: Path, declared: int) -> None:
    free = shutil.disk_usage(into).free
    if declared + ROOM_MARGIN_BYTES > free:
        raise StepFailed(
            f"unpacking needs {declared / 1e6:.0f} MB and {into.parent} has "
            f"{free / 1e6:.0f} MB free; make room there, or install into another "
            "model store with --dir"
        )


def _unpack_members(tar: tarfile.TarFile, manifest: Manifest, into: Path, where: str) -> None:
    seen = {MANIFEST}
    for member in iter(tar.next, None):
        name = member.name
        if name in seen:
            raise BundleError(f"{where}: {name!r} appears twice in the tar; {REMAKE}")
        seen.add(name)
        if not member.isreg() or member.issparse():
            raise BundleError(
                f"{where}: {name!r} is a link, folder or special file; a sori bundle holds "
                f"only regular files; {REMAKE}"
            )
        if name == SUMS:
            if member.size > MANIFEST_MAX_BYTES:
                raise BundleError(f"{where}: {SUMS} is over {MANIFEST_MAX_BYTES} bytes; {REMAKE}")
            continue  # for `sha256sum -c` by hand; tarfile skips its data
        if name not in manifest.files:
            raise BundleError(f"{where}: {name!r} is not in the manifest; {REMAKE}")
        if member.size != manifest.sizes[name]:
            raise BundleError(
                f"{where}: {name} is {member.size} bytes in the tar but "
                f"{manifest.sizes[name]} in the manifest; {REMAKE}"
            )
        if _write_member(tar, member, into / name, where) != manifest.files[name]:
            raise BundleError(
                f"{where} is damaged or was altered: {name} differs from its sha256 in the "
                f"manifest. Nothing was installed; copy the bundle again or make a new one "
                "with `sori bundle`"
            )
    missing = sorted(set(manifest.files) - seen)
    if missing:
        raise BundleError(
            f"{where} is damaged or was altered: {', '.join(missing[:5])} "
            f"{'is' if len(missing) == 1 else 'are'} missing. Nothing was installed; copy "
            "the bundle again or make a new one with `sori bundle`"
        )


def _write_member(tar: tarfile.TarFile, member: tarfile.TarInfo, target: Path, where: str) -> str:
    """Copy the member's data to `target`, a new file; its sha256."""
    data = tar.extractfile(member)
    assert data is not None  # a regular file always has data
    digest = hashlib.sha256()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("xb") as out:  # O_EXCL: never through a link, never over a file
            for block in _blocks(data, member.size, where):
                digest.update(block)
                out.write(block)
    except OSError as exc:
        raise StepFailed(f"unpacking {member.name} into {target.parent} failed: {exc}") from None
    return digest.hexdigest()


def _blocks(data: IO[bytes], size: int, where: str) -> Iterator[bytes]:
    """The member's `size` bytes in blocks, counted as they come: a stream that ends early
    is refused, and nothing past `size` is read."""
    left = size
    while left:
        try:
            block = data.read(min(READ_MAX_BYTES, left))
        except _UNREADABLE as exc:
            raise BundleError(f"{where} is not a readable bundle ({exc}); {REMAKE}") from None
        if not block:
            raise BundleError(f"{where} ends inside a member; {REMAKE}")
        left -= len(block)
        yield block
