"""Shared test data for the thinking tests."""

from __future__ import annotations

from sori.thinking.schema import IntentSpec, Vocabulary

VOCABULARY = Vocabulary(
    intents=(
        IntentSpec("HassTurnOn", ("name", "area", "domain")),
        IntentSpec("HassTurnOff", ("name", "area", "domain")),
        IntentSpec("HassLightSet", ("name", "area", "brightness")),
        IntentSpec("HassClimateSetTemperature", ("name", "area", "temperature")),
        IntentSpec("HassStartTimer", ("hours", "minutes", "seconds", "name")),
        IntentSpec("HassShoppingListAddItem", ("item",)),
        IntentSpec("HassGetCurrentTime", ()),
    ),
    areas=("거실", "안방", "주방"),
    devices=("거실 조명", "안방 에어컨", "공기 청정기"),
    domains=("climate", "fan", "light"),
)
