#!/usr/bin/env python3
"""Calibrate the fuzzy-match threshold on simulated speech-recognition errors.

Positives: commands with one recognizer-style error (one jamo changed in one syllable,
among the confusions Korean STT actually makes: ㄴ/ㅁ/ㅇ finals, ㄱ/ㄲ/ㅋ initials,
ㅓ/ㅕ/ㅗ vowels …) or one syllable dropped. Negatives: non-commands (read speech,
everyday requests, questions about devices, prohibitions) with and without the same
errors. For each threshold it reports recall (corrupted commands understood correctly),
wrong fires (a command understood as another command) and false fires (a non-command
understood as a command). The default threshold is the lowest with no wrong or false
fire.

    .venv/bin/python scripts/calibrate_fuzzy.py [--seed 7] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"

COMMANDS = (
    """
거실 불 켜줘|안방 불 꺼 줘|주방 조명 켜 줘|에어컨 틀어 줘|선풍기 꺼|공기청정기 켜 줘
가습기 꺼 줘|커튼 쳐 줘|커튼 걷어|현관문 잠가 줘|티비 켜|청소기 돌려|오 분 타이머 맞춰 줘
타이머 취소해|지금 몇 시야|오늘 날씨 어때|에어컨 이십삼 도로 맞춰 줘|볼륨 삼십으로 해 줘
다음 곡 틀어 줘|일시 정지|모든 불 꺼 줘|화장실 불 켜|책상 플러그 꺼 줘|안방 에어컨 꺼
거실 커튼 열어 줘|밝기 오십 퍼센트로|오늘 며칠이야|거실 에어컨 켜 줘|로봇청소기 충전하러 보내
""".strip()
    .replace("\n", "|")
    .split("|")
)
NON_COMMANDS = (
    """
거실 불 켜지 마|에어컨 끄지 마세요|조명 켜는 법 알려 줘|에어컨 전기세 많이 나와
불이 안 켜져|오늘 점심 뭐 먹지|엄마한테 전화해 줘|노래 불러 줘|내일 회의 몇 시야
거실 불 켜는 거 아니야|어제 에어컨 틀었어|커튼 색깔 뭐가 좋아|청소기 어디서 샀어
티비 프로그램 추천해 줘|타이머가 뭐야|날씨 때문에 기분이 안 좋아|불 좀 꺼 줄 사람
현관문 비밀번호 바꾸는 법|가습기 물 얼마나 넣어|선풍기 고장 났어
""".strip()
    .replace("\n", "|")
    .split("|")
)

# Jamo the recognizer confuses, by position (indices into the Unicode jamo tables).
INITIAL_CONFUSIONS = [
    (0, 1), (0, 15), (1, 15), (3, 4), (3, 16), (7, 8), (7, 17), (9, 10), (12, 13), (12, 14), (2, 5)
]  # fmt: skip
MEDIAL_CONFUSIONS = [(4, 6), (4, 8), (0, 4), (1, 5), (13, 18), (8, 13), (20, 18), (14, 4)]
FINAL_CONFUSIONS = [(4, 16), (4, 21), (16, 21), (1, 7), (8, 0), (4, 0), (21, 0), (1, 0)]


def corrupt(text: str, rng: random.Random) -> str:
    """One recognizer-style error: a confusable jamo in one syllable, or a dropped syllable."""
    positions = [i for i, c in enumerate(text) if 0xAC00 <= ord(c) <= 0xD7A3]
    if not positions:
        return text
    i = rng.choice(positions)
    if rng.random() < 0.15 and len(positions) > 3:
        return text[:i] + text[i + 1 :]
    offset = ord(text[i]) - 0xAC00
    jamo = [offset // 588, (offset // 28) % 21, offset % 28]
    slot = rng.randrange(3)
    table = (INITIAL_CONFUSIONS, MEDIAL_CONFUSIONS, FINAL_CONFUSIONS)[slot]
    options = [b if a == jamo[slot] else a for a, b in table if jamo[slot] in (a, b)]
    if not options:
        return text
    jamo[slot] = rng.choice(options)
    return text[:i] + chr(0xAC00 + jamo[0] * 588 + jamo[1] * 28 + jamo[2]) + text[i + 1 :]


def meaning(home, intent: str, slots: dict) -> tuple:
    """What a reading does: the intent, the devices it reaches, and its numbers.

    "거실 조명" by name and the living room's lights by area reach the same device.
    """
    numbers = tuple(sorted((k, v) for k, v in slots.items() if isinstance(v, int | float)))
    if "domain" not in slots and "name" not in slots:
        return intent, frozenset(), numbers  # media, timers, time: no device to reach
    devices = home.devices
    if slots.get("name") not in (None, "all"):
        devices = [d for d in devices if d.name == slots["name"]]
    else:
        area = next((a.id for a in home.areas if a.name == slots.get("area")), None)
        devices = [
            d
            for d in devices
            if (area is None or d.area == area)
            and d.domain == slots.get("domain", d.domain)
            and (d.device_class or "") == slots.get("device_class", d.device_class or "")
        ]
    return intent, frozenset(d.id for d in devices), numbers


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--variants", type=int, default=8, help="corruptions per sentence")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--shared", type=Path, default=SHARED, help="the shared data folder")
    args = parser.parse_args()
    rng = random.Random(args.seed)

    from sori.assemble.understanding import home_from_config
    from sori.core.config import EXAMPLE_CONFIG, load_config
    from sori.understanding.intents import load_presets

    home = home_from_config(load_config(str(EXAMPLE_CONFIG)).home)
    exact = load_presets("ko", home, fuzzy_threshold=None)
    fuzzy = load_presets("ko", home, fuzzy_threshold=0.0)
    negatives = list(NON_COMMANDS)
    everyday = (ROOT / "tests" / "intents" / "negatives_ko.txt").read_text(encoding="utf-8")
    negatives += [line.strip() for line in everyday.splitlines() if line.strip()[:1] not in "#"]
    manifest = args.shared / "audio" / "ko-read" / "manifest.tsv"
    if manifest.is_file():
        rows = manifest.read_text(encoding="utf-8")
        negatives += [row.split("\t")[1] for row in rows.splitlines()[1:]]

    positives = []  # (corrupted text, expected intent, expected slots)
    for command in COMMANDS:
        truth = exact.match(command)
        if truth is None:
            print(f"calibrate: {command!r} does not match exactly; fix the list", file=sys.stderr)
            return 1
        for _ in range(args.variants):
            noisy = corrupt(command, rng)
            if exact.match(noisy) is None:  # only real near-misses test the fuzzy path
                positives.append((noisy, truth.intent, truth.slots))
    # A corruption that happens to spell a command exactly ("팽이 돌려" → "팬이 돌려") is
    # the recognizer's error, not the fuzzy matcher's: like the positives, only sentences
    # that do not match exactly test the fuzzy path.
    noisy = [corrupt(t, rng) for t in negatives for _ in range(2)]
    noisy_negatives = negatives + [t for t in noisy if exact.match(t) is None]

    scored_pos = [(fuzzy.match(t), intent, slots) for t, intent, slots in positives]
    scored_neg = [fuzzy.match(t) for t in noisy_negatives]
    rows = []
    for step in range(60, 100, 2):
        threshold = step / 100
        right = wrong = 0
        for found, intent, slots in scored_pos:
            if found is None or found.confidence < threshold:
                continue
            same = meaning(home, found.intent, found.slots) == meaning(home, intent, slots)
            right += same
            wrong += not same
        false = sum(f is not None and f.confidence >= threshold for f in scored_neg)
        rows.append(
            {
                "threshold": threshold,
                "recall": round(right / max(len(scored_pos), 1), 3),
                "wrong_fires": wrong,
                "false_fires": false,
            }
        )
    safe = next((r for r in rows if r["wrong_fires"] == 0 and r["false_fires"] == 0), None)
    report = {
        "positives": len(scored_pos),
        "negatives": len(scored_neg),
        "rows": rows,
        "lowest_safe_threshold": safe and safe["threshold"],
    }
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"{len(scored_pos)} corrupted commands, {len(scored_neg)} non-commands")
    print(f"{'threshold':>9} {'recall':>7} {'wrong':>6} {'false':>6}")
    for row in rows:
        print(
            f"{row['threshold']:9.2f} {row['recall']:7.3f} "
            f"{row['wrong_fires']:6d} {row['false_fires']:6d}"
        )
    print(f"lowest threshold with no wrong or false fire: {report['lowest_safe_threshold']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
