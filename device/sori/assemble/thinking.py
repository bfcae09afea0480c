"""Build the thinking tiers from the config: presets + local model + edge → a Router.

Shared by `sori ask` and the daemon.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sori.core.config import Config, EdgeConfig, LlmConfig, RouterConfig
from sori.core.errors import SoriError
from sori.thinking.edge import EdgeClient, EdgeSettings, Endpoint, endpoint_key
from sori.thinking.home_assistant import HaConversation
from sori.thinking.local import DEFAULT_MODEL_FILE, LocalLLM
from sori.thinking.router import Router, RouterSettings
from sori.thinking.schema import IntentSpec, Vocabulary
from sori.understanding.intents import Presets

log = logging.getLogger(__name__)

# Slots of Home Assistant's intents (developers.home-assistant.io/docs/intent_builtin), as far
# as a spoken command fills them. Intents not listed take a name and an area.
INTENT_SLOTS: dict[str, tuple[str, ...]] = {
    "HassTurnOn": ("name", "area", "domain"),
    "HassTurnOff": ("name", "area", "domain"),
    "HassToggle": ("name", "area", "domain"),
    "HassLightSet": ("name", "area", "brightness"),
    "HassClimateSetTemperature": ("name", "area", "temperature"),
    "HassClimateGetTemperature": ("name", "area"),
    "HassGetState": ("name", "area", "domain"),
    "HassGetWeather": ("name",),
    "HassGetCurrentTime": (),
    "HassGetCurrentDate": (),
    "HassSetPosition": ("name", "area", "position"),
    "HassSetVolume": ("name", "area", "volume_level"),
    "HassFanSetSpeed": ("name", "area", "percentage"),
    "HassStartTimer": ("hours", "minutes", "seconds", "name"),
    "HassCancelTimer": ("name",),
    "HassPauseTimer": ("name",),
    "HassUnpauseTimer": ("name",),
    "HassTimerStatus": ("name",),
    "HassCancelAllTimers": (),
    "HassNevermind": (),
    "HassShoppingListAddItem": ("item",),
    "HassListAddItem": ("item", "name"),
    "HassVacuumStart": ("name", "area"),
    "HassVacuumReturnToBase": ("name", "area"),
    "HassVacuumCleanArea": ("area",),
}


def intent_names(presets: Presets) -> list[str]:
    """The intents the local model may map onto: those the loaded packs can produce.

    The one place that decides this, so the source can change without touching the tiers.
    """
    return presets.intent_names() or sorted(INTENT_SLOTS)


_SLOT_REFERENCE = re.compile(r"\{([A-Za-z][\w]*)(?::([A-Za-z][\w]*))?\}")


def intent_slots(presets: Presets) -> dict[str, tuple[str, ...]]:
    """Slots of each intent as the packs use them ({area}, {name}, {brightness}, fixed slots),
    plus those Home Assistant's intent takes; hidden lists ({_light}) are not slots."""
    found: dict[str, dict[str, None]] = {}
    for block in presets.blocks:
        names = found.setdefault(block.intent, {})
        for template in block.templates:
            for match in _SLOT_REFERENCE.finditer(template):
                names[match.group(2) or match.group(1)] = None
        names.update(dict.fromkeys(k for k in block.slots if not k.startswith("_")))
    return {
        intent: tuple(dict.fromkeys((*sorted(names), *INTENT_SLOTS.get(intent, ()))))
        for intent, names in found.items()
    }


def vocabulary(presets: Presets) -> Vocabulary:
    """Known intents with their slots, plus the home's area, device and domain names."""
    home = presets.home
    from_packs = intent_slots(presets)
    return Vocabulary(
        intents=tuple(
            IntentSpec(name, from_packs.get(name) or INTENT_SLOTS.get(name, ("name", "area")))
            for name in intent_names(presets)
        ),
        areas=tuple(dict.fromkeys(a.name for a in home.areas)),
        devices=tuple(dict.fromkeys(d.name for d in home.devices)),
        domains=tuple(sorted({d.domain for d in home.devices})),
        extra={
            "device_class": tuple(sorted({d.device_class for d in home.devices if d.device_class}))
        },
    )


def local_from_config(llm: LlmConfig, vocab: Vocabulary) -> LocalLLM:
    """The local model, not loaded yet (it loads on first use, or call `load()`)."""
    return LocalLLM(
        llm.model,
        vocabulary=vocab,
        prompt_format=llm.prompt_format,
        threads=llm.threads,
        n_ctx=llm.n_ctx,
        n_batch=llm.n_batch,
        max_tokens=llm.max_tokens,
        intent_max_tokens=llm.intent_max_tokens,
        temperature=llm.temperature,
        seed=llm.seed,
    )


def edge_from_config(edge: EdgeConfig) -> EdgeClient | None:
    """The edge client, or None when no endpoint is configured."""
    if not edge.endpoints:
        return None
    names = {f.name for f in dataclasses.fields(EdgeSettings)}
    settings = EdgeSettings(**{k: v for k, v in dataclasses.asdict(edge).items() if k in names})
    endpoints = [
        Endpoint(
            url=e.url,
            ttfb_threshold_ms=e.ttfb_threshold_ms,
            api_key=endpoint_key(e.api_key, e.api_key_env),
            ca_file=e.ca_file,
            first_byte_timeout_ms=e.first_byte_timeout_ms,
        )
        for e in edge.endpoints
    ]
    return EdgeClient(endpoints, settings)


def conversation_from_config(config: Config) -> HaConversation | None:
    """Home Assistant's conversation agent as a tier, or None when it is off."""
    ha = config.home_assistant
    if not ha.conversation:
        return None
    token = os.environ.get(ha.token_env, "")
    if not token:
        log.warning(
            "home_assistant.conversation is on but $%s is empty: the tier is off", ha.token_env
        )
        return None
    return HaConversation(
        ha.url, token, ha.agent_id, ha.language or config.intents.language,
        ha.conversation_timeout_s,
    )  # fmt: skip


def local_answers(config: Config) -> bool:
    """Whether the local model answers open questions: as `router.local_answers` says, or
    with "auto", by the model's measured answer_score in the catalog (a model never judged
    answers)."""
    chosen = config.router.local_answers
    if chosen != "auto":
        return chosen == "on"
    from sori.provisioning.models.catalog import load_catalog

    name = Path(config.llm.model).name if config.llm.model else DEFAULT_MODEL_FILE
    score = next((e.answer_score for e in load_catalog() if e.name == name), -1.0)
    return score < 0 or score >= config.router.local_answer_floor


def router_settings(
    router: RouterConfig, language: str, answers_locally: bool = True
) -> RouterSettings:
    return RouterSettings(
        preset_threshold=router.preset_threshold,
        local_intent_threshold=router.local_intent_threshold,
        first_token_budget_ms=router.first_token_budget_ms,
        local_deadline_ms=router.local_deadline_ms,
        memory_turns=router.memory_turns,
        escalate_min_chars=router.escalate_min_chars,
        escalate_words=tuple(router.escalate_words),
        deep_words=tuple(router.deep_words),
        language=language,
        local_answers=answers_locally,
    )


def build_router(
    config: Config, presets: Presets, local: LocalLLM | None = None
) -> tuple[Router, LocalLLM, EdgeClient | None]:
    """The router with all its tiers; the caller closes the edge client and the Home
    Assistant tier (`router.home`) when done."""
    local = local or local_from_config(config.llm, vocabulary(presets))
    edge = edge_from_config(config.edge)
    router = Router(
        presets.match,
        local,
        edge,
        router_settings(config.router, config.intents.language, local_answers(config)),
        home=conversation_from_config(config),
    )
    return router, local, edge


def start_thinking(
    config: Config, presets: Presets
) -> tuple[Router | None, list[Callable[[], Any]], list[Callable[[], Any]], list[threading.Thread]]:
    """The language-model router, its local model loading in the background; with what
    shutdown needs: closers, stoppers and the loading thread. (None, [], [], []) when the
    tiers cannot be built: turns are then answered "not understood".

    The daemon has matched the presets already, so the router starts at the local model.
    """
    try:
        router, local, edge = build_router(config, presets)
    except SoriError as exc:
        log.warning("language-model tiers unavailable, answering 'not understood': %s", exc)
        return None, [], [], []
    router.presets = None

    def preload() -> None:
        try:
            local.load()
        except Exception as exc:  # the router reports a failing tier per turn
            log.warning("local language model did not load: %s", exc)

    loaders = []
    if preloads(config.llm.preload, router.settings.local_answers):
        loaders.append(threading.Thread(target=preload, name="sori-llm-load", daemon=True))
        loaders[0].start()
    else:
        log.info("local model loads at the first sentence the presets do not know")

    # Freed while the interpreter runs; Daemon.close bounds the wait with its deadline.
    closers = [local.close, *([edge.aclose] if edge is not None else [])]
    if router.home is not None:
        closers.append(router.home.aclose)
    return router, closers, [local.stop], loaders


def preloads(preload: str, answers: bool) -> bool:
    """Whether the daemon loads the local model at start (`llm.preload`): "auto" does when
    the model answers open questions, where the first question should not wait for it."""
    return preload == "on" or (preload == "auto" and answers)
