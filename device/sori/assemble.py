"""Build the speaking and acting stages from the config: voices, sinks, handlers.

The one place (with `commands.hearing` for hearing) that picks concrete backends by name;
each backend module is imported only when chosen.
"""

from __future__ import annotations

import logging
import os

from sori.actions import ActionRegistry, LocalHandler, Route, Timers
from sori.actions.base import Handler
from sori.audio.sinks import Sink, SpeakerSink, WavSink
from sori.clock import Clock
from sori.config import Config
from sori.errors import SoriError
from sori.home import Home
from sori.tts.base import Voice

log = logging.getLogger(__name__)

REPLIES = {
    "ko": {
        "ack": "알겠어요.",
        "action_failed": "죄송해요, 기기를 제어하지 못했어요.",
        "action_unconfirmed": "명령을 보냈지만 확인하지 못했어요.",
        "not_understood": "죄송해요, 잘 모르겠어요.",
        "failed": "죄송해요, 문제가 생겼어요.",
        "timer_done": "타이머가 끝났어요.",
    },
    "en": {
        "ack": "Okay.",
        "action_failed": "Sorry, I could not reach that device.",
        "action_unconfirmed": "I sent the command but could not confirm it.",
        "not_understood": "Sorry, I did not understand.",
        "failed": "Sorry, something went wrong.",
        "timer_done": "Your timer is done.",
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
        from sori.tts.piper import PiperVoice

        return PiperVoice(
            t.piper.model, t.piper.config, t.piper.speaker or None, t.piper.length_scale
        )
    if backend == "vits":
        from sori.tts.sherpa_vits import SherpaVitsVoice

        v = t.vits
        return SherpaVitsVoice(v.model_dir, v.voice, v.data_dir, v.speaker, v.speed, v.threads)
    from sori.tts.espeak import EspeakVoice

    return EspeakVoice(t.espeak.voice or config.intents.language, t.espeak.words_per_minute)


def build_sink(output: str) -> Sink:
    """ "speaker" (or "speaker:DEVICE") plays aloud; anything else is a WAV file path."""
    if output == "speaker" or output.startswith("speaker:"):
        return SpeakerSink(output.partition(":")[2] or None)
    return WavSink(output)


def used_handlers(config: Config) -> set[str]:
    return {config.actions.default_handler} | {d.handler for d in config.home.devices if d.handler}


def build_handlers(config: Config) -> dict[str, Handler]:
    """Every handler some device uses (plus the dry run), connected lazily."""
    from sori.actions.dry_run import DryRunHandler

    handlers: dict[str, Handler] = {"dry_run": DryRunHandler()}
    used = used_handlers(config)
    timeout = config.actions.timeout_s
    if "mqtt" in used:
        from sori.actions.mqtt import MqttHandler

        m = config.mqtt
        mqtt = MqttHandler(
            m.url, m.topic, m.qos, m.retain, m.client_id, m.username,
            os.environ.get(m.password_env, ""), timeout_s=timeout, protocol=m.protocol,
        )  # fmt: skip
        mqtt.start()
        handlers["mqtt"] = mqtt
    if "home_assistant" in used:
        from sori.actions.home_assistant import HomeAssistantHandler

        ha = config.home_assistant
        handlers["home_assistant"] = HomeAssistantHandler(ha.url, ha.token_env, timeout)
    if "webhook" in used:
        from sori.actions.webhook import WebhookHandler

        handlers["webhook"] = WebhookHandler(config.webhook.url, config.webhook.headers, timeout)
    if "shell" in used:
        from sori.actions.shell import ShellHandler

        s = config.shell
        handlers["shell"] = ShellHandler(s.commands, s.allow, s.timeout_s)
    return handlers


def routes(config: Config) -> dict[str, Route]:
    return {d.id: Route(d.handler, d.topic) for d in config.home.devices}


def build_registry(
    config: Config, home: Home, timers: Timers, clock: Clock, handlers: dict[str, Handler]
) -> ActionRegistry:
    return ActionRegistry(
        home,
        handlers,
        LocalHandler(timers, config.intents.language),
        routes(config),
        config.actions.default_handler,
        config.actions.timeout_s,
        clock,
    )
