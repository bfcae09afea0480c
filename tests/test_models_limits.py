"""`sori models fetch` against hostile servers and archives on loopback: a trickle (body or
headers) meets the minimum rate or the total deadline, an oversized download is stopped
while it downloads, a zip or tar bomb is refused while it unpacks. And the catalog itself,
fuzzed: it loads or says what is wrong."""

from __future__ import annotations

import hashlib
import io
import socket
import tarfile
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sori.core.errors import ModelError
from sori.provisioning.models import load_catalog
from sori.provisioning.models.catalog import CatalogEntry
from sori.provisioning.models.fetch import DownloadLimits, fetch, max_download_bytes
from sori.provisioning.models.store import MAX_MEMBERS


class Hostile(BaseHTTPRequestHandler):
    """/trickle: 1 body byte every 0.1 s; /slow-headers: the headers, 1 byte every 0.1 s;
    /announce: says 50 MB; /flood: sends without end and without a length; /file: serves
    `files[name]` (the bombs)."""

    files: dict[str, bytes] = {}
    sent: dict[str, int] = {}

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        kind, _, name = self.path.strip("/").partition("/")
        try:
            if kind == "slow-headers":
                self.wfile.write(b"HTTP/1.1 200 OK\r\n")
                for _ in range(600):
                    self.wfile.write(b"X")
                    self.wfile.flush()
                    time.sleep(0.1)
                return
            self.send_response(200)
            if kind == "trickle":
                self.send_header("Content-Length", "50000")
                self.end_headers()
                for _ in range(600):
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(0.1)
            elif kind == "announce":
                self.send_header("Content-Length", str(50_000_000))
                self.end_headers()
                self.wfile.write(b"x" * 1000)
            elif kind == "flood":
                self.send_header("Connection", "close")
                self.end_headers()
                block = b"x" * 65536
                self.sent["flood"] = 0
                for _ in range(2000):  # 130 MB at most
                    self.wfile.write(block)
                    self.sent["flood"] += len(block)
            else:
                data = self.files[name]
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up, as it should


@pytest.fixture(scope="module")
def hostile():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def entry(url: str, archive: str = "", sha256: str = "", size_mb: float = 0.05) -> CatalogEntry:
    return CatalogEntry(
        name="m", kind="stt", languages=["ko"], urls=[url], archive=archive, size_mb=size_mb,
        sha256=sha256, verified=bool(sha256), license="MIT", memory_mb=1,
        memory_measured=False, boards=["x86"],
    )  # fmt: skip


def nothing_left(root: Path) -> bool:
    return not (root / "m").exists() and not list((root / ".partial").iterdir())


def test_a_body_trickle_fails_the_minimum_rate(hostile, tmp_path):
    limits = DownloadLimits(min_rate_bytes_s=1000, rate_window_s=1.0)
    started = time.monotonic()
    with pytest.raises(ModelError, match=r"below the 1 kB/s .* resume") as caught:
        fetch(entry(f"{hostile}/trickle/m"), tmp_path, allow_unverified=True, limits=limits)
    assert time.monotonic() - started < 4, caught.value
    assert not (tmp_path / "m").exists()


def test_a_header_trickle_meets_the_total_deadline(hostile, tmp_path):
    """Every read gets a byte within the read timeout, so only a total deadline ends it."""
    limits = DownloadLimits(min_rate_bytes_s=10_000_000, setup_s=1.0)
    assert limits.deadline_s(max_download_bytes(entry(""))) < 1.5
    started = time.monotonic()
    with pytest.raises(ModelError, match=r"not done within 1 s") as caught:
        fetch(entry(f"{hostile}/slow-headers/m"), tmp_path, allow_unverified=True, limits=limits)
    assert time.monotonic() - started < 4, caught.value


def test_default_limits_are_sized_from_the_catalog():
    limits = DownloadLimits()
    small, large = entry("", size_mb=1), entry("", size_mb=1830)
    assert max_download_bytes(small) < 3_000_000  # 600 MB for size_mb = 1 is refused
    assert 1830e6 < max_download_bytes(large) < 3 * 1830e6
    # A download that keeps the minimum rate always ends before the deadline.
    for item in (small, large):
        most = max_download_bytes(item)
        assert limits.deadline_s(most) >= most / limits.min_rate_bytes_s


def test_an_announced_oversize_download_is_refused_before_it_starts(hostile, tmp_path):
    with pytest.raises(ModelError, match=r"50\.0 MB, more than the 1\.1 MB"):
        fetch(entry(f"{hostile}/announce/m"), tmp_path, allow_unverified=True)
    assert nothing_left(tmp_path)


def test_an_endless_download_is_stopped_at_the_catalog_size(hostile, tmp_path):
    started = time.monotonic()
    with pytest.raises(ModelError, match=r"more than the 1\.1 MB .*deleted"):
        fetch(entry(f"{hostile}/flood/m"), tmp_path, allow_unverified=True)
    assert time.monotonic() - started < 5
    assert nothing_left(tmp_path)
    assert Hostile.sent["flood"] < 20_000_000  # stopped while downloading, not after


def _zip_bomb() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for i in range(20):
            z.writestr(f"m/part{i}.bin", bytes(5_000_000))  # 100 MB of zeros in all
    return buffer.getvalue()


def _tar_bomb() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for i in range(20):
            info = tarfile.TarInfo(f"m/part{i}.bin")
            info.size = 5_000_000
            tar.addfile(info, io.BytesIO(bytes(info.size)))
    return buffer.getvalue()


def _many_files() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for i in range(MAX_MEMBERS + 1):
            tar.addfile(tarfile.TarInfo(f"m/{i}"), io.BytesIO())
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("archive", "build", "message"),
    [
        ("zip", _zip_bomb, "unpacks to more than"),
        ("tar.gz", _tar_bomb, "unpacks to more than"),
        ("tar.gz", _many_files, f"more than {MAX_MEMBERS} files"),
    ],
)
def test_an_archive_bomb_is_refused_while_it_unpacks(hostile, tmp_path, archive, build, message):
    data = build()
    assert len(data) < 1_000_000  # a small download, within the catalog's size
    Hostile.files[archive] = data
    item = entry(f"{hostile}/file/{archive}", archive, hashlib.sha256(data).hexdigest())
    started = time.monotonic()
    with pytest.raises(ModelError, match=message):
        fetch(item, tmp_path)
    assert time.monotonic() - started < 10
    assert nothing_left(tmp_path)


# -- the catalog, fuzzed -------------------------------------------------------------------

GOOD = (
    '[[model]]\nname = "m"\nkind = "stt"\nlanguages = ["ko"]\nurls = ["https://x/m"]\n'
    'archive = ""\nsize_mb = 1\nsha256 = ""\nverified = false\nlicense = "MIT"\n'
    'memory_mb = 1\nmemory_measured = false\nboards = ["x86"]\n'
)
TOML_VALUES = st.sampled_from(
    ['"x"', "5", "-1", "inf", "nan", "1e400", "[]", "[1]", '["https://a"]', "{}",
     '{ a = 1 }', "true", '"stt"', '["x86"]', "1979-05-27", '"' + "9" * 5000 + '"']
)  # fmt: skip
FIELDS = [*CatalogEntry.__dataclass_fields__, "extra"]
FUZZ = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@FUZZ
@given(
    st.dictionaries(st.sampled_from(FIELDS), TOML_VALUES, max_size=6),
    st.sampled_from(["", "model = 5\n", "model = [1]\n", "[model]\nname = 1\n"]),
    st.binary(max_size=60),
)
def test_fuzz_catalog_loads_or_says_what_is_wrong(tmp_path_factory, changes, top, noise):
    lines = [line for line in GOOD.splitlines() if line.split(" = ")[0] not in changes]
    lines += [f"{key} = {value}" for key, value in changes.items()]
    path = tmp_path_factory.mktemp("catalog") / "c.toml"
    for text in (top + "\n".join(lines) + "\n", None):
        if text is None:
            path.write_bytes(noise)
        else:
            path.write_text(text)
        try:
            entries = load_catalog(path)
        except ModelError as exc:
            assert str(exc) and "\n" not in str(exc)
            continue
        for item in entries:  # loaded: limits can be sized from it
            assert 0 < item.size_mb < 1e6 and max_download_bytes(item) > 0


@pytest.mark.parametrize(
    "text",
    [
        "model = " + "[" * 5000 + "]" * 5000 + "\n",
        GOOD.replace('urls = ["https://x/m"]', "urls = 5"),
        GOOD.replace('urls = ["https://x/m"]', "urls = [1]"),
        GOOD.replace("size_mb = 1", "size_mb = inf"),
        GOOD.replace("memory_mb = 1", "memory_mb = nan"),
        "model = 5\n",
    ],
)
def test_hostile_catalogs_are_a_model_error(tmp_path, text):
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(ModelError):
        load_catalog(path)


def test_a_port_nobody_listens_on_is_named(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ModelError, match="cannot connect"):
        fetch(entry(f"http://127.0.0.1:{port}/m"), tmp_path, allow_unverified=True)
