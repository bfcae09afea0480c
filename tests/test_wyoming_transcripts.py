"""Wyoming `transcribe` hears a clip as `sori replay` hears the same file with the same
config (the same pipeline: voice detector, both recognizer passes, their choice), and
hands on plain words: none of the recognizer's own marks (`[2]`, `(천)`, `/`)."""

from __future__ import annotations

import re
import wave

import pytest

pytest.importorskip("wyoming")

from wyoming.asr import Transcribe, Transcript  # noqa: E402

from sori.assemble.understanding import home_from_config  # noqa: E402
from sori.core.config import EXAMPLE_CONFIG, load_config  # noqa: E402
from sori.hearing.audio.sources import FileSource  # noqa: E402
from sori.hearing.stt.tokens import spoken_text  # noqa: E402
from sori.serving.wyoming_server import load_services  # noqa: E402
from sori.testing.replaying import replay_source  # noqa: E402
from wyoming_kit import audio_events, serving, talk  # noqa: E402

pytestmark = pytest.mark.slow

MARKS = re.compile(r"\[|\]|\(|\)|(?<!\S)/(?!\S)")


@pytest.fixture(scope="module", name="config")
def config_fixture(tmp_path_factory):
    """The example config, without start-up warm-up, and without the room's denoiser
    (a client's audio is not the room's; denoising runs its own threads, and a replay
    through it is not bit-for-bit repeatable)."""
    text = EXAMPLE_CONFIG.read_text(encoding="utf-8")
    text = text.replace("warm_up_s = 6.0", "warm_up_s = 0.0")
    text = re.sub(r'(?m)^denoise = "auto"', 'denoise = "off"', text, count=1)
    path = tmp_path_factory.mktemp("transcripts") / "sori.toml"
    path.write_text(text, encoding="utf-8")
    config = load_config(str(path))
    assert config.audio.denoise == "off"
    return config


@pytest.fixture(scope="module", name="services")
def services_fixture(config):
    return load_services(config, home_from_config(config.home))


def clips(shared_dir):
    """Every other shared clip by name, from the second: eight, four of whose numbers vosk
    writes with its marks ("[3] 월", "이 (천) (십) 팔 년"). A path that hears differently
    shows on any clip; all sixteen took 77 s of the suite."""
    return sorted((shared_dir / "audio" / "ko-read").glob("*.wav"))[1::2]


def test_transcribe_equals_replay_on_the_shared_clips(config, services, shared_dir):
    found = clips(shared_dir)
    assert len(found) >= 8
    differ, marked = [], []
    with serving(services) as server:
        for path in found:
            with wave.open(str(path)) as w:
                pcm = w.readframes(w.getnframes())
                fmt = (w.getframerate(), w.getsampwidth(), w.getnchannels())
            got = talk(server, [Transcribe(language="ko"), *audio_events(pcm, *fmt)],
                       ("transcript",))  # fmt: skip
            heard = Transcript.from_event(got[-1]).text
            records = replay_source(
                FileSource(path, config.audio.frame_ms), config, services.recognizer,
                services.understanding,
            )  # fmt: skip
            replayed = " ".join(r["transcript"] for r in records if r["transcript"])
            if heard != replayed:
                differ.append((path.name, heard, replayed))
            if MARKS.search(heard):
                marked.append((path.name, heard))
    assert differ == []
    assert marked == []


def test_the_recognizer_marks_become_words():
    assert spoken_text("[2] 억 [1] / 주었다") == "2 억 1 주었다"
    assert spoken_text("이 (천) (십) 팔 년") == "이 천 십 팔 년"
    assert spoken_text("[1] 인 한 여자") == "1 인 한 여자"
    assert spoken_text("에어컨 꺼 줘") == "에어컨 꺼 줘"
