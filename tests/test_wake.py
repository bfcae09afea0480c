"""Wake phrases on real read speech (the shared ko-read clips): a word that opens a clip,
used as the wake phrase, is found in that clip and in no other, clean or noisy."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import wave
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from echo_kit import LEAD_S, REPLY, over_the_reply
from sori.core.config import Config
from sori.core.errors import ConfigError
from sori.hearing.audio.augment import make_noise, mix_at_snr, to_pcm16
from sori.hearing.audio.format import write_wav
from sori.hearing.audio.sources import FileSource

pytestmark = pytest.mark.slow

PHRASES = {  # a word that opens the clip → the clip
    "지난해": "zeroth_104_003_0019.wav",
    "현재": "zeroth_104_003_0253.wav",
    "만약": "zeroth_104_003_0374.wav",
    "생명력 이": "zeroth_104_003_0452.wav",  # "생명력이", in words the model knows
    "김범석": "zeroth_104_003_0577.wav",  # the spotter hears 징 벙 셕: found as `near`
}
DEFAULT = "소리야"  # said in no clip


@pytest.fixture(scope="module")
def clips(shared_dir) -> dict[str, Path]:
    folder = shared_dir / "audio" / "ko-read"
    with open(folder / "manifest.tsv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    for phrase, name in PHRASES.items():  # the manifest says the clip opens with it
        first = next(r["transcript"] for r in rows if r["file"] == name)
        assert first.replace(" ", "").startswith(phrase.replace(" ", ""))
    return {r["file"]: folder / r["file"] for r in rows}


@pytest.fixture(scope="module")
def config() -> Config:
    base = Config()
    return replace(base, wake=replace(base.wake, phrases=[*PHRASES, DEFAULT]))


@pytest.fixture(scope="module")
def detector(config):
    from sori.assemble.wake import build_wake_detector

    return build_wake_detector(config)


def scan(path: Path, config: Config, detector) -> list[dict]:
    from sori.testing.replaying import wake_scan

    return wake_scan(FileSource(path, config.audio.frame_ms), config, detector)


def test_sori_wake_finds_each_phrase_in_its_own_clip_and_no_other(clips):
    phrases = [a for p in [*PHRASES, DEFAULT] for a in ("--phrase", p)]
    done = subprocess.run(
        [sys.executable, "-m", "sori", "wake", *phrases, *map(str, clips.values()), "--json"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    found = [json.loads(line) for line in done.stdout.splitlines()]
    assert all(list(r) == ["file", "phrase", "start_s", "end_s", "score"] for r in found)
    assert sorted((Path(r["file"]).name, r["phrase"]) for r in found) == sorted(
        (name, phrase) for phrase, name in PHRASES.items()
    )
    for r in found:  # where the clip opens, after its leading silence
        assert 0.3 < r["start_s"] < r["end_s"] < 2.0
        assert r["score"] >= 0.0


def test_clips_in_noise_at_20_db_wake_only_their_own_phrase(clips, config, detector, tmp_path):
    rng = np.random.default_rng(11)
    mine = set(PHRASES.values())
    found_own = 0
    for i, (name, path) in enumerate(sorted(clips.items())):
        with wave.open(str(path)) as w:
            speech = np.frombuffer(w.readframes(w.getnframes()), np.int16).astype(np.float32)
        kind = ("pink", "white", "brown")[i % 3]
        noisy = mix_at_snr(speech, make_noise(kind, len(speech), rng), snr_db=20)
        out = tmp_path / f"noisy-{name}"
        write_wav(out, to_pcm16(noisy))
        heard = {r["phrase"] for r in scan(out, config, detector)}
        expected = {p for p, clip in PHRASES.items() if clip == name}
        assert heard <= expected, f"{name} in {kind} noise woke {heard - expected}"
        found_own += heard == expected and name in mine
    assert found_own >= 3  # the noisy audio is heard: its own phrase still wakes


def test_spotted_syllables_near_a_phrase_are_a_few_jamo_apart_in_as_many_syllables():
    from sori.hearing.wake.phrase import near

    assert near("김범석", "김범석")
    assert near("징벙셕", "김범석")  # this speaker's name among the fillers
    assert near("징뻠처", "김범석")  # in brown noise: ㅃ for ㅂ and ㅁ for ㅇ count half
    assert not near("징뻑처", "김범석")  # ㄱ for ㅁ is no sound-alike final
    assert near("소리가", "소리야")  # the check, not the spotter, tells these apart
    assert not near("기업이", "빅스비")  # 5 jamo apart
    assert not near("김범", "김범석") and not near("김범석이", "김범석")


def test_a_phrase_is_found_wherever_its_speech_falls_on_the_spotter_s_frames(clips, detector):
    """김범석 after 0 to 32 ms of silence, every 2 ms: the spotter's syllables change with
    where the speech falls on its 30 ms frames (at 12 ms it heard a run just too far from
    the phrase to check, 징 벅 처); that near miss gets a second look half a frame later,
    and the phrase is found at every offset."""
    with wave.open(str(clips[PHRASES["김범석"]])) as w:
        pcm = w.readframes(w.getnframes())
    missed = []
    for offset_ms in range(0, 33, 2):
        audio = bytes(32 * offset_ms) + pcm
        stream, fed, found = detector.open_stream(), 0, []
        while not stream.done and fed < len(audio):
            found += stream.feed(audio[fed : fed + 640])
            fed += 640
        found += stream.finish()
        if [d.phrase for d in found] != ["김범석"]:
            missed.append(offset_ms)
    assert missed == []


def test_the_spotter_stops_once_the_longest_phrase_could_have_ended(clips, detector):
    """Only an utterance's start can hold a wake phrase: the spotter (and the denoiser
    before it) hears LEAD_S and the longest phrase said slowly, then nothing more."""
    from sori.hearing.wake.phrase import LEAD_S, SYLLABLE_S, TAIL_S

    phrase = detector
    assert phrase.spot_s == pytest.approx(LEAD_S + len("생명력이") * SYLLABLE_S + TAIL_S)
    with wave.open(str(clips["zeroth_104_003_0193.wav"])) as w:
        pcm = w.readframes(w.getnframes())  # 8.8 s, opening with no phrase of these
    stream, fed = phrase.open_stream(), 0
    while not stream.done and fed < len(pcm):
        stream.feed(pcm[fed : fed + 640])
        fed += 640
    assert stream.done and fed / 32000 == pytest.approx(phrase.spot_s, abs=0.021)


def test_a_phrase_spotted_faster_than_anyone_speaks_is_not_checked(detector, monkeypatch):
    """The spotter's grammar weight can pull a fragment onto a phrase (소리야 in 0.21 s
    on a cut "사" checked at +11): under FASTEST_SYLLABLE_S a syllable it is no candidate."""
    from sori.hearing.wake.phrase import FASTEST_SYLLABLE_S

    phrase = getattr(detector, "inner", detector)
    checked = []
    monkeypatch.setattr(phrase, "score", lambda spoken, window: checked.append(spoken) or -50.0)
    shortest = FASTEST_SYLLABLE_S * len(DEFAULT)
    for length_s in (shortest - 0.03, shortest + 0.03, 0.6):
        stream = phrase.open_stream()
        stream.feed(bytes(32000))  # a second of the utterance's start
        start = stream._origin_s + 0.12  # the spotter's clock runs on across streams
        stream._done = [{"word": DEFAULT, "start": start, "end": start + length_s}]
        assert stream._candidates() == []
        stream.close()
    assert checked == [DEFAULT, DEFAULT]  # the two that a person could have said


def test_a_phrase_said_fast_still_wakes(clips, config, detector, tmp_path):
    """The floor on a syllable's length is below fast speech: 지난해 at 1.5 times its
    read tempo (0.26 s, pitch kept) is found."""
    fast = tmp_path / "fast.wav"
    subprocess.run(
        ["sox", str(clips[PHRASES["지난해"]]), str(fast), "tempo", "-s", "1.5"], check=True
    )
    assert [r["phrase"] for r in scan(fast, config, detector)] == ["지난해"]


def test_a_word_the_model_does_not_know_is_refused_with_a_spelling_it_knows(config):
    from sori.assemble.wake import build_wake_detector

    with pytest.raises(ConfigError) as refused:
        build_wake_detector(config, phrases=["생명력이"])
    assert "'생명력이'" in str(refused.value)
    assert '"생명력 이"' in str(refused.value)


def test_sori_wake_tells_each_unreadable_file_and_scans_the_rest(clips, tmp_path):
    """The same file opening as `sori replay` (commands/inputs.py): every bad name told on
    stderr, the good file still scanned, exit 2."""
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    good = clips[PHRASES["현재"]]
    done = subprocess.run(
        [sys.executable, "-m", "sori", "wake", "--phrase", "현재", str(empty),
         str(tmp_path / "missing.wav"), str(good), "--json"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert f"sori wake: {empty}: empty file" in done.stderr
    assert "sori wake: " in done.stderr and "missing.wav: no such file" in done.stderr
    found = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(Path(r["file"]).name, r["phrase"]) for r in found] == [(good.name, "현재")]


def test_sori_wake_with_no_readable_file_exits_2_before_the_model_loads(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "sori", "wake", str(tmp_path / "missing.wav")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert "missing.wav: no such file" in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""


def test_wake_denoise_auto_hears_a_phrase_white_noise_masks_for_the_raw_detector(
    clips, config, tmp_path, monkeypatch
):
    """wake.denoise = "auto": the clip that opens with 육십, in white noise at 15 dB SNR (a
    fan), is missed by the detector hearing it raw and found, where it is said, when the
    pipeline's one decision (audio.denoise = "auto") denoises it; the clean clip (a clear
    voice) is heard raw and found too."""
    from sori.assemble import hearing
    from sori.assemble.wake import build_wake_detector

    made = []
    built = hearing.auto_denoise

    def recorded(config):  # noqa: ANN001, ANN202
        made.append(built(config))
        return made[-1]

    monkeypatch.setattr(hearing, "auto_denoise", recorded)
    clean = clips["zeroth_104_003_0526.wav"]
    with wave.open(str(clean)) as w:
        speech = np.frombuffer(w.readframes(w.getnframes()), np.int16).astype(np.float32)
    white = make_noise("white", len(speech), np.random.default_rng(0))
    noisy = tmp_path / "white-15db.wav"
    write_wav(noisy, to_pcm16(mix_at_snr(speech, white, snr_db=15)))
    heard = {}
    for mode in ("off", "auto"):
        wake = replace(config.wake, phrases=["육십", DEFAULT], denoise=mode)
        listening = replace(config, wake=wake)
        detector = build_wake_detector(listening)
        heard[mode] = scan(noisy, listening, detector)
    assert heard["off"] == [] and not made[0].decisions  # "off": raw, nothing decided
    assert [r["phrase"] for r in heard["auto"]] == ["육십"]
    assert 0.3 < heard["auto"][0]["start_s"] < heard["auto"][0]["end_s"] < 2.0
    assert made[1].decisions[0].denoised
    assert [r["phrase"] for r in scan(clean, listening, detector)] == ["육십"]
    assert not made[2].decisions[0].denoised  # a clear voice: raw


@pytest.fixture(scope="module")
def reply_echo(config) -> np.ndarray:
    from echo_kit import sori_says

    return sori_says(config, REPLY)


def heard_live(audio: np.ndarray, config: Config, detector, said: np.ndarray | None) -> list:
    """The hearing events of `audio` heard live, while Sori's speaker played `said` from
    `LEAD_S` (None: it was silent)."""
    from sori.assemble.hearing import build_hearing
    from sori.hearing.audio.played import PlayedAudio
    from sori.hearing.audio.ring import FrameChunker
    from sori.hearing.pacing import ReplayClock, replay
    from sori.serving.conversation.listening import Conversation

    conversation = Conversation(gated=True, live=True)
    if said is not None:
        conversation.echo = PlayedAudio()
        conversation.echo.add(int(LEAD_S * 1e9), to_pcm16(said), 16000)
    clock = ReplayClock()
    hearing = build_hearing(config, None, None, clock, 0, detector, conversation)
    frames = FrameChunker(config.audio.frame_ms).push(to_pcm16(audio))
    return list(replay(frames, hearing, clock))


def wakes_in(audio: np.ndarray, config: Config, detector, said: np.ndarray | None) -> list:
    """Wake events of `audio` heard live (see `heard_live`)."""
    from sori.core.events import WakeDetected

    return [e for e in heard_live(audio, config, detector, said) if isinstance(e, WakeDetected)]


def test_the_gate_says_when_an_utterance_can_no_longer_wake(clips, config, detector):
    """A phrase begins an utterance: once the spotter has heard an utterance's start with
    no phrase in it, the gate says it listens no more (`WakeListenEnded`, once), and a
    speaker that hears another's claim then can pass on it at once. An utterance that
    opens with a phrase wakes instead."""
    from sori.core.events import SpeechStarted, WakeDetected, WakeListenEnded

    for name, wakes in (("zeroth_104_003_0193.wav", False), (PHRASES["현재"], True)):
        with wave.open(str(clips[name])) as w:
            speech = np.frombuffer(w.readframes(w.getnframes()), np.int16).astype(np.float32)
        silence = np.zeros(8000, np.float32)
        events = heard_live(np.concatenate([silence, speech, silence]), config, detector, None)
        first = next(e for e in events if isinstance(e, SpeechStarted))
        ended = [e for e in events if isinstance(e, WakeListenEnded)]
        woke = [e for e in events if isinstance(e, WakeDetected)]
        if wakes:
            assert [e.utterance_id for e in woke] == [first.utterance_id]
            assert first.utterance_id not in [e.utterance_id for e in ended]
            continue
        assert woke == [] and [e.utterance_id for e in ended][:1] == [first.utterance_id]
        assert len({e.utterance_id for e in ended}) == len(ended)  # once each
        after_s = (ended[0].t_ns - first.audio_start_ns) / 1e9
        assert detector.spot_s - 0.3 < after_s < detector.spot_s + 0.1, after_s


def test_while_sori_speaks_a_phrase_said_over_its_voice_wakes_mid_utterance(
    clips, config, detector, reply_echo
):
    """The voice detector hears Sori's reply and the phrase said over it as one utterance:
    while Sori speaks, the detector listens all through it (fresh streams every rearm_s);
    when Sori is silent, a phrase in the middle of an utterance is no wake phrase."""
    audio = over_the_reply(reply_echo, clips[PHRASES["현재"]], at_s=3.0, below_db=20)
    found = wakes_in(audio, config, detector, said=reply_echo)
    assert [e.phrase for e in found] == ["현재"]
    said_at = LEAD_S + 3.0 + 0.66  # "현재" is 0.66-1.05 s into its clip
    assert said_at - 0.2 < found[0].start_ns / 1e9 < found[0].end_ns / 1e9 < said_at + 0.6
    assert wakes_in(audio, config, detector, said=None) == []


def test_a_phrase_in_sori_s_own_voice_is_no_wake_phrase(clips, config, detector, reply_echo):
    """Sori's speaker says "현재" itself, 3 s into a reply (a recording it plays): the
    microphone hears it, and it is looked for in what Sori was saying then and ignored.
    Heard while Sori played only silence, the same audio wakes."""
    with wave.open(str(clips[PHRASES["현재"]])) as w:
        clip = np.frombuffer(w.readframes(int(2.5 * w.getframerate())), np.int16)
    said = np.concatenate([reply_echo[:48000], clip.astype(np.float32), reply_echo[48000:]])
    heard = np.concatenate([np.zeros(int(LEAD_S * 16000), np.float32), said])
    assert [e.phrase for e in wakes_in(heard, config, detector, said=np.zeros_like(said))] == [
        "현재"
    ]
    assert wakes_in(heard, config, detector, said=said) == []


def test_a_check_during_the_warm_up_stops_it_and_scores_as_a_cold_detector(clips, config):
    """The warm-up shares the check's decoders: a check that comes while it is within a
    decode stops it and starts from clean decoders, so the score is what it would be."""
    import threading
    import time

    from sori.assemble.wake import build_wake_detector
    from sori.hearing.audio.format import read_file

    window = read_file(clips["zeroth_104_003_0253.wav"])[: 32000 * 3 // 2]  # "현재 …"
    cold = build_wake_detector(config).score("현재", window)
    warming = build_wake_detector(config)
    warming.warm_up_later(60.0)  # far longer than the test waits
    deadline = time.monotonic() + 30
    while not warming._half_warmed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert warming._half_warmed  # within a decode
    assert warming.score("현재", window) == cold
    assert not warming._warming  # stopped
    time.sleep(0.3)  # its next piece sees the check and returns
    assert not [t for t in threading.enumerate() if t.name == "sori-wake-warm"]


def test_a_check_that_ends_at_vosk_s_endpoint_leaves_nothing_to_the_next(clips, detector):
    """vosk's final result right after its own endpoint is empty and keeps the features,
    which the next check would decode first (a window's score fell from -26 to -45 after
    one). Every check scores from clean decoders."""
    import vosk

    from sori.hearing.audio.format import read_file

    window = read_file(clips["zeroth_104_003_0253.wav"])[: 32000 * 2]  # "현재 …"
    speech = read_file(clips["picovoice_leopard_test_ko.wav"]) + bytes(32000 * 3)
    step = 6400  # the check feeds vosk a fifth of a second at a time
    fresh = vosk.KaldiRecognizer(detector.model, 16000)
    ends = next(at for at in range(step, len(speech), step)
                if fresh.AcceptWaveform(speech[at - step : at]))  # fmt: skip
    first = detector.score("현재", window)
    detector.score("현재", speech[:ends])  # ends where vosk's endpoint closes it
    assert detector.score("현재", window) == first


def test_the_nearer_speaker_hears_the_phrase_clearer_by_what_it_is_nearer(clips, config, detector):
    """Two speakers in one room hear "현재" over the same room noise, one 10 dB fainter (the
    farther): each wakes, and the wake events' `snr_db`, which the speakers compare to
    choose who answers (`[wake] arbitrate`), differ by about those 10 dB."""
    with wave.open(str(clips[PHRASES["현재"]])) as w:
        speech = np.frombuffer(w.readframes(w.getnframes()), np.int16).astype(np.float32)
    noise = make_noise("pink", len(speech), np.random.default_rng(5))
    near = mix_at_snr(speech, noise, snr_db=25)
    far = near - speech * (1 - 10 ** (-10 / 20))  # the same noise, the speech 10 dB down
    heard = {name: wakes_in(audio, config, detector, None) for name, audio in
             (("near", near), ("far", far))}  # fmt: skip
    assert [[e.phrase for e in events] for events in heard.values()] == [["현재"], ["현재"]]
    near_db, far_db = heard["near"][0].snr_db, heard["far"][0].snr_db
    assert 6 < near_db - far_db < 14, (near_db, far_db)
    assert far_db > 3  # the phrase stands above the floor even at the farther speaker
