"""`sori setup` makes the API token; the daemon reads it only from a private file or $ENV."""

from __future__ import annotations

import json
import os
import stat

import pytest

from sori.cli import main
from sori.core.config.sections import HttpConfig
from sori.core.errors import ConfigError
from sori.serving.api_access import build_access, ensure_token, load_token


def test_setup_writes_a_private_token_and_prints_the_config(tmp_path, capsys):
    path = tmp_path / "conf" / "api-token"
    assert main(["setup", "--token-file", str(path), "--non-interactive"]) == 0
    out = capsys.readouterr().out
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    token = path.read_text().strip()
    assert len(token) >= 40
    assert f'token_file = "{path}"' in out and "Authorization: Bearer" in out
    assert token not in out  # the token itself is never printed
    assert load_token(HttpConfig(token_file=str(path)), environ={}) == token


def test_setup_keeps_an_existing_token_unless_forced(tmp_path, capsys):
    path = tmp_path / "api-token"
    assert main(["setup", "--token-file", str(path)]) == 0
    first = path.read_text()
    assert main(["setup", "--token-file", str(path)]) == 2
    assert "--force" in capsys.readouterr().err
    assert path.read_text() == first
    assert main(["setup", "--token-file", str(path), "--force", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["token_file"] == str(path) and path.read_text() != first


def test_a_token_file_others_can_read_is_refused(tmp_path):
    path = tmp_path / "api-token"
    path.write_text("x" * 40)
    os.chmod(path, 0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        load_token(HttpConfig(token_file=str(path)), environ={})
    os.chmod(path, 0o600)
    assert load_token(HttpConfig(token_file=str(path)), environ={}) == "x" * 40


def test_token_sources_and_checks(tmp_path):
    env = {"SORI_API_TOKEN": "e" * 32}
    assert load_token(HttpConfig(token_file=str(tmp_path / "none")), environ=env) == "e" * 32
    assert load_token(HttpConfig(), environ={}) is None
    with pytest.raises(ConfigError, match="sori setup"):
        load_token(HttpConfig(token_file=str(tmp_path / "none")), environ={})
    with pytest.raises(ConfigError, match="at least 16"):
        load_token(HttpConfig(), environ={"SORI_API_TOKEN": "short"})
    access = build_access(HttpConfig(), "127.0.0.1", 8377, "e" * 32)
    assert access.token_ok("Bearer " + "e" * 32) and not access.token_ok("Bearer " + "e" * 31)
    assert access.host_ok("localhost:8377") and access.host_ok("[::1]:8377")
    assert not access.host_ok("evil.example:8377") and not access.host_ok("localhost:9999")
    lan = build_access(HttpConfig(allowed_hosts=["sori.local"]), "0.0.0.0", 8377, "e" * 32)
    assert lan.host_ok("sori.local:8377") and lan.needs_token("/events", False)
    assert not lan.needs_token("/health", False)


def test_without_a_token_sori_run_makes_a_private_one_and_keeps_it(private_home, monkeypatch):
    monkeypatch.delenv("SORI_API_TOKEN", raising=False)
    token = ensure_token(HttpConfig())
    path = private_home / ".config" / "sori" / "api-token"
    assert token and path.read_text().strip() == token
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert ensure_token(HttpConfig()) == token  # the next start uses the same one
    monkeypatch.setenv("SORI_API_TOKEN", "from-the-environment-0123")
    assert ensure_token(HttpConfig()) == "from-the-environment-0123"


def test_a_token_that_cannot_be_made_leaves_state_changes_refused(
    private_home, monkeypatch, caplog
):
    monkeypatch.delenv("SORI_API_TOKEN", raising=False)
    (private_home / ".config").write_text("not a folder")  # nothing can be made below it
    assert ensure_token(HttpConfig()) is None
    assert "POST /say is refused" in caplog.text


def test_a_full_disk_while_writing_the_token_leaves_no_partial_file(tmp_path):
    """RLIMIT_FSIZE = 0 makes every write fail as a full disk would (EFBIG)."""
    import resource
    import signal
    import subprocess
    import sys

    def full_disk() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))

    path = tmp_path / "api-token"
    out = subprocess.run(
        [sys.executable, "-m", "sori", "setup", "--token-file", str(path)],
        capture_output=True, text=True, timeout=60, preexec_fn=full_disk,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert "cannot write" in out.stderr and "Traceback" not in out.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_lan_bind_refusal_quotes_the_flag_as_given(tmp_path, monkeypatch, capsys):
    from sori.cli import main

    monkeypatch.delenv("SORI_API_TOKEN", raising=False)
    config = tmp_path / "sori.toml"
    config.write_text('[http]\nbind = "127.0.0.1:8378"\n')
    assert main(["run", "--config", str(config), "--http", "0:8377", "--input", "none"]) == 2
    err = capsys.readouterr().err
    assert "--http 0:8377" in err and "8378" not in err
    assert main(["run", "--config", str(config), "--http", "0:x", "--input", "none"]) == 2
    err = capsys.readouterr().err
    assert "--http 0:x" in err and "8378" not in err
