"""`sori bundle install` against hostile bundles, each built here as a real tar file and
installed through the CLI: names that leave the model store, links, wheels from outside the
tar, manifests of the wrong shape or that lie, a config that does not load, and compressed
bombs. Each is refused with exit 2 and a one-line message before anything is installed:
the venv, the model store, the config and the folders around them stay as they were."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sori.cli import main
from sori.core.errors import BundleError
from sori.provisioning.bundle.layout import FORMAT, MANIFEST, MEMBER_MAX_BYTES, Manifest
from test_bundle import _tiny_wheel

MODEL = "tiny-model"
WHEEL = "sori_probe-1.0-py3-none-any.whl"
CONFIG = b'[board]\nprofile = "pi5"\n'
ONNX = b"onnx" * 100


with tempfile.TemporaryDirectory() as _folder:
    WHEEL_BYTES = _tiny_wheel(Path(_folder)).read_bytes()


def _members(wheel: bool = True) -> dict[str, bytes]:
    """An honest bundle's members: the probe wheel (so an install that goes wrong gets as
    far as pip and the model store), a model folder with its manifest, and the config."""
    members = {
        f"models/{MODEL}/model.onnx": ONNX,
        f"models/{MODEL}/.sori-manifest.json": b'{"name": "tiny-model", "files": {}}',
        "config/sori.toml": CONFIG,
    }
    if wheel:
        members[f"wheels/{WHEEL}"] = WHEEL_BYTES
    return members


def _manifest(members: dict[str, bytes], models: list[dict] | None = None) -> dict[str, Any]:
    """The manifest `sori bundle` would write for `members`."""
    files = {name: hashlib.sha256(data).hexdigest() for name, data in members.items()}
    return {
        "format": FORMAT,
        "sori_version": "0.1.0",
        "board": "pi5",
        "platforms": ["manylinux2014_x86_64"],
        "python_version": "3.11",
        "extras": [],
        "wheels": sorted(n.split("/", 1)[1] for n in members if n.startswith("wheels/")),
        "source_only": [],
        "models": models
        if models is not None
        else [{"name": MODEL, "kind": "stt", "config": {"stt.sherpa.model_dir": "{path}"}}],
        "files": files,
        "sizes": {name: len(data) for name, data in members.items()},
    }


def _file(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _link(name: str, target: str, kind: bytes) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info, b""


def _tar(
    path: Path,
    manifest: Any,
    members: dict[str, bytes],
    extra: list[tuple[tarfile.TarInfo, bytes]] = (),
) -> Path:
    """A bundle tar: manifest.json first (JSON of `manifest`, or `manifest` itself when it
    is bytes), then `members`, then `extra` (links, duplicates) as given."""
    text = manifest if isinstance(manifest, bytes) else json.dumps(manifest).encode()
    with tarfile.open(path, "w") as tar:
        for info, data in [_file(MANIFEST, text), *(_file(n, d) for n, d in members.items()),
                           *extra]:  # fmt: skip
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return path


def _tree(root: Path) -> dict[str, bytes | str]:
    """Every path under `root` (links not followed): a file's bytes, a link's target."""
    tree: dict[str, bytes | str] = {}
    for folder, dirs, names in os.walk(root):
        for name in dirs + names:
            path = Path(folder, name)
            key = str(path.relative_to(root))
            if path.is_symlink():
                tree[key] = f"-> {os.readlink(path)}"
            elif path.is_file():
                tree[key] = path.read_bytes()
            else:
                tree[key] = "dir"
    return tree


class Device:
    """A device in tmp_path: an empty venv, a model store and a config path, with the
    folders around them (a victim folder holding a file) to show nothing is touched."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.venv = root / "venv"
        self.store = root / "store"
        self.config = root / "home" / "sori.toml"
        self.victim = root / "victim"
        self.victim.mkdir()
        (self.victim / "precious.txt").write_text("keep me")
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(self.venv)],
                       check=True)  # fmt: skip

    def install(self, bundle: Path) -> int:
        return main(["bundle", "install", str(bundle), "--venv", str(self.venv),
                     "--dir", str(self.store), "--config", str(self.config)])  # fmt: skip

    def refuses(self, bundle: Path, capsys, *words: str) -> str:
        """Install `bundle`; assert exit 2, a one-line message holding `words`, and that
        nothing under the device's folder changed but an empty staging folder."""
        before = _tree(self.root)
        code = self.install(bundle)
        err = capsys.readouterr().err
        message = [line for line in err.splitlines() if not line.startswith("[bundle]")]
        assert code == 2, err
        assert len(message) == 1 and message[0].startswith("sori bundle: "), err
        assert all(word in message[0] for word in words), err
        after = _tree(self.root)
        assert {k: v for k, v in after.items() if not k.startswith("store")} == before
        assert {k for k in after if k.startswith("store")} <= {"store", "store/.partial"}
        return message[0]


@pytest.fixture
def device(tmp_path) -> Device:
    return Device(tmp_path)


def _installed_wheel(venv: Path) -> bool:
    return any(venv.glob("lib/python*/site-packages/sori_probe"))


def test_an_honest_bundle_installs(device, tmp_path, capsys):
    """The helpers above build what install accepts; the refusals below are the hostile
    part, not a malformed bundle."""
    members = _members()
    bundle = _tar(tmp_path / "b.tar", _manifest(members), members)
    assert device.install(bundle) == 0, capsys.readouterr().err
    assert (device.store / MODEL / "model.onnx").read_bytes() == ONNX
    assert f'model_dir = "{device.store / MODEL}"' in device.config.read_text()
    assert _installed_wheel(device.venv)
    assert not list((device.store / ".partial").iterdir())


@pytest.mark.parametrize("name", ["VICTIM", "../victim", "../../x", "a/b", ".partial", ""])
def test_a_model_name_that_is_not_one_folder_name_touches_nothing(device, tmp_path, capsys, name):
    """An absolute name once made install delete that folder; '..' or '/' left the store;
    '.partial' is the store's own staging folder."""
    name = str(device.victim) if name == "VICTIM" else name
    members = _members()
    manifest = _manifest(members, [{"name": name, "kind": "stt", "config": {}}])
    device.refuses(_tar(tmp_path / "b.tar", manifest, members), capsys, "plain folder name")
    assert (device.victim / "precious.txt").read_text() == "keep me"


def test_a_dotdot_name_through_a_tar_symlink_writes_nothing_outside(device, tmp_path, capsys):
    """`models -> z/y/x` (allowed by tarfile's "data" filter) plus a model named '../../x'
    once wrote the model two folders above the store."""
    members = {"z/x/payload": b"escaped", "z/y/x/keep": b"", "config/sori.toml": CONFIG,
               f"wheels/{WHEEL}": WHEEL_BYTES}  # fmt: skip
    manifest = _manifest(members, [{"name": "../../x", "kind": "stt", "config": {}}])
    bundle = _tar(
        tmp_path / "b.tar", manifest, members, [_link("models", "z/y/x", tarfile.SYMTYPE)]
    )
    device.refuses(bundle, capsys)
    assert not (tmp_path.parent / "x").exists() and not (tmp_path / "x").exists()


@pytest.mark.parametrize("kind", [tarfile.SYMTYPE, tarfile.LNKTYPE], ids=["symlink", "hardlink"])
def test_a_link_member_is_refused(device, tmp_path, capsys, kind):
    """A bundle holds only regular files; a link, even one pointing inside, is refused."""
    members = _members()
    manifest = _manifest(members | {f"models/{MODEL}/extra.onnx": ONNX})
    target = "model.onnx" if kind == tarfile.SYMTYPE else f"models/{MODEL}/model.onnx"
    link = _link(f"models/{MODEL}/extra.onnx", target, kind)
    device.refuses(_tar(tmp_path / "b.tar", manifest, members, [link]), capsys, "link")


@pytest.mark.parametrize("where", ["absolute", "relative", "unpacked"])
def test_a_wheel_that_is_not_a_checked_member_is_not_installed(device, tmp_path, capsys, where):
    """The wheels pip installs are exactly the wheels/ members the manifest checksums: an
    absolute path, a '..' path or a name the tar lacks is refused, and pip never runs."""
    outside = tmp_path / "outside" / WHEEL
    outside.parent.mkdir()
    outside.write_bytes(WHEEL_BYTES)
    members = _members(wheel=False)
    manifest = _manifest(members)
    manifest["wheels"] = {
        "absolute": [str(outside)],
        "relative": [f"../../../../outside/{WHEEL}"],  # from store/.partial/bundle.*/wheels
        "unpacked": ["other-1.0-py3-none-any.whl"],
    }[where]
    device.refuses(_tar(tmp_path / "b.tar", manifest, members), capsys, "wheels")
    assert not _installed_wheel(device.venv)


def _deep(depth: int) -> bytes:
    return b'{"files": ' + b"[" * depth + b"]" * depth + b"}"


def _honest_with(change: Callable[[dict], Any]) -> bytes:
    manifest = _manifest(_members())
    change(manifest)
    return json.dumps(manifest).encode()


SHAPES = {
    "a list": b"[]",
    "text": b'"manifest"',
    "not JSON": b"{files: 1}",
    "not UTF-8": b"\xff\xfe{}",
    "deep nesting": _deep(100_000),
    "a 5000-digit size": _honest_with(lambda m: m["sizes"].update({"config/sori.toml": 0})).replace(
        b'"config/sori.toml": 0', b'"config/sori.toml": ' + b"9" * 5000
    ),
    "files as a list": _honest_with(lambda m: m.update(files=list(m["files"]))),
    "models as a mapping": _honest_with(lambda m: m.update(models=m["models"][0])),
    "a config value that is a number": _honest_with(
        lambda m: m["models"][0].update(config={"stt.sherpa.model_dir": 5})
    ),
    "a config key that injects a table": _honest_with(
        lambda m: m["models"][0].update(config={'x]\n[actions]\ndefault_handler = "shell': "y"})
    ),
    "a wheel that is a number": _honest_with(lambda m: m.update(wheels=[5])),
    "format as text": _honest_with(lambda m: m.update(format="2")),
    "an older format": _honest_with(lambda m: m.update(format=1)),
    "a board with an escape": _honest_with(lambda m: m.update(board="pi5\x1b[2J")),
    "a lone surrogate": _honest_with(lambda m: m.update(sori_version="\ud800")),
    "an unknown field": _honest_with(lambda m: m.update(hooks=["rm -rf /"])),
    "a source_only entry without fields": _honest_with(lambda m: m.update(source_only=[{}])),
    "a member path that climbs": _honest_with(
        lambda m: (
            m["files"].update({"models/../x": "0" * 64}),
            m["sizes"].update({"models/../x": 1}),
        )
    ),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_a_manifest_of_the_wrong_shape_installs_nothing(device, tmp_path, capsys, shape):
    bundle = _tar(tmp_path / "b.tar", SHAPES[shape], _members())
    device.refuses(bundle, capsys, MANIFEST)


def _drop_model_files(manifest: dict) -> None:
    manifest["models"] = []


LIES: dict[str, Callable[[dict], Any]] = {
    "a size smaller than the member": lambda m: m["sizes"].update(
        {f"models/{MODEL}/model.onnx": len(ONNX) - 1}
    ),
    "a size larger than the member": lambda m: m["sizes"].update(
        {f"models/{MODEL}/model.onnx": len(ONNX) + 512}
    ),
    "a sha256 that does not match": lambda m: m["files"].update(
        {f"models/{MODEL}/model.onnx": "0" * 64}
    ),
    "a member the tar lacks": lambda m: (
        m["files"].update({f"models/{MODEL}/gone.onnx": "0" * 64}),
        m["sizes"].update({f"models/{MODEL}/gone.onnx": 1}),
    ),
    "a model with no files": lambda m: m["models"].append({"name": "ghost", "kind": "stt"}),
    "model files it lists no model for": _drop_model_files,
    "a packed wheel it does not list": lambda m: m.update(wheels=[]),
    "no config": lambda m: (m["files"].pop("config/sori.toml"), m["sizes"].pop("config/sori.toml")),
}


@pytest.mark.parametrize("lie", LIES)
def test_a_manifest_that_lies_installs_nothing(device, tmp_path, capsys, lie):
    members = _members()
    manifest = _manifest(members)
    LIES[lie](manifest)
    device.refuses(_tar(tmp_path / "b.tar", manifest, members), capsys)
    assert not _installed_wheel(device.venv)


def test_a_member_twice_installs_nothing(device, tmp_path, capsys):
    """A second copy of a checked member would replace it after its check."""
    members = _members()
    bundle = _tar(tmp_path / "b.tar", _manifest(members), members,
                  [_file(f"models/{MODEL}/model.onnx", b"evil")])  # fmt: skip
    device.refuses(bundle, capsys, "twice")


def test_a_config_that_does_not_load_is_refused_before_anything_is_installed(
    device, tmp_path, capsys
):
    """Once the wheels and the model were installed, and then the config failed (exit 2):
    a half-installed device."""
    members = _members() | {"config/sori.toml": b"[board]\nprofile = 5\n"}
    bundle = _tar(tmp_path / "b.tar", _manifest(members), members)
    device.refuses(bundle, capsys, "config")
    assert not _installed_wheel(device.venv)


def test_a_bundle_larger_than_the_free_space_is_refused_before_unpacking(device, tmp_path, capsys):
    """The declared sizes are added up first: more than the store's disk holds is refused
    (exit 1, the disk is the problem) before one member is written."""
    count = shutil.disk_usage(tmp_path).free // MEMBER_MAX_BYTES + 1
    members = _members()
    manifest = _manifest(members)
    for i in range(count):
        manifest["files"][f"models/{MODEL}/part{i}.bin"] = "0" * 64
        manifest["sizes"][f"models/{MODEL}/part{i}.bin"] = MEMBER_MAX_BYTES
    assert device.install(_tar(tmp_path / "b.tar", manifest, members)) == 1
    assert "make room" in capsys.readouterr().err
    assert not (device.store / MODEL).exists() and not _installed_wheel(device.venv)


def _written_bytes() -> int:
    """Bytes this process has written so far (Linux's write counter)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError("no wchar in /proc/self/io")


def _raw(info: tarfile.TarInfo, data: bytes) -> bytes:
    """One member as tar bytes: header, data, padding to a block."""
    return info.tobuf(tarfile.PAX_FORMAT) + data + bytes(-len(data) % tarfile.BLOCKSIZE)


def _gz_bomb(path: Path, members: dict[str, bytes], manifest: dict, name: str, size: int) -> Path:
    """A .tar.gz of `members` then `name`, `size` zero bytes: gzip members concatenated
    (one per MiB of zeros, about 1 KB each), so 2 GiB costs 2 MB and no time to build."""
    head = b"".join(
        _raw(info, data)
        for info, data in [_file(MANIFEST, json.dumps(manifest).encode()),
                           *(_file(n, d) for n, d in members.items())]
    )  # fmt: skip
    bomb = tarfile.TarInfo(name)
    bomb.size = size
    head += bomb.tobuf(tarfile.PAX_FORMAT)
    mib = gzip.compress(bytes(1 << 20))
    with path.open("wb") as out:
        out.write(gzip.compress(head))
        for _ in range(size >> 20):
            out.write(mib)
        out.write(gzip.compress(bytes(2 * tarfile.BLOCKSIZE)))
    return path


@pytest.mark.parametrize("listed", [False, True], ids=["unlisted", "declared-small"])
def test_a_small_tar_gz_that_expands_to_gigabytes_is_refused_unexpanded(
    device, tmp_path, capsys, listed
):
    """2 MB of .tar.gz holding a 2 GiB member: refused at its header, whether the manifest
    leaves it out or declares it small, with next to nothing written or decompressed."""
    members = _members()
    big = f"models/{MODEL}/big.bin"
    manifest = _manifest(members | ({big: b"tiny"} if listed else {}))
    bundle = _gz_bomb(tmp_path / "b.tar.gz", members, manifest, big, 2 << 30)
    assert bundle.stat().st_size < 3 << 20
    written, start = _written_bytes(), time.monotonic()
    device.refuses(bundle, capsys, big)
    assert _written_bytes() - written < 16 << 20
    assert time.monotonic() - start < 5


def test_a_pax_header_claiming_gigabytes_is_not_read_into_memory(device, tmp_path, capsys):
    """tarfile reads a pax header whole: a .tar.gz whose first header claims 512 MiB of
    attributes is refused before that read, in bounded memory."""
    pax = tarfile.TarInfo("././@PaxHeader")
    pax.type, pax.size = tarfile.XHDTYPE, 512 << 20
    mib = gzip.compress(bytes(1 << 20))
    bundle = tmp_path / "b.tar.gz"
    with bundle.open("wb") as out:
        out.write(gzip.compress(pax.tobuf(tarfile.USTAR_FORMAT)))
        for _ in range(pax.size >> 20):
            out.write(mib)
        out.write(gzip.compress(_file(MANIFEST, b"{}")[0].tobuf() + bytes(1024)))
    tracemalloc.start()
    try:
        device.refuses(bundle, capsys, "header")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 << 20


def test_a_chain_of_pax_headers_is_refused_cleanly(device, tmp_path, capsys):
    """tarfile follows pax headers by recursion: 5,000 of them (40 KB gzipped) end in
    RecursionError inside tarfile, which must be a refusal, not a traceback."""
    pax = tarfile.TarInfo("././@PaxHeader")
    pax.type = tarfile.XHDTYPE
    chain = _raw(pax, b"") * 5000 + _raw(*_file(MANIFEST, b"{}")) + bytes(1024)
    bundle = tmp_path / "b.tar.gz"
    bundle.write_bytes(gzip.compress(chain))
    device.refuses(bundle, capsys, "not a readable bundle")


@pytest.mark.parametrize("what", ["folder", "fifo", "missing"])
def test_a_bundle_path_that_is_not_a_file_is_refused(device, tmp_path, capsys, what):
    """A FIFO would block install forever; a folder gave a traceback."""
    path = tmp_path / "b.tar"
    if what == "folder":
        path.mkdir()
    elif what == "fifo":
        os.mkfifo(path)
    device.refuses(path, capsys, str(path))


# Fuzzing: random JSON, and an honest manifest with one field replaced by random JSON or a
# hostile string, give a Manifest or a BundleError, never another exception.
HOSTILE = ["", ".", "..", "../x", "/etc", "a/b", "models/../x", "x\n", "\x1b[2J", "\u202e",
           "\ud800", "{path}", "wheels/x.whl", "models/x", "config/sori.toml",
           "a" * 300]  # fmt: skip
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
    | st.sampled_from(HOSTILE),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=8) | st.sampled_from(HOSTILE), inner, max_size=4),
    max_leaves=12,
)  # fmt: skip
ONNX_PATH = f"models/{MODEL}/model.onnx"
PLACES = [("format",), ("files",), ("sizes",), ("wheels",), ("models",), ("source_only",),
          ("board",), ("platforms",), ("models", 0), ("models", 0, "name"),
          ("models", 0, "kind"), ("models", 0, "config"), ("files", "HOSTILE"),
          ("sizes", ONNX_PATH), ("files", ONNX_PATH)]  # fmt: skip


@st.composite
def _mutated(draw) -> Any:
    if draw(st.integers(0, 9)) == 0:
        return draw(JSON_VALUES)
    manifest = _manifest(_members(wheel=False))
    *path, last = draw(st.sampled_from(PLACES))
    holder: Any = manifest
    for key in path:
        holder = holder[key]
    if last == "HOSTILE":
        last = draw(st.sampled_from(HOSTILE))
    if draw(st.integers(0, 4)) == 0 and isinstance(holder, dict):
        holder.pop(last, None)
    else:
        holder[last] = draw(JSON_VALUES)
    return manifest


@settings(max_examples=300, deadline=None)
@given(_mutated())
def test_fuzzed_manifests_parse_or_raise_bundle_error(data):
    try:
        manifest = Manifest.from_json(json.dumps(data), "fuzz")
    except BundleError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 1000
    else:
        assert isinstance(manifest, Manifest)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mutated())
def test_fuzzed_bundles_install_or_are_refused_cleanly(data):
    """Through the CLI with a real tar: exit 0, or exit 2 with nothing outside the store's
    staging folder changed; no traceback either way."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store, config = root / "store", root / "home" / "sori.toml"
        bundle = _tar(root / "b.tar", data, _members(wheel=False))
        code = main(["bundle", "install", str(bundle), "--venv", str(root / "venv"),
                     "--dir", str(store), "--config", str(config)])  # fmt: skip
        assert code in (0, 2)
        if code == 2:
            assert not config.exists() and not (root / "venv").exists()
            assert [p.name for p in store.iterdir()] == [".partial"]
            assert not list((store / ".partial").iterdir())
