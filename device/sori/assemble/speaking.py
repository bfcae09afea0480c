"""Build the speaking stage from the config: the voice, the sink, the fixed replies, and
the reply cache warmed with what the presets answer."""

from __future__ import annotations

import logging
import threading
from typing import Any

from sori.core.config import Config
from sori.core.errors import SoriError
from sori.hearing.audio.sinks import Sink, SpeakerSink, WavSink
from sori.speaking.base import Voice
from sori.speaking.cache import ReplyCache

log = logging.getLogger(__name__)

REPLIES = {
    "ko": {
        "ack": "알겠어요.",
        "holding": "잠깐만요.",
        "action_failed": "죄송해요, 기기를 제어하지 못했어요.",
        "action_unconfirmed": "명령을 보냈지만 확인하지 못했어요.",
        "not_understood": "죄송해요, 잘 모르겠어요.",
        "failed": "죄송해요, 문제가 생겼어요.",
        "timer_done": "타이머가 끝났어요.",
        "alarm_rings": "알람이 울려요. 그만이라고 말하면 꺼져요.",
        "missed": "꺼져 있는 동안 타이머나 알람 {n}개가 지나갔어요.",
    },
    "en": {
        "ack": "Okay.",
        "holding": "One moment.",
        "action_failed": "Sorry, I could not reach that device.",
        "action_unconfirmed": "I sent the command but could not confirm it.",
        "not_understood": "Sorry, I did not understand.",
        "failed": "Sorry, something went wrong.",
        "timer_done": "Your timer is done.",
        "alarm_rings": "Your alarm is ringing. Say stop to end it.",
        "missed": "{n} timers or alarms went off while I was off.",
    },
}
"""The speaker's own fixed replies, per language; cached at start."""


def replies(language: str) -> dict[str, str]:
    return REPLIES.get(language, REPLIES["en"])


def voice_backend(config: Config) -> str:
    """The TTS backend `auto` stands for: VITS when configured, else piper for English and
    espeak-ng for Korean."""
    if config.tts.backend != "auto":
        return config.tts.backend
    if config.tts.vits.model_dir:
        return "vits"
    return "piper" if config.intents.language == "en" else "espeak"


def build_voice(config: Config) -> Voice:
    """The configured voice; with `auto`, a voice that fails to load falls back to espeak-ng."""
    backend = voice_backend(config)
    try:
        return _voice(config, backend)
    except SoriError as exc:
        if config.tts.backend != "auto" or backend == "espeak":
            raise
        log.warning("%s voice unavailable (%s); speaking with espeak-ng", backend, exc)
        return _voice(config, "espeak")


def _voice(config: Config, backend: str) -> Voice:
    t = config.tts
    if backend == "piper":
        from sori.speaking.piper import PiperVoice

        return PiperVoice(
            t.piper.model, t.piper.config, t.piper.speaker or None, t.piper.length_scale
        )
    if backend == "vits":
        from sori.speaking.sherpa_vits import SherpaVitsVoice

        v = t.vits
        return SherpaVitsVoice(v.model_dir, v.voice, v.data_dir, v.speaker, v.speed, v.threads)
    from sori.speaking.espeak import EspeakVoice

    return EspeakVoice(t.espeak.voice or config.intents.language, t.espeak.words_per_minute)


def build_sink(output: str) -> Sink:
    """ "speaker" (or "speaker:DEVICE") plays aloud; anything else is a WAV file path."""
    if output == "speaker" or output.startswith("speaker:"):
        return SpeakerSink(output.partition(":")[2] or None)
    return WavSink(output)


def preset_replies(presets: Any, limit: int) -> list[str]:
    """Responses of the presets' sample phrases: the replies worth having in the cache."""
    found: dict[str, None] = {}
    for phrase in presets.phrases():
        match = presets.match(phrase)
        if match is not None and match.response:
            found[match.response] = None
            if len(found) >= limit:
                break
    return list(found)


def warm_later(cache: ReplyCache, presets: Any, limit: int) -> threading.Thread:
    """Synthesize the presets' replies on a background thread; turns need not wait."""

    def warm() -> None:
        try:
            added = cache.warm(preset_replies(presets, limit // 2))
            log.info("reply cache warmed: %d preset replies", added)
        except Exception as exc:  # a cold cache is slower, not broken
            log.warning("warming the reply cache failed: %s", exc)

    thread = threading.Thread(target=warm, name="sori-warm", daemon=True)
    thread.start()
    return thread
