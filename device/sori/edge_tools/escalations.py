"""Escalations to replay: Korean questions of the kind and length the router sends to the
edge (open questions, explanations, advice; not device commands, which presets answer).

Lengths follow what a speaker hears and the router forwards: one spoken sentence, about
10 to 60 characters, plus the edge system prompt the device client adds.
"""

from __future__ import annotations

ESCALATIONS: tuple[str, ...] = (
    "오늘 저녁 메뉴 뭐가 좋을까?",
    "감기 기운이 있을 때 먹으면 좋은 음식 알려줘",
    "아이한테 무지개가 왜 생기는지 쉽게 설명해줘",
    "주말에 서울 근교로 가볼 만한 곳 추천해줘",
    "집에서 할 수 있는 간단한 스트레칭 방법 알려줘",
    "김치찌개 맛있게 끓이는 방법 알려줘",
    "잠이 잘 안 올 때 어떻게 하면 좋을까?",
    "블랙홀이 뭔지 초등학생도 이해하게 설명해줘",
    "어버이날 부모님 선물로 뭐가 좋을까?",
    "겨울철 실내 습도는 어느 정도가 적당해?",
    "영어 단어를 오래 기억하는 요령이 있을까?",
    "비 오는 날 듣기 좋은 노래 분위기를 추천해줘",
    "전기 요금을 줄이려면 에어컨을 어떻게 쓰는 게 좋아?",
    "세종대왕이 한글을 만든 이유가 뭐야?",
    "강아지가 초콜릿을 먹으면 왜 위험해?",
    "내일 아침에 상쾌하게 일어나는 방법 좀 알려줘",
)
"""The prompts, replayed in order (round robin) by every concurrency level."""
