"""`sori replay`: the CLI over the real pipeline (webrtcvad, vosk, presets)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hearing_fixtures import english_speech
from sori.hearing.audio.format import RATE_HZ, write_wav
from sori.testing.replaying import FIELDS

pytestmark = pytest.mark.slow


def sori(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sori", "replay", "--no-wake", *args],
        input=stdin,
        capture_output=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def replayed() -> list[dict]:
    done = sori(str(english_speech().path), "--json")
    assert done.returncode == 0, done.stderr.decode()
    return [json.loads(line) for line in done.stdout.decode().splitlines()]


def test_one_json_line_per_utterance_with_exactly_the_documented_fields(replayed):
    speech = english_speech()
    assert len(replayed) == len(speech.spans_s) == 3
    for record, (start_s, end_s) in zip(replayed, speech.spans_s, strict=True):
        assert list(record) == list(FIELDS)
        assert record["file"] == str(speech.path)
        assert abs(record["speech_start_s"] - start_s) < 0.15
        assert abs(record["speech_end_s"] - end_s) < 0.2
        assert record["final_s"] >= record["speech_end_s"]
        assert record["rtf"] > 0
        if record["intent"] is None:
            assert record["commit_s"] is None and record["commit_latency_ms"] is None
        else:
            assert record["commit_latency_ms"] == pytest.approx(
                (record["commit_s"] - record["speech_end_s"]) * 1000, abs=2
            )


def test_text_output_and_raw_stdin_give_the_same_utterances(replayed):
    raw = english_speech().pcm
    empty = sori("-", "--format", "s16le", "--rate", str(RATE_HZ), stdin=b"")
    assert empty.returncode == 2
    assert b"sori replay: stdin: no audio" in empty.stderr
    done = sori("-", "--format", "s16le", "--rate", str(RATE_HZ), stdin=raw)
    lines = done.stdout.decode().splitlines()
    assert done.returncode == 0, done.stderr.decode()
    assert len(lines) == 3 and all(line.startswith("stdin\t") for line in lines)
    assert [line.split("\t")[1] for line in lines] == [
        f"{r['speech_start_s']:.2f}-{r['speech_end_s']:.2f}s" for r in replayed
    ]


def test_realtime_pacing_gives_the_same_boundaries(tmp_path, replayed):
    speech = english_speech()
    cut = int((speech.spans_s[0][1] + 0.8) * RATE_HZ) * 2
    path = tmp_path / "first.wav"
    write_wav(path, speech.pcm[:cut])
    done = sori(str(path), "--json", "--realtime")
    assert done.returncode == 0, done.stderr.decode()
    (record,) = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert record["speech_start_s"] == pytest.approx(replayed[0]["speech_start_s"], abs=0.03)
    assert record["speech_end_s"] == pytest.approx(replayed[0]["speech_end_s"], abs=0.03)


def test_bad_files_exit_2_with_a_message_and_no_traceback(tmp_path):
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    text = tmp_path / "notes.wav"
    text.write_text("not audio\n" * 50)
    done = sori(str(empty), str(text), str(tmp_path / "missing.wav"))
    err = done.stderr.decode()
    assert done.returncode == 2
    assert "Traceback" not in err
    assert f"sori replay: {empty}: empty file" in err
    assert f"sori replay: {text}: not a readable audio file" in err
    assert "missing.wav: no such file" in err
    assert done.stdout == b""
