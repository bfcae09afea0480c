"""`sori bundle` and `sori bundle install` on this machine, offline: the sori wheel built
from the checkout, a tiny wheel in a local wheelhouse for the dependencies (so pip download
needs no network), models fetched from archives a loopback server serves, installed into a
fresh venv; a tampered member and a missing model each stop with a clear message."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from model_server import ModelServer
from sori.cli import main
from sori.provisioning.board import PROFILES
from sori.provisioning.bundle.pack import (
    PLATFORMS,
    PackOptions,
    _build_sori_wheel,
    _download,
    _requirements,
)

PI5 = PROFILES["pi5"].models
X86 = ["manylinux2014_x86_64"]


def _tiny_wheel(folder: Path) -> Path:
    """sori_probe 1.0, a pure-Python wheel written by hand (no build backend), that needs
    sori-pure-dep."""
    files = {
        "sori_probe/__init__.py": b"VALUE = 42\n",
        "sori_probe-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: sori-probe\n"
        b"Version: 1.0\nRequires-Dist: sori-pure-dep\n",
        "sori_probe-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\n"
        b"Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = (
        "".join(
            f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}\n"  # noqa: E501
            for name, data in files.items()
        )
        + "sori_probe-1.0.dist-info/RECORD,,\n"
    )
    wheel = folder / "sori_probe-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr("sori_probe-1.0.dist-info/RECORD", record)
    return wheel


def _tiny_sdist(folder: Path) -> None:
    """sori-pure-dep 1.0, published only as source (like srt, which vosk needs)."""
    files = {
        "pyproject.toml": b'[build-system]\nrequires = ["setuptools"]\n'
        b'build-backend = "setuptools.build_meta"\n[project]\nname = "sori-pure-dep"\n'
        b'version = "1.0"\n',
        "sori_pure_dep.py": b"NAME = 'pure'\n",
        "PKG-INFO": b"Metadata-Version: 2.1\nName: sori-pure-dep\nVersion: 1.0\n",
    }
    with tarfile.open(folder / "sori_pure_dep-1.0.tar.gz", "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"sori_pure_dep-1.0/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def _archive(name: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:bz2") as tar:
        for rel, data in {"model.onnx": name.encode() * 50, "tokens.txt": b"a 1\n"}.items():
            info = tarfile.TarInfo(f"{name}/{rel}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The pi5 profile's models in a catalog served on loopback and fetched into a store,
    the sori wheel, and a wheelhouse holding sori-probe."""
    tmp = tmp_path_factory.mktemp("bundle")
    server = ModelServer().start()
    lines = []
    for name in PI5:
        single = name.endswith(".gguf")
        server.files[name] = b"GGUF" + bytes(2000) if single else _archive(name)
        config = '{ "llm.model" = "{path}" }' if single else (
            '{ "stt.backend" = "sherpa", "stt.sherpa.model_dir" = "{path}" }'
            if "zipformer" in name else '{ "tts.vits.model_dir" = "{path}" }')  # fmt: skip
        lines.append(
            f'[[model]]\nname = "{name}"\nkind = "stt"\nlanguages = ["ko"]\n'
            f'urls = ["{server.url(name)}"]\narchive = "{"" if single else "tar.bz2"}"\n'
            f'size_mb = 0.01\nsha256 = "{hashlib.sha256(server.files[name]).hexdigest()}"\n'
            'verified = true\nlicense = "MIT"\nmemory_mb = 1\nmemory_measured = false\n'
            f'boards = ["pi5"]\nconfig = {config}\n'
        )
    catalog = tmp / "catalog.toml"
    catalog.write_text("\n".join(lines))
    store = tmp / "store"
    assert main(["models", "fetch", *PI5, "--catalog", str(catalog), "--dir", str(store)]) == 0
    server.stop()
    house = tmp / "wheelhouse"
    house.mkdir()
    _tiny_wheel(house)
    _tiny_sdist(house)
    sori_wheel = _build_sori_wheel(tmp / "build", lambda _: None)
    return {"tmp": tmp, "catalog": catalog, "store": store, "house": house, "sori": sori_wheel}


def _bundle(world, output: Path, *extra: str) -> int:
    return main(["bundle", "--board", "pi5", "--platform", X86[0], "-o", str(output),
                 "--catalog", str(world["catalog"]), "--dir", str(world["store"]),
                 "--wheels-from", str(world["house"]), "--sori-wheel", str(world["sori"]),
                 "--requirement", "sori-probe>=1", "--requirement", "no-such-package>=1",
                 *extra])  # fmt: skip


@pytest.fixture(scope="module")
def bundle(world):
    output = world["tmp"] / "sori-pi5.tar"
    assert _bundle(world, output) == 0
    return output


def test_requirements_follow_the_extras(world):
    version, reqs = _requirements(world["sori"], ["llm"], X86)
    names = {r.split(">")[0].split("=")[0] for r in reqs}
    assert version == "0.1.0"
    assert {"hassil", "pyyaml", "llama-cpp-python", "httpx"} <= names
    assert "vosk" not in names and "sori" not in names
    _, every = _requirements(world["sori"], ["all"], X86)  # sori[all] names the others
    assert {"vosk", "piper-tts", "wyoming"} <= {r.split(">")[0] for r in every}


def test_round_trip_installs_wheels_models_and_config(world, bundle, tmp_path, capsys):
    capsys.readouterr()
    with tarfile.open(bundle) as tar:
        members = tar.getmembers()
        manifest = json.loads(tar.extractfile("manifest.json").read())
        sums = tar.extractfile("SHA256SUMS").read().decode()
    # The manifest comes first and declares every other member's size, so install checks
    # each header before unpacking it.
    assert members[0].name == "manifest.json"
    assert manifest["sizes"] == {m.name: m.size for m in members[2:]}
    assert manifest["board"] == "pi5" and manifest["platforms"] == X86
    # sori-pure-dep had only an sdist: built here into a py3-none-any wheel and packed.
    assert manifest["wheels"] == sorted([world["sori"].name, "sori_probe-1.0-py3-none-any.whl",
                                         "sori_pure_dep-1.0-py3-none-any.whl"])  # fmt: skip
    assert [s["package"] for s in manifest["source_only"]] == ["no-such-package"]
    assert [m["name"] for m in manifest["models"]] == PI5
    assert manifest["files"]["config/sori.toml"] in sums
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    store, config = tmp_path / "device-models", tmp_path / "home" / "sori.toml"
    argv = ["bundle", "install", str(bundle), "--venv", str(venv), "--dir", str(store),
            "--config", str(config), "--json"]  # fmt: skip
    assert main(argv) == 0
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert "[bundle] " in err and "no-such-package" in err  # progress and what to build
    assert [m["name"] for m in summary["models"]] == PI5
    probe = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sori_probe, sori_pure_dep, importlib."
         "metadata as m; print(sori_probe.VALUE, sori_pure_dep.NAME, m.version('sori'), "
         "m.distribution('sori').locate_file(''))"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert probe[:3] == ["42", "pure", "0.1.0"] and probe[3].startswith(str(venv))
    zipformer = PI5[0]
    fetched = world["store"] / zipformer / "model.onnx"
    assert (store / zipformer / "model.onnx").read_bytes() == fetched.read_bytes()
    assert main(["models", "verify", "--catalog", str(world["catalog"]), "--dir", str(store)]) == 0
    assert not [p for p in (store / ".partial").iterdir()]  # nothing left half-way
    from sori.core.config import load_config

    loaded = load_config(str(config))
    assert loaded.board.profile == "pi5"
    assert loaded.stt.backend == "sherpa" and loaded.stt.sherpa.model_dir == str(store / zipformer)
    # A config already there is kept unless --force.
    config.write_text('[board]\nprofile = "x86"\n')
    assert main(argv) == 0
    assert "left as it is" in capsys.readouterr().err
    assert config.read_text() == '[board]\nprofile = "x86"\n'
    assert main([*argv, "--force"]) == 0
    assert load_config(str(config)).board.profile == "pi5"


def test_a_tampered_member_installs_nothing(bundle, tmp_path, capsys):
    tampered = tmp_path / "tampered.tar"
    with tarfile.open(bundle) as src, tarfile.open(tampered, "w") as dst:
        for member in src.getmembers():
            data = src.extractfile(member).read()
            if member.name.endswith(".gguf"):
                data = data[:-1] + b"!"
            dst.addfile(member, io.BytesIO(data))
    venv, store = tmp_path / "venv", tmp_path / "models"
    config = tmp_path / "sori.toml"
    code = main(["bundle", "install", str(tampered), "--venv", str(venv), "--dir", str(store),
                 "--config", str(config)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2, err
    assert "differs from its sha256" in err and ".gguf" in err and "Nothing was installed" in err
    assert not venv.exists() and not config.exists()
    assert [p.name for p in store.iterdir()] == [".partial"]
    assert not list((store / ".partial").iterdir())


def test_a_missing_model_names_the_fetch_command(world, tmp_path, capsys):
    output = tmp_path / "b.tar"
    empty = tmp_path / "empty"
    code = main(["bundle", "--board", "pi5", "-o", str(output), "--dir", str(empty),
                 "--sori-wheel", str(world["sori"])])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert f"sori models fetch {' '.join(PI5)}" in err and "--no-models" in err
    assert not output.exists()


def _tagged_wheel(folder: Path, name: str, tag: str) -> None:
    """A wheel of `name` 1.0 whose only tag is `tag` (its content does not matter to pip
    download)."""
    dist = f"{name}-1.0.dist-info"
    files = {
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n".encode(),
        f"{dist}/WHEEL": f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {tag}\n".encode(),
    }
    with zipfile.ZipFile(folder / f"{name}-1.0-{tag}.whl", "w") as z:
        for path, data in files.items():
            z.writestr(path, data)
        z.writestr(f"{dist}/RECORD", "")


def test_an_aarch64_wheel_tagged_for_an_older_glibc_is_packed(tmp_path):
    """pip takes --platform tags literally: a wheel tagged only manylinux_2_27 (as numpy,
    pillow and sentencepiece were before their _2_28 alias) is found only because every
    glibc up to the target's is listed; one built for a newer glibc than JetPack's is not."""
    house, dest = tmp_path / "house", tmp_path / "wheels"
    house.mkdir()
    dest.mkdir()
    for name, glibc in [("old_glibc", "2_24"), ("mid_glibc", "2_27"), ("new_glibc", "2_36")]:
        _tagged_wheel(house, name, f"cp311-cp311-manylinux_{glibc}_aarch64")
    options = PackOptions("pi5", tmp_path / "b.tar", python_version="3.11", wheels_from=house)
    assert _download("old-glibc", dest, PLATFORMS["pi5"], options) is None
    assert _download("mid-glibc", dest, PLATFORMS["pi5"], options) is None
    assert _download("new-glibc", dest, PLATFORMS["jetson-orin-nano"], options) == "new-glibc"
    assert sorted(p.name.split("-")[0] for p in dest.iterdir()) == ["mid_glibc", "old_glibc"]
