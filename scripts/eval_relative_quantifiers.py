#!/usr/bin/env python3
"""Accuracy of the presets on spontaneous Korean of three families (issue 27): quantifiers,
relative changes and everyday shortcuts. Commands must match the expected intent (and the
slots listed); look-alikes must match nothing (or, where listed, a non-acting intent).

The sentences are written apart from the tests' (tests/intents/test_quantifiers.py,
test_relative_and_shortcuts.py), as a household would say them to the example home
(device/sori.example.toml, speaker in 거실).

    .venv/bin/python scripts/eval_relative_quantifiers.py [--json] [--verbose]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ALL_LIGHTS = {"domain": "light", "name": "all"}
# (sentence, intent, slots that must be there); intent None: a look-alike, nothing acts
FAMILIES: dict[str, list[tuple[str, str | None, dict]]] = {
    "quantifiers": [
        ("모든 불 좀 꺼 줄래", "HassTurnOff", ALL_LIGHTS),
        ("불 다 켜 줘", "HassTurnOn", ALL_LIGHTS),
        ("집에 있는 불 전부 꺼 주세요", "HassTurnOff", ALL_LIGHTS),
        ("전체 조명 꺼 줘", "HassTurnOff", ALL_LIGHTS),
        ("조명 전부 다 켜", "HassTurnOn", ALL_LIGHTS),
        ("모든 조명을 빨간색으로 바꿔 줘", "HassLightSet", {**ALL_LIGHTS, "color": "red"}),
        ("불 전부 초록색으로", "HassLightSet", {**ALL_LIGHTS, "color": "green"}),
        ("모든 불 밝기 오십 프로로 해 줘", "HassLightSet", {**ALL_LIGHTS, "brightness": 50}),
        ("모든 전등 어둡게 해 줘", "HassLightSet", {**ALL_LIGHTS, "brightness_step": "down"}),
        ("에어컨 다 꺼 줘", "HassTurnOff", {"domain": "climate", "name": "all"}),
        ("모든 에어컨 켜 줘", "HassTurnOn", {"domain": "climate", "name": "all"}),
        ("집에 있는 에어컨 전부 이십오 도로", "HassClimateSetTemperature",
         {"domain": "climate", "name": "all", "temperature": 25}),
        ("커튼 다 쳐 줘", "HassTurnOff", {"domain": "cover", "name": "all"}),
        ("모든 커튼 걷어 줘", "HassTurnOn", {"domain": "cover", "name": "all"}),
        ("선풍기 다 꺼", "HassTurnOff", {"domain": "fan", "name": "all"}),
        ("티비 전부 꺼 줘", "HassTurnOff", {"domain": "media_player", "name": "all"}),
        ("문 다 잠가 줘", "HassTurnOn", {"domain": "lock", "name": "all"}),
        ("안방 불 다 꺼 줘", "HassTurnOff", {"area": "안방"}),
        ("모든 게 다 귀찮다", None, {}),
        ("다 끝났어?", None, {}),
        ("불 다 꺼졌나?", None, {}),
        ("모든 조명이 다 예뻐", None, {}),
        ("에어컨 전부 고장 났대", None, {}),
        ("어제 불 다 껐지?", None, {}),
        ("커튼 다 닫지 마", None, {}),
        ("다들 잘 자", None, {}),
    ],
    "relative": [
        ("거실 불 좀 더 밝게 해 줘", "HassLightSet", {"brightness_step": "up"}),
        ("안방 조명 어둡게 해 줄래", "HassLightSet", {"brightness_step": "down"}),
        ("불 좀 밝게", "HassLightSet", {"brightness_step": "up", "area": "거실"}),
        ("조명 밝기 좀 낮춰 줘", "HassLightSet", {"brightness_step": "down"}),
        ("주방 불 살짝 어둡게", "HassLightSet", {"brightness_step": "down", "amount": "little"}),
        ("화장실 조명 밝기 올려", "HassLightSet", {"brightness_step": "up"}),
        ("소리 좀 줄여 줘", "HassSetVolumeRelative", {"volume_step": "down"}),
        ("볼륨 키워", "HassSetVolumeRelative", {"volume_step": "up"}),
        ("소리 조금만 크게 해 줘", "HassSetVolumeRelative",
         {"volume_step": "up", "amount": "little"}),
        ("음량 좀 낮춰", "HassSetVolumeRelative", {"volume_step": "down"}),
        ("티비 볼륨 올려 줘", "HassSetVolumeRelative",
         {"volume_step": "up", "domain": "media_player"}),
        ("이 노래 넘겨 줘", "HassMediaNext", {}),
        ("이 곡 건너뛰어", "HassMediaNext", {}),
        ("노래 넘겨", "HassMediaNext", {}),
        ("다음 곡 틀어 줘", "HassMediaNext", {}),
        ("소리가 너무 작아", None, {}),
        ("여기 너무 어두워", None, {}),
        ("불 밝게 켜져 있네", None, {}),
        ("소리 줄이면 안 들려", None, {}),
        ("넘겨짚지 좀 마", None, {}),
        ("이 노래 넘기지 마", None, {}),
        ("페이지 넘겨 줘", None, {}),
        ("밝게 살아야지", None, {}),
    ],
    "shortcuts": [
        ("라면 타이머 삼 분", "HassStartTimer", {"minutes": 3, "name": "라면"}),
        ("파스타 타이머 구 분 맞춰 줘", "HassStartTimer", {"minutes": 9, "name": "파스타"}),
        ("계란 십이 분 타이머", "HassStartTimer", {"minutes": 12, "name": "계란"}),
        ("삼 분 뒤에 알려 줘", "HassStartTimer", {"minutes": 3}),
        ("이십 분 있다가 깨워 줘", "HassStartTimer", {"minutes": 20}),
        ("십 분 후에 알려 줘", "HassStartTimer", {"minutes": 10}),
        ("한 시간 지나면 알려 줘", "HassStartTimer", {"hours": 1}),
        ("됐어 취소", "HassNevermind", {}),
        ("아니 됐어", "HassNevermind", {}),
        ("취소 취소", "HassNevermind", {}),
        ("라면 타이머 꺼 줘", "HassCancelTimer", {"name": "라면"}),
        ("라면 먹고 싶다", None, {}),
        ("라면 삼 분이면 다 익어", None, {}),
        ("타이머 몇 분 남았어?", "HassTimerStatus", {}),
        ("삼 분 뒤에 알려 줄게", None, {}),
        ("타이머 삼 분 맞췄었어", None, {}),
        ("취소하면 안 돼", None, {}),
        ("됐어 그거 하지 마", None, {}),
    ],
}  # fmt: skip


def evaluate(presets) -> dict[str, dict]:
    report = {}
    for family, cases in FAMILIES.items():
        commands = [c for c in cases if c[1] not in (None, "HassTimerStatus")]
        refused = [c for c in cases if c not in commands]
        wrong = []
        for text, intent, slots in cases:
            found = presets.match(text)
            got = found.intent if found else None
            ok = got == intent and all(found.slots.get(k) == v for k, v in slots.items())
            if not ok:
                wrong.append({"text": text, "want": intent, "got": got,
                              "slots": found.slots if found else {}})  # fmt: skip
        right_commands = len(commands) - sum(1 for w in wrong if w["text"] in _texts(commands))
        right_refused = len(refused) - sum(1 for w in wrong if w["text"] in _texts(refused))
        report[family] = {
            "commands": f"{right_commands}/{len(commands)}",
            "look_alikes_refused": f"{right_refused}/{len(refused)}",
            "wrong": wrong,
        }
    return report


def _texts(cases) -> set[str]:
    return {c[0] for c in cases}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--verbose", action="store_true", help="print each wrong sentence")
    args = parser.parse_args()
    from sori.assemble.understanding import home_from_config
    from sori.core.config import load_config
    from sori.understanding.intents import load_presets

    home = home_from_config(load_config(str(ROOT / "device" / "sori.example.toml")).home)
    report = evaluate(load_presets("ko", home))
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
        return 0
    for family, got in report.items():
        print(f"{family:12} commands {got['commands']:>7}   look-alikes refused "
              f"{got['look_alikes_refused']:>6}")  # fmt: skip
        if args.verbose:
            for w in got["wrong"]:
                print(f"    {w['text']!r}: want {w['want']}, got {w['got']} {w['slots']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
