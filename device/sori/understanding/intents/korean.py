"""Korean as it is spoken and as speech recognition writes it, reduced to one canonical form.

Both sides of a match go through the same reduction: the templates when packs are
compiled, the utterance when it is matched. The canonical form has no spaces (STT splits
and merges words freely), spoken numbers as digits, one spelling per loanword, and the
sentence-final request ending removed (켜 / 켜줘 / 켜 주실래요 → 켜).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from sori.core.hangul import final_is_rieul, has_final, is_hangul, medial, split_syllable, syllable
from sori.understanding.intents.numbers import digits_for_numbers

# Request and politeness endings after a verb, longest first (spaces removed).
REQUEST_ENDINGS = tuple(
    sorted(
        {
            "줘", "줘요", "줘라", "줘봐", "줘봐요", "주라", "주세요", "주십시오", "주시오",
            "줄래", "줄래요", "주실래", "주실래요", "주겠니", "주시겠어요", "주시겠습니까",
            "줄수있어", "줄수있어요", "줄수있니", "줄수있나요", "줄수있을까", "줄수있을까요",
            "주실수있어요", "주실수있나요", "주실수있을까요", "봐", "봐요", "요",
            "주죠", "주시죠", "줘용", "주세용", "줘여", "주세여", "주셈", "줘유", "주세유",
            "주이소",
        },
        key=len,
        reverse=True,
    )
)  # fmt: skip
# Request endings that close only an -아/-어 form: 켜죠 (켜 주죠), 꺼조 (꺼 줘, as said).
# After anything else they are no request (그렇죠, 구조).
VERB_ENDINGS = ("죠", "조")
# Auxiliary verbs after the -아/-어 form that leave the request as it is: 꺼 버려 (done
# with it), 켜 놔 / 켜 둬 (and leave it so), 켜 봐 (try). A request ending may follow them
# (꺼 버려 줘, 켜 놔요); a past or a question (꺼 버렸어, 켜 놨어?) is no request and is
# not cut.
AUXILIARIES = ("버려", "놔", "둬", "봐")

# Particles that may follow a noun; skipped between template words.
PARTICLES = tuple(
    sorted(
        {"에있는", "에서", "에게", "한테", "으로", "로", "을", "를", "이", "가", "은", "는", "에",
         "의", "도", "와", "과", "랑", "이랑", "좀", "한번", "있는", "전부", "모두"},
        key=len,
        reverse=True,
    )
)  # fmt: skip
_PARTICLE_SET = frozenset(PARTICLES)
_PARTICLE_SIZES = tuple(sorted({len(p) for p in PARTICLES}, reverse=True))
# Particles stripped from the end of template words (not 도: "26도" is degrees).
TEMPLATE_PARTICLES = ("에서", "에게", "으로", "을", "를", "이", "가", "은", "는", "에", "의", "로")

# One spelling per loanword; applied to the space-free text.
_SPELLINGS = (
    (re.compile(r"에어콘"), "에어컨"),
    (re.compile(r"티브이|텔레비전|텔레비|tv"), "티비"),
    (re.compile(r"(?<=\d)(퍼센트|프로|퍼)"), "%"),
    (re.compile(r"블라인더"), "블라인드"),
    (re.compile(r"잠궈|잠구어|잠그어"), "잠가"),
    (re.compile(r"테레비"), "티비"),
)
_NOT_TEXT = re.compile(r"[^\w%.]+")
# A minus sign before a number (not a hyphen between words or numbers): read as the word
# 마이너스, which `digits_for_numbers` turns back into "-" glued to the digits, so the
# sign survives punctuation removal and no template or edit can match it away.
_MINUS_SIGN = re.compile(r"(?<![\w.])[-\u2212\u2010\u2013\ufe63\uff0d]\s*(?=\d)")
_TRAILING_DOTS = re.compile(r"(?<!\d)\.|\.(?!\d)")

# Saying not to do something, or that it does not work, is never a command.
PROHIBITION = re.compile(
    r"(지마|지말|지않|지도마|지는마|면안돼|면안되|지말아|안(켜|꺼|틀|열|닫|잠))"
)
# Words that make a near-miss a question about a device rather than a command.
QUESTION_WORDS = re.compile(
    r"(법|방법|어떻게|왜|언제|누가|뭐가|고장|전기세|요금|얼마나들|설명|의미|뜻|안돼|안되)"
)


@dataclass(frozen=True, slots=True)
class Canonical:
    """An utterance in canonical form, with the way back to its spoken text."""

    text: str
    """Canonical text: no spaces, digits for numbers, one spelling per word."""
    spoken: str
    """The normalized text with its spaces, for wildcard values."""
    origin: tuple[int, ...]
    """origin[i] is the index in `spoken` of canonical character i."""

    def spoken_span(self, start: int, end: int) -> str:
        """The spoken text behind canonical characters [start, end)."""
        if start >= end:
            return ""
        return self.spoken[self.origin[start] : self.origin[end - 1] + 1]


def normalize_spoken(text: str) -> str:
    """Unicode-normalized, lower-case text without punctuation, numbers as digits."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = _MINUS_SIGN.sub(" 마이너스 ", text)
    text = _NOT_TEXT.sub(" ", text.replace("_", " "))
    text = _TRAILING_DOTS.sub(" ", text)
    text = digits_for_numbers(" ".join(text.split()))
    return " ".join(text.split())


@lru_cache(maxsize=65536)
def canonical_word(text: str) -> str:
    """A word or phrase in canonical form, endings kept (for list values and template words)."""
    return respell(normalize_spoken(text).replace(" ", ""))


def respell(text: str) -> str:
    for pattern, spelling in _SPELLINGS:
        text = pattern.sub(spelling, text)
    return text


def canonical(text: str) -> Canonical:
    """The canonical form of an utterance, request ending removed."""
    spoken = normalize_spoken(text)
    chars, origin = [], []
    for i, char in enumerate(spoken):
        if char != " ":
            chars.append(char)
            origin.append(i)
    joined = "".join(chars)
    respelled = respell(joined)
    if respelled != joined:
        # Spellings change lengths; rebuild the origin map by aligning from the left.
        origin = _realign(joined, respelled, origin)
    respelled, origin = _wish_as_request(respelled, origin)
    keep = len(respelled) - ending_length(respelled)
    return Canonical(respelled[:keep], spoken, tuple(origin[:keep]))


def _realign(before: str, after: str, origin: list[int]) -> list[int]:
    # Walk both strings; a replaced span maps every new character to the span's start.
    aligned, i = [], 0
    for j, char in enumerate(after):
        if i < len(before) and before[i] == char:
            aligned.append(origin[i])
            i += 1
        else:
            aligned.append(origin[min(i, len(origin) - 1)])
            # skip the replaced characters of `before` once the next equal char is found
            nxt = after[j + 1] if j + 1 < len(after) else None
            while i < len(before) and nxt is not None and before[i] != nxt:
                i += 1
    return aligned


def ending_length(text: str) -> int:
    """How many trailing characters are a request ending (plus a light verb 해 before it)."""
    cut = 0
    for ending in REQUEST_ENDINGS:
        if text.endswith(ending) and len(text) > len(ending):
            cut = len(ending)
            break
    if not cut:
        cut = _after_verb_form(text, VERB_ENDINGS)
    if not cut and _is_plain_imperative(text):
        cut = 1
    while aux := _after_verb_form(text[: len(text) - cut], AUXILIARIES):
        cut += aux
    # "설정해 줘" means "설정": a trailing 해 after a noun is the light verb 하다.
    if len(text) - cut > 1 and text[len(text) - cut - 1] == "해":
        cut += 1
    return cut


# Medial vowel indices of Hangul syllables (see sori.core.hangul).
_A, _AE, _EO, _E, _YEO, _O, _WA, _WAE, _OE = 0, 1, 4, 5, 6, 8, 9, 10, 11
_U, _WO, _EU, _I = 13, 14, 18, 20
_BRIGHT = frozenset({_A, _O})
_RIEUL = 8


def request_form(stem: str) -> str:
    """A verb stem in the -아/-어 form a request ends in: 켜 → 켜, 끄 → 꺼, 닫 → 닫아,
    올리 → 올려, 맞추 → 맞춰, 잠그 → 잠가, 누르 → 눌러, 하 → 해, 켜주 → 켜줘."""
    if not stem or not is_hangul(stem[-1]):
        return stem
    if stem.endswith("하"):
        return stem[:-1] + "해"
    initial, vowel, final = split_syllable(stem[-1])
    before = split_syllable(stem[-2]) if len(stem) > 1 and is_hangul(stem[-2]) else None
    bright = before is not None and before[1] in _BRIGHT
    if final:
        return stem + ("아" if vowel in _BRIGHT else "어")
    if vowel in (_A, _EO, _YEO, _AE, _E):
        return stem
    if vowel == _EU:
        if stem[-1] == "르" and before is not None and not before[2]:
            head = syllable(before[0], before[1], _RIEUL)
            return stem[:-2] + head + ("라" if bright else "러")
        return stem[:-1] + syllable(initial, _A if bright else _EO)
    turned = {_O: _WA, _U: _WO, _I: _YEO, _OE: _WAE}.get(vowel)
    if turned is None:
        return stem
    return stem[:-1] + syllable(initial, turned)


# A wish is a polite request: "불 켜면 좋겠어", "창문 닫았으면 좋겠어요", "꺼 주면 고맙겠어"
# ("I'd like the light on"). The verb before -(으)면 is put in its request form, so the
# wish matches as the request would (켜면 좋겠어 → 켜, 꺼 줬으면 좋겠어 → 꺼줘 → 꺼).
_WISH = re.compile(r"(?<=[가-힣])으?면(?:좋|고맙)겠(?:어요|어|다|네요|네|는데요|는데|습니다)$")
_PAST = 20  # final ㅆ: the past tense (켰, 닫았, 줬), after the -아/-어 form it is made from


def _wish_as_request(text: str, origin: list[int]) -> tuple[str, list[int]]:
    """`text` with a closing wish turned into the request form of its verb, and the
    origin map to match (a syllable the request form adds maps where the stem ended)."""
    found = _WISH.search(text)
    if found is None:
        return text, origin
    stem = text[: found.start()]
    initial, vowel, final = split_syllable(stem[-1])
    # 켰 is 켜 in the past tense: the request form is the syllable without its ㅆ
    past = final == _PAST
    verb = stem[:-1] + syllable(initial, vowel) if past else request_form(stem)
    added = len(verb) - len(stem)
    return verb, origin[: len(stem)] + [origin[len(stem) - 1]] * added


def _after_verb_form(text: str, endings: tuple[str, ...]) -> int:
    """The length of the ending of `endings` that `text` closes on, when an -아/-어 form
    stands before it (꺼버려 → 2; 쓰레기버려 → 0: 기 is no such form), else 0."""
    for ending in endings:
        if text.endswith(ending) and is_verb_form(text[: -len(ending)]):
            return len(ending)
    return 0


def _is_plain_imperative(text: str) -> bool:
    """켜라, 꺼라, 틀어라, 작동해라: 라 after an infinitive -아/-어 form (an open vowel, no
    final consonant). 카메라 or 드라 are not: their syllable before 라 is no such form."""
    if len(text) < 2 or not text.endswith("라"):
        return False
    verb = text[-2]
    return is_hangul(verb) and not has_final(verb) and medial(verb) in _OPEN_VOWEL_ENDINGS


@lru_cache(maxsize=65536)
def strip_template_particle(word: str) -> str:
    """A template word without a trailing particle (조명을 → 조명, 불을 → 불)."""
    for particle in TEMPLATE_PARTICLES:
        if len(word) > len(particle) and word.endswith(particle):
            return word[: -len(particle)]
    return word


# Particles that only follow a final consonant, and those that only follow a vowel.
_AFTER_CONSONANT = frozenset({"을", "이", "은", "과", "으로", "이랑"})
_AFTER_VOWEL = frozenset({"를", "가", "는", "와"})


def particle_fits(previous: str, particle: str) -> bool:
    """Whether `particle` agrees with the batchim of `previous` (책과, 사과 ≠ 사+과)."""
    if not previous or not is_hangul(previous):
        return True
    if particle in _AFTER_CONSONANT:
        return has_final(previous)
    if particle in _AFTER_VOWEL:
        return not has_final(previous)
    if particle == "로":
        return not has_final(previous) or final_is_rieul(previous)
    return True


def particle_lengths(text: str, pos: int) -> list[int]:
    """Lengths of particles (and stacks of them) that start at `pos` in canonical text.

    A particle must agree with the batchim of the character before it.
    """
    found: list[int] = []
    frontier = [0]
    while frontier:
        length = frontier.pop()
        start = pos + length
        previous = text[start - 1] if start else ""
        for particle in PARTICLES:
            if text.startswith(particle, start) and particle_fits(previous, particle):
                total = length + len(particle)
                if total not in found and len(found) < 8:
                    found.append(total)
                    frontier.append(total)
    return found


def is_prohibition(canonical_text: str) -> bool:
    return PROHIBITION.search(canonical_text) is not None


# Connective endings make a clause subordinate: -아도/-어도 "even if", -(으)면 "if",
# -(으)면서 "while", -는데/-은데 "and so", -(으)니까 "because", -지만 "but", -거든 "if",
# -다가 "while doing", -더라도 "even though", -아서/-어서 "so". They attach to the verb and
# wait for a main clause; a sentence that ends on one ("거실 불 켜도", "불 켜면") says no
# request, however much its verb looks like a command. -(으)면 follows an open stem or one
# in ㄹ (켜면, 열면; 닫으면 ends in 으면), so a noun like 장면 is no ending; -도 and -서
# follow the -아/-어 form (켜도, 닫아서), so 온도, 26도 and 에서 are none either.
_HANGING = re.compile(r"(?<=[가-힣])(?:면서|는데도?|은데도?|니까|지만|거든|다가|더라도)$")


def leaves_hanging(canonical_text: str) -> bool:
    """True when the sentence ends on a connective ending: a clause with no request."""
    text = canonical_text
    if len(text) < 2 or not is_hangul(text[-2]):
        return False
    if _HANGING.search(text):
        return True
    before, last = text[-2], text[-1]
    if last == "면":  # -(으)면, -(으)려면
        return not has_final(before) or final_is_rieul(before)
    if last in "도서":  # -아도/-어도, -아서/-어서
        return is_verb_form(before)
    return False


def asks_about(canonical_text: str) -> bool:
    return QUESTION_WORDS.search(canonical_text) is not None


# Sentence-final syllables that close a request or question: infinitive -아/-어 forms
# (켜, 꺼, 맞춰, 열어, 틀어, 해), and 요, 래, 야, 니, 까, 죠.
_OPEN_VOWEL_ENDINGS = set("ㅏㅓㅕㅐㅝㅘㅙ")
_CLOSING_SYLLABLES = set("요래야니까죠냐나")


def is_closed(text: str) -> bool:
    """True when the last word ends in a closed sentence-final form (켜줘, 꺼, 맞춰 ...).

    "켜지" (…마), "켜 줄" (…수 있어?) and "거실" are open: more may follow.
    """
    words = normalize_spoken(text).split()
    if not words:
        return False
    last = words[-1][-1]
    if last in _CLOSING_SYLLABLES:
        return True
    return is_hangul(last) and not has_final(last) and medial(last) in _OPEN_VOWEL_ENDINGS


def josa(word: str, pair: str) -> str:
    """`word` with the particle of `pair` ("을/를", "이/가", "은/는", "으로/로") it takes."""
    with_final, without_final = pair.split("/")
    if not word:
        return word
    last = word[-1]
    if last.isdigit():
        takes_final = last in "013678"
        rieul = last in "178"
    else:
        takes_final, rieul = has_final(last), final_is_rieul(last)
    if pair == "으로/로" and rieul:
        return word + without_final
    return word + (with_final if takes_final else without_final)


def heard_word_lengths(spoken: Canonical) -> tuple[int, ...]:
    """For each canonical character, the length of the heard word it belongs to, without
    a trailing particle ("창고를 열어" → 2, 2, 2, 2, 2): a fuzzy edit must fall in a heard
    word long enough that one changed jamo is a mishearing, not another word."""
    spans: dict[int, list[int]] = {}
    for i, at in enumerate(spoken.origin):
        spans.setdefault(spoken.spoken.count(" ", 0, at), []).append(i)
    lengths = [0] * len(spoken.text)
    for positions in spans.values():
        start, end = positions[0], positions[-1] + 1
        word = spoken.text[start:end]
        # The longest particle the word ends in (a word has one ending per length).
        cut = next(
            (
                size
                for size in _PARTICLE_SIZES
                if len(word) > size
                and word[-size:] in _PARTICLE_SET
                and particle_fits(word[-size - 1], word[-size:])
            ),
            0,
        )
        for i in positions:
            lengths[i] = end - start - cut
    return tuple(lengths)


# The vowels a verb's request form (the -아/-어 infinitive, 해) ends in: 켜, 꺼, 열어,
# 닫아, 맞춰, 잠가, 해. A noun may end so too (노래), so this is one test of several.
_VERB_VOWELS = frozenset("ㅏㅓㅕㅘㅝㅐ")


def is_verb_form(word: str) -> bool:
    """True when `word` ends as a verb's request form does: an open syllable whose vowel
    is ㅏ ㅓ ㅕ ㅘ ㅝ or ㅐ (켜, 닫아, 맞춰, 해), never a consonant or a number."""
    return (
        bool(word)
        and is_hangul(word[-1])
        and not has_final(word[-1])
        and (medial(word[-1]) in _VERB_VOWELS)
    )
