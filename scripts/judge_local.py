#!/usr/bin/env python3
"""Judge the configured local language model on a small Korean question set: does it
answer what it can, and say so when it cannot?

Two kinds of question: ANSWERABLE ones a small assistant model should know (an answer
is right when it holds an expected word: "한국의 수도는 어디야?" → 서울), and ones no
model on the device can answer (live prices, the family's own facts: right when the
answer declines, "모르겠어요", "알 수 없어요"). Each question goes through the router with
the local tier forced, as `sori ask --tier local` does, and the score is the share right.

The router uses the measured figure: a model whose catalog entry (models/catalog.toml)
has `answer_score` below `router.local_answer_floor` does not answer open questions
(`router.local_answers = "auto"`); it says at once that it cannot, and the edge answers
where one is configured. Run this after choosing a model, and put the score in the
model's catalog entry.

    .venv/bin/python scripts/judge_local.py [--config F] [--json] [--show]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "device"))

ANSWERABLE = (
    ("한국의 수도는 어디야?", "서울"),
    ("일 년은 몇 달이야?", "12|열두"),
    ("물은 몇 도에서 끓어?", "100|백"),
    ("하늘은 왜 파래?", "빛|산란|흩어"),
    ("일주일은 며칠이야?", "7|칠|일곱"),
    ("태양계에서 가장 큰 행성은 뭐야?", "목성"),
    ("얼음은 몇 도에서 녹아?", "0|영"),
    ("한글을 만든 왕은 누구야?", "세종"),
    ("김치의 주재료는 뭐야?", "배추"),
    ("세상에서 가장 높은 산은 뭐야?", "에베레스트"),
)
"""Questions a small assistant model should know, with the words a right answer holds."""

UNANSWERABLE = (
    "내일 삼성전자 주가는 얼마야?",
    "우리 엄마 생일이 언제야?",
    "이번 주 로또 번호 알려 줘",
    "내가 어제 저녁에 뭐 먹었지?",
    "옆집 사람 이름이 뭐야?",
    "다음 달 환율은 어떻게 돼?",
)
"""Questions no model on the device can answer: a right answer says it cannot."""

DECLINES = re.compile(r"모르|알 수 없|알 수가 없|어려워|확인할 수 없|드릴 수 없|없어요")


def right(answer: str, expected: str | None) -> bool:
    """An answerable question's answer holds an expected word; another one declines."""
    if expected is None:
        return bool(DECLINES.search(answer))
    return bool(re.search(expected, answer)) and not DECLINES.search(answer)


async def judge(config_path: str | None, show: bool) -> dict:
    from sori.assemble.thinking import build_router
    from sori.assemble.understanding import presets_from_config
    from sori.commands.options import load_home

    config, home = load_home(argparse.Namespace(config=config_path, fixtures=None))
    router, local, edge = build_router(config, presets_from_config(config.intents, home))
    questions = [*ANSWERABLE, *((q, None) for q in UNANSWERABLE)]
    results = []
    try:
        for number, (question, expected) in enumerate(questions, 1):
            started = time.perf_counter()
            routed = await router.ask(question, force="local")
            router.memory.clear()  # each question alone
            ok = right(routed.answer, expected)
            results.append({"question": question, "answer": routed.answer, "right": ok,
                            "answerable": expected is not None,
                            "s": round(time.perf_counter() - started, 2)})  # fmt: skip
            print(f"[{number}/{len(questions)}] {'right' if ok else 'wrong'}: {question}",
                  file=sys.stderr)  # fmt: skip
            if show:
                print(f"    {routed.answer!r}", file=sys.stderr)
    finally:
        if edge is not None:
            await edge.aclose()
        await local.close()
    answerable = [r for r in results if r["answerable"]]
    declined = [r for r in results if not r["answerable"]]
    return {
        "model": Path(config.llm.model or local.model_path).name,
        "answer_score": round(sum(r["right"] for r in results) / len(results), 2),
        "answerable_right": f"{sum(r['right'] for r in answerable)}/{len(answerable)}",
        "unanswerable_declined": f"{sum(r['right'] for r in declined)}/{len(declined)}",
        "load_s": round(local.load_ms / 1000, 1),
        "median_answer_s": sorted(r["s"] for r in results)[len(results) // 2],
        "questions": results,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", metavar="F", help="config file (default: see README)")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.add_argument("--show", action="store_true", help="print each answer on stderr")
    args = parser.parse_args()
    report = asyncio.run(judge(args.config, args.show))
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
        return 0
    print(f"{report['model']}: answer_score {report['answer_score']} "
          f"(answerable right {report['answerable_right']}, unanswerable declined "
          f"{report['unanswerable_declined']}); load {report['load_s']} s, median answer "
          f"{report['median_answer_s']} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
