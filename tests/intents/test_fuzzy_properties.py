"""Property: random everyday sentences (nouns the home does not have, the verbs commands
use, request endings, and recognizer-style jamo corruptions) never give a device action
whose target word is not in the sentence."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sori.understanding.intents.korean import canonical

# Everyday nouns, none of them a device, area or device word of the example home.
NOUNS = (
    "가방 상자 책 창고 냉장고 컴퓨터 노트북 휴대폰 사진 짐 병 뚜껑 서랍 지갑 자전거 시계 "
    "라디오 모니터 오븐 세탁기 금고 트렁크 차 우산 영화 물 수도 가스 촛불 편지 택배 필통 "
    "도시락 냄비 밥솥 사물함 캐리어 자물쇠 빨래 이불 매듭 문제 피아노 박수 배경화면 비밀번호 "
    "간식 숙제 메일 파일 앱 게임 블로그 월급 가격 점수 소매 머리 선반 계단 커피 바지 신발 "
    "모자 안경 장갑 수건 칫솔 거울 의자 책상위 베개 주전자 프라이팬 전자레인지 다리미 "
    "드라이기 프린터 카메라 마이크 자막 계좌 음정 박자 퍼즐 날짜 초점 일정 기분 방향 핸들"
).split()
VERBS = (
    "열어 닫아 꺼 켜 맞춰 틀어 올려 내려 잠가 멈춰 걷어 풀어 쳐 돌려 바꿔 낮춰 높여 "
    "설정해 충전해 추천해 정리해 치워"
).split()
PARTICLES = ["", "을", "를", "좀", "도", "이", "가", "에", "로"]
ENDINGS = ["", "줘", " 줘", "주세요", " 줄래", "봐", " 주실래요", "요"]
# Slots through which a match reaches a device, and words that name one.
TARGET_SLOTS = ("name", "area", "domain", "device_class", "floor")


def corrupt(text: str, index: int, slot: int, jamo: int) -> str:
    """Change one jamo (initial, medial or final) of one Hangul syllable."""
    positions = [i for i, c in enumerate(text) if 0xAC00 <= ord(c) <= 0xD7A3]
    if not positions:
        return text
    i = positions[index % len(positions)]
    offset = ord(text[i]) - 0xAC00
    parts = [offset // 588, (offset // 28) % 21, offset % 28]
    parts[slot] = jamo % (19, 21, 28)[slot]
    return text[:i] + chr(0xAC00 + parts[0] * 588 + parts[1] * 28 + parts[2]) + text[i + 1 :]


@st.composite
def everyday_sentences(draw) -> str:
    words = []
    for _ in range(draw(st.integers(1, 2))):
        words.append(draw(st.sampled_from(NOUNS)) + draw(st.sampled_from(PARTICLES)))
    sentence = " ".join(words) + " " + draw(st.sampled_from(VERBS))
    sentence += draw(st.sampled_from(ENDINGS))
    if draw(st.booleans()):
        sentence = corrupt(
            sentence,
            draw(st.integers(0, 30)),
            draw(st.integers(0, 2)),
            draw(st.integers(0, 27)),
        )
    return sentence


def named(value, sentence: str) -> bool:
    return canonical(str(value)).text in canonical(sentence).text


@settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(sentence=everyday_sentences())
def test_an_everyday_sentence_never_acts_on_a_device_it_did_not_name(presets, sentence):
    found = presets.match(sentence)
    if found is None:
        return
    targets = [found.slots[k] for k in TARGET_SLOTS if k in found.slots]
    # A device action must name its target in the sentence; our nouns name none.
    unnamed = [t for t in targets if not named(t, sentence)]
    assert not unnamed, (sentence, found.intent, found.slots, found.confidence)
