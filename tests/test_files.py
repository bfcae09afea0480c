"""Replacing a user's file: atomic, mode kept, links followed, secrets private."""

from __future__ import annotations

import os
import stat

import pytest

from sori.core.files import replace_file


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_an_existing_file_keeps_its_mode(tmp_path):
    config = tmp_path / "sori.toml"
    config.write_text("old\n")
    config.chmod(0o600)
    replace_file(config, "new\n")
    assert config.read_text() == "new\n"
    assert _mode(config) == 0o600


def test_a_symlinked_file_is_written_through_the_link(tmp_path):
    real = tmp_path / "real.toml"
    real.write_text("old\n")
    link = tmp_path / "sori.toml"
    link.symlink_to(real)
    assert replace_file(link, "new\n") == real
    assert link.is_symlink()
    assert real.read_text() == "new\n"


def test_a_private_file_is_0600_new_or_old(tmp_path):
    fresh = tmp_path / "fresh.toml"
    replace_file(fresh, "password\n", private=True)
    assert _mode(fresh) == 0o600
    shared = tmp_path / "shared.toml"
    shared.write_text("x\n")
    shared.chmod(0o644)
    replace_file(shared, "password\n", private=True)
    assert _mode(shared) == 0o600


def test_a_failed_write_leaves_the_old_file_whole(tmp_path, monkeypatch):
    config = tmp_path / "sori.toml"
    config.write_text("old and whole\n")

    def full_disk(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError):
        replace_file(config, "new\n")
    assert config.read_text() == "old and whole\n"
    assert [p.name for p in tmp_path.iterdir()] == ["sori.toml"]


def test_a_leftover_temporary_file_is_never_written_through(tmp_path):
    """A crashed run (or someone else) left `.NAME.PID.tmp` as a link to another file:
    replace_file writes its own temporary, and the link's target is untouched."""
    bystander = tmp_path / "bystander"
    bystander.write_text("keep me", encoding="utf-8")
    path = tmp_path / "token"
    (tmp_path / f".token.{os.getpid()}.tmp").symlink_to(bystander)
    replace_file(path, "secret\n", private=True)
    assert path.read_text(encoding="utf-8") == "secret\n"
    assert bystander.read_text(encoding="utf-8") == "keep me"
    assert _mode(path) == 0o600
