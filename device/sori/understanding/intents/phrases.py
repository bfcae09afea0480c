"""Commands as people say them: the phrase set of the constrained recognizer pass.

One generator serves both speech backends (vosk's grammar, sherpa-onnx's hotwords). The
packs' templates are written without endings or particles, because the matcher strips
them; a recognizer constrained to those bare paths cannot hear "거실 불 좀 켜 줘". So each
template path, filled with the home's names and aliases, is said the ways people say it:

- request endings and politeness levels: 켜 / 켜 줘 / 켜 줘요 / 켜 주세요 / 켜 줄래 /
  켜 주실래요 / 좀 켜 줘 / 켜라 / 켜 줘라; a verbal noun takes 해 (작동해 줘, 설정해
  주세요, 작동해라);
- spoken particles: 을/를 on the object (거실 불을 켜 줘), 으로/로 after a number's unit
  (이십삼 도로 맞춰 줘);
- numbers as words, the ones a slot usually takes: 이십삼 도 and 스물세 도, 오십 프로,
  한 시간, 오 분;
- spontaneous speech where people put it: a filler first (음 거실 불 켜 줘, 어 ..., 저기
  ...), an adverb before the verb or first (거실 불 이제 꺼 줘, 지금 ..., 빨리 ...), and
  colloquial endings (꺼 버려, 켜 놔, 켜 둬), all read by the presets' normaliser.

The set is chosen by coverage, not by expansion order: a stratum is an intent × a target
(a device, an area with a domain, a domain, or none) × an ending family, and every stratum
gets its first phrase before any gets a second, in a fixed order, until the budget is
spent. A phrase is kept only when the presets themselves understand it as meant (the
intended intent, exactly, on the intended target): the recognizer is never steered towards
a sentence the matcher would then drop.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sori.core.hangul import is_hangul
from sori.core.home import Area, Device, Home
from sori.understanding.intents.korean import canonical_word, is_verb_form, josa
from sori.understanding.intents.numbers import native_value, sino_value, sino_words
from sori.understanding.intents.slots import RangeList, SlotList, TextList, as_list
from sori.understanding.intents.templates import Block, Path, SlotRef, expand_block

# Phrases in the set unless the config says otherwise (stt.phrases.max_phrases): enough
# for every stratum of a home of about fifteen devices, small enough that vosk's grammar
# pass stays light (see README, Hearing).
DEFAULT_MAX_PHRASES = 2000
# Filled template paths considered per intent and target, simplest first: enough for
# several phrases per stratum, while enumeration stays well under a second.
MAX_BASES_PER_TARGET = 96

PLAIN = "plain"
FILLER, ADVERB, COLLOQUIAL = "음", "이제", "버려"
# Ending families, in the order strata take them. Each is a list of forms; a stratum's
# n-th phrase takes form n (cycling), so later rounds vary the politeness level within a
# family. `{v}` is the verb as said (켜, 작동해); `{h}` the words before it, which stand
# first where a form does not place them.
FAMILIES: dict[str, tuple[str, ...]] = {
    PLAIN: ("{v}",),
    "줘": ("{v} 줘",),
    "줘요": ("{v} 줘요",),
    "주세요": ("{v} 주세요", "{v} 주십시오"),
    "줄래": ("{v} 줄래", "{v} 주실래요", "{v} 줄래요", "{v} 주시겠어요"),
    "좀": ("좀 {v} 줘", "좀 {v} 주세요"),
    "라": ("{v}라", "{v} 줘라"),
    # spontaneous speech (sori.understanding.intents.normalizer): a filler first, an adverb
    # before the verb or first, a colloquial ending (an auxiliary verb)
    FILLER: ("음 {h} {v} 줘", "어 {h} 좀 {v} 줘", "저기 {h} {v} 주세요", "아 {h} {v}"),
    ADVERB: ("{h} 이제 {v} 줘", "지금 {h} {v} 줘", "{h} 빨리 {v} 줘", "이제 {h} 좀 {v} 줘"),
    COLLOQUIAL: ("{v} 버려", "{v} 놔", "{v} 둬", "{v} 놔 줘"),
}
REQUEST_FAMILIES = tuple(f for f in FAMILIES if f != PLAIN)
STATE_VERBS = frozenset("켜 꺼 열어 닫아 잠가 틀어 돌려 쳐 걷어 올려 내려".split())
"""Verbs that take the colloquial auxiliaries (꺼 버려, 켜 놔, 닫아 둬): they leave a
device in a state; "맞춰 버려" or "깨워 둬" is nobody's Korean."""
SPONTANEOUS_FAMILIES = {FILLER: "fillers", ADVERB: "adverbs", COLLOQUIAL: "colloquial endings"}
"""The families of spontaneous speech, with what `sori phrases --stats` calls them."""
# Words of a request ending, for counting which phrases carry one.
REQUEST_WORDS = frozenset({"줘", "줘요", "주세요", "주십시오", "줄래", "주실래요", "줄래요",
                           "주시겠어요", "좀", "줘라"})  # fmt: skip

# Verbal nouns that become a request with 해 (작동 → 작동해 줘). Nouns only: a noun that
# is not one of these (타이머, 노래) never gets 해, which would change its meaning.
ACTION_NOUNS = frozenset(
    "작동 가동 정지 중지 종료 그만 설정 변경 조정 조절 시작 취소 삭제 충전 복귀 재생 "
    "해제 일시정지 확인 청소".split()
)
# Words a question ends on that still take a request (날씨 알려 줘).
TELL_VERBS = frozenset({"알려", "말해"})
# Words before the verb that take no object particle (모두를 켜: no).
NO_PARTICLE = frozenset("다 모두 전부 전체 모든 좀 다시 계속 잠깐 일시 지금 현재 집 안".split())
UNITS_TAKING_RO = ("도", "프로", "퍼센트", "분", "초", "시간", "단계")

# Values people say for a number slot, by slot name, most common first; other slots take
# points across their range.
USUAL_NUMBERS: dict[str, tuple[int, ...]] = {
    "temperature": (23, 25, 20, 24, 26, 22, 18, 27, 28, 21),
    "brightness": (50, 30, 100, 70, 20, 80, 10),
    "position": (50, 30, 100, 70, 20),
    "volume_level": (30, 50, 20, 10, 70),
    "hours": (1, 2, 3, 5, 12),
    "minutes": (5, 10, 30, 3, 1, 15, 20),
    "start_minutes": (5, 10, 30),
    "start_hours": (1, 2),
    "seconds": (30, 10, 20, 5),
}
_NATIVE_TENS = ("", "열", "스물", "서른", "마흔", "쉰", "예순", "일흔", "여든", "아흔")
_NATIVE_ONES = ("", "한", "두", "세", "네", "다섯", "여섯", "일곱", "여덟", "아홉")


def native_words(value: int) -> str | None:
    """23 → "스물세", 20 → "스무", 1 → "한": a native number before a counter (1-99)."""
    if not 1 <= value <= 99:
        return None
    tens, ones = divmod(value, 10)
    if value == 20:
        return "스무"
    return _NATIVE_TENS[tens] + _NATIVE_ONES[ones]


@dataclass(frozen=True, slots=True)
class Target:
    """What a phrase acts on: a device, an area (with a domain), a domain, or nothing."""

    kind: str
    """"device", "area", "domain" or "none"."""
    ident: str = ""
    """Entity id of a device, or id of an area."""
    domain: str = ""
    """Home Assistant domain the phrase means, "" when the template does not say."""
    device_class: str = ""
    """Device class the phrase means (air_purifier, curtain), "" when any."""

    def label(self) -> str:
        parts = [self.kind, self.ident, self.domain, self.device_class]
        return ":".join(p for p in parts if p) if self.kind != "none" else "none"


@dataclass(frozen=True, slots=True)
class Stratum:
    """One cell of the coverage grid."""

    intent: str
    """Home Assistant intent name."""
    target: Target
    """What the phrases of the cell act on."""
    family: str
    """Ending family (a key of FAMILIES)."""


@dataclass
class PhraseSet:
    """The chosen phrases and how well they cover the home."""

    phrases: list[str]
    """Chosen phrases, in the order chosen (round by round over the strata)."""
    budget: int
    """Most phrases allowed (stt.phrases.max_phrases)."""
    candidates: int
    """Phrases the generator can offer for this home, before the budget (an upper bound:
    the same phrase may stand in several strata)."""
    strata: list[Stratum] = field(default_factory=list)
    """Every stratum with at least one candidate."""
    covered: set[Stratum] = field(default_factory=set)
    """Strata with at least one chosen phrase."""
    per_intent: Counter[str] = field(default_factory=Counter)
    """Chosen phrases per intent."""
    per_family: Counter[str] = field(default_factory=Counter)
    """Chosen phrases per family (a key of FAMILIES)."""
    rejected: int = 0
    """Candidates tried that the presets did not understand as meant (left out)."""

    @property
    def coverage(self) -> float:
        """Share of strata covered, in [0, 1]."""
        return len(self.covered) / len(self.strata) if self.strata else 1.0

    @property
    def with_request_ending(self) -> int:
        """Chosen phrases that carry a request ending (줘, 주세요, 좀 ...)."""
        return sum(1 for p in self.phrases if REQUEST_WORDS.intersection(p.split()))

    def stats(self) -> dict[str, Any]:
        """A summary for `sori phrases --stats`."""
        kept = len(self.phrases)
        return {
            "total": self.candidates,
            "kept": kept,
            "budget": self.budget,
            "strata": len(self.strata),
            "strata_covered": len(self.covered),
            "coverage": round(self.coverage, 4),
            "with_request_ending": self.with_request_ending,
            "request_ending_share": round(self.with_request_ending / kept, 4) if kept else 0.0,
            "rejected": self.rejected,
            "per_intent": dict(sorted(self.per_intent.items())),
            "per_family": {f: self.per_family[f] for f in FAMILIES if self.per_family[f]},
            "spontaneous": {
                label: self.per_family[family] for family, label in SPONTANEOUS_FAMILIES.items()
            },
        }


@dataclass
class _Base:
    """A filled template path, before its ending."""

    words: list[str]
    """The words, the last one being the predicate when there is one."""
    verb: str | None
    """The predicate as a request takes it (켜, 작동해), or None when it takes no ending."""


def spoken_phrases(
    blocks: list[Block],
    rules: dict[str, Any],
    lists: dict[str, SlotList],
    home: Home,
    understands: Callable[[str], Any],
    budget: int = DEFAULT_MAX_PHRASES,
    korean: bool = True,
) -> PhraseSet:
    """The phrase set of `blocks` for `home`, chosen by coverage within `budget`.

    `understands(text)` is the presets' matcher (an IntentMatch or None); a candidate is
    kept only when it gives the stratum's intent exactly, on the stratum's target.
    """
    cells: dict[Stratum, list[_Base]] = {}
    for intent, target, bases in _bases(blocks, rules, lists, home, korean):
        for family in FAMILIES:
            fitting = [b for b in bases if _takes(b, family)]
            if fitting:
                cells.setdefault(Stratum(intent, target, family), []).extend(fitting)
    chosen = PhraseSet(phrases=[], budget=budget, candidates=sum(len(b) for b in cells.values()))
    chosen.strata = list(cells)
    seen: set[str] = set()
    kept: set[str] = set()
    cursor = dict.fromkeys(cells, 0)
    live = list(cells)
    while live and len(chosen.phrases) < budget:
        still = []
        for stratum in live:
            if len(chosen.phrases) >= budget:
                break
            bases = cells[stratum]
            while cursor[stratum] < len(bases):
                n = cursor[stratum]
                cursor[stratum] += 1
                text = _say(bases[n], stratum.family, n, korean)
                if text in seen:
                    # a phrase another stratum chose may mean this one too ("청소기 켜
                    # 버려": the speaker's room, and no room); it still looks for its own
                    if text in kept and _means(understands(text), stratum, home):
                        chosen.covered.add(stratum)
                    continue
                seen.add(text)
                if not _means(understands(text), stratum, home):
                    chosen.rejected += 1
                    continue
                chosen.phrases.append(text)
                kept.add(text)
                chosen.covered.add(stratum)
                chosen.per_intent[stratum.intent] += 1
                chosen.per_family[stratum.family] += 1
                break
            if cursor[stratum] < len(bases):
                still.append(stratum)
        live = still
    return chosen


def _takes(base: _Base, family: str) -> bool:
    if family in ("좀", FILLER, ADVERB):  # 좀 stands after what is asked for, never first
        return base.verb is not None and len(base.words) > 1
    if family == COLLOQUIAL:  # 꺼 버려, 켜 놔: verbs that leave a device in a state
        return base.verb in STATE_VERBS and len(base.words) > 1
    return family == PLAIN or base.verb is not None


def _say(base: _Base, family: str, n: int, korean: bool) -> str:
    """The base said with the n-th form of `family`; odd phrases put a particle on the
    word before the verb."""
    words = list(base.words)
    if base.verb is None or family == PLAIN:
        if korean and n % 2 and base.verb is not None:
            words = _with_particle(words)
        return " ".join(words)
    form = FAMILIES[family][n % len(FAMILIES[family])]
    head = words[:-1]
    if korean and n % 2 and family != "좀" and " 좀 " not in form:
        head = _with_particle(head + ["_"])[:-1]
    if "{h}" not in form:
        form = "{h} " + form
    return " ".join(form.format(h=" ".join(head), v=base.verb).split())


def _with_particle(words: list[str]) -> list[str]:
    """The word before the last with its particle: 으로/로 after a unit (도로), 을/를 on a
    noun (불을); unchanged where neither fits."""
    if len(words) < 2:
        return words
    before = words[-2]
    if before in NO_PARTICLE or not before or not is_hangul(before[-1]):
        return words
    if before.endswith(UNITS_TAKING_RO) or _is_number(before):
        return [*words[:-2], josa(before, "으로/로"), words[-1]]
    if before[-1] in "을를로에은는이가의" or is_verb_form(before):
        return words
    return [*words[:-2], josa(before, "을/를"), words[-1]]


def _is_number(word: str) -> bool:
    return sino_value(word) is not None or native_value(word) is not None


def _request_verb(word: str, query: bool) -> str | None:
    """How `word` is said before a request ending, or None when it takes none."""
    if query and word not in TELL_VERBS:
        return None
    if word.endswith(("다", "기")) or word.startswith("부탁"):
        return None  # dictionary forms (켜다), nominal forms (끄기), already a request
    if is_verb_form(word):
        return word
    if word.replace(" ", "") in ACTION_NOUNS:
        return word + "해"
    return None


def is_query(intent: str) -> bool:
    """Questions and "never mind" end as said; only 알려/말해 take a request ending."""
    return "Get" in intent or intent.endswith("Status") or intent == "HassNevermind"


# ---------------------------------------------------------------------------------------
# Filling template paths for each target of the home.


def _bases(
    blocks: list[Block],
    rules: dict[str, Any],
    lists: dict[str, SlotList],
    home: Home,
    korean: bool,
) -> Iterator[tuple[str, Target, list[_Base]]]:
    """(intent, target, filled paths simplest first) for every target of every block,
    merged per intent and target in the order blocks come."""
    merged: dict[tuple[str, Target], list[_Base]] = {}
    for block in blocks:
        paths = sorted((p for _, p in expand_block(block, rules)), key=_word_count)
        for target, fill in _targets(block, paths, lists, home, korean):
            bucket = merged.setdefault((block.intent, target), [])
            bucket.extend(_diagonal(paths, fill, is_query(block.intent), korean))
    for (intent, target), bases in merged.items():
        unique: dict[str, _Base] = {}
        for base in bases:
            unique.setdefault(" ".join(base.words), base)
        yield intent, target, list(unique.values())[:MAX_BASES_PER_TARGET]


def _word_count(path: Path) -> int:
    """Words of a path as said: a unit written onto its number (도 in {degrees}도) is
    part of the number's word, so "이십삼 도" costs no more than a bare "이십삼"."""
    return len("".join("x" if isinstance(p, SlotRef) else p for p in path).split())


Values = Callable[[SlotRef, str], list[str] | None]


def _diagonal(paths: list[Path], values: Values, query: bool, korean: bool) -> list[_Base]:
    """Filled paths in order of extra words plus variant: the simplest path with its first
    values first, then its second values and the next simplest path, and so on."""
    counts = [_word_count(p) for p in paths]
    widths = [_width(p, values) for p in paths]
    spans = [
        (path, count - counts[0], width)
        for path, count, width in zip(paths, counts, widths, strict=True)
        if width is not None
    ]
    last = max((extra + width for _, extra, width in spans), default=0)
    out: list[_Base] = []
    for step in range(last):
        for path, extra, width in spans:
            variant = step - extra
            if 0 <= variant < width:
                base = _fill(path, variant, values, query, korean)
                if base is not None:
                    out.append(base)
                    if len(out) >= MAX_BASES_PER_TARGET:
                        return out
    return out


def _width(path: Path, values: Values) -> int | None:
    """How many variants a path has (its longest value list), None when a slot is empty."""
    width = 1
    for i, part in enumerate(path):
        if isinstance(part, SlotRef):
            found = values(part, _next_word(path, i))
            if not found:
                return None
            width = max(width, len(found))
    return width


def _next_word(path: Path, i: int) -> str:
    for part in path[i + 1 :]:
        if isinstance(part, SlotRef):
            return ""
        if part.strip():
            return part.split()[0]
    return ""


def _fill(path: Path, n: int, values: Values, query: bool, korean: bool) -> _Base | None:
    pieces: list[str] = []
    for i, part in enumerate(path):
        if isinstance(part, SlotRef):
            found = values(part, _next_word(path, i))
            if not found:
                return None
            pieces.append(found[n % len(found)] + (" " if part.list_name[0] != "_" else ""))
        elif korean and "%" in part:
            pieces.append(part.replace("%", " 프로 " if n % 2 == 0 else " 퍼센트 "))
        else:
            pieces.append(part)
    words = "".join(pieces).split()
    if not words:
        return None
    if korean:
        words = _glue_particles(words)
        if not query and words[-1].endswith(("다", "기")):
            return None  # 켜다, 끄기: written forms nobody says to a device
    verb = _request_verb(words[-1], query) if korean else None
    return _Base(words, verb)


def _glue_particles(words: list[str]) -> list[str]:
    """A template's own particle written apart (프로 로) joins its word (프로로)."""
    out: list[str] = []
    for word in words:
        if out and word in ("로", "으로", "을", "를", "에", "의"):
            out[-1] += word
        else:
            out.append(word)
    return out


def _targets(
    block: Block, paths: list[Path], lists: dict[str, SlotList], home: Home, korean: bool
) -> Iterator[tuple[Target, Values]]:
    """The targets of `block` in `home`, each with the values its slots take there."""
    refs = {p.list_name for path in paths for p in path if isinstance(p, SlotRef)}
    domain = _block_domain(block)
    device_class = str(block.slots.get("device_class") or "")

    def common(ref: SlotRef, unit: str, classes: set[str] | None) -> list[str] | None:
        slot_list = lists.get(ref.list_name)
        if isinstance(slot_list, RangeList):
            return _numbers(ref.slot_name, slot_list, unit, korean)
        if not isinstance(slot_list, TextList):
            return None  # wildcards and unknown lists have nothing to say
        if ref.slot_name == "device_class" and classes is not ANY:
            return [s for s in slot_list.samples if _value(slot_list, s) in classes] or None
        return slot_list.samples or None

    if "name" in refs:
        for device in names_for(block, home):
            areas = home.area(device.area)

            def device_values(ref, unit, device=device, area=areas):
                if ref.list_name == "name":
                    return list(device.names)
                if ref.list_name == "area":
                    # "거실 거실 조명" says the room twice: only for names without it
                    if area is None or any(n.startswith(area.names) for n in device.names):
                        return None
                    return list(area.names)
                return common(ref, unit, {device.device_class or ""})

            yield Target("device", device.id, device.domain), device_values
        return
    if "area" in refs:
        for area in home.areas:
            present = _present(home, area, domain, device_class)
            if present is None:
                continue

            def area_values(ref, unit, area=area, present=present):
                if ref.list_name == "area":
                    return list(area.names)
                return common(ref, unit, present)

            yield Target("area", area.id, domain, device_class), area_values
        # a block whose area is optional also speaks of the speaker's room
        if not all(any(getattr(p, "list_name", "") == "area" for p in path) for path in paths):
            present = _present(home, None, domain, device_class)
            if present is not None:
                yield (
                    Target("domain" if domain else "none", "", domain, device_class),
                    lambda ref, unit, present=present: (
                        None if ref.list_name == "area" else common(ref, unit, present)
                    ),
                )
        return
    present = _present(home, None, domain, device_class)
    if present is not None:
        kind = "domain" if domain else "none"
        yield (
            Target(kind, "", domain, device_class),
            lambda ref, unit, present=present: common(ref, unit, present),
        )


ANY: set[str] = {"*"}  # no domain named: every device class will do


def _present(home: Home, area: Area | None, domain: str, device_class: str) -> set[str] | None:
    """Device classes of the home's devices of `domain` (in `area`), None when there are
    none; ANY when the block names no domain."""
    if not domain:
        return ANY
    found = {
        d.device_class or ""
        for d in home.devices
        if d.domain == domain
        and (area is None or d.area == area.id)
        and (not device_class or d.device_class == device_class)
    }
    return found or None


def _block_domain(block: Block) -> str:
    domain = block.slots.get("domain")
    if domain:
        return str(domain)
    wanted = block.requires_context.get("domain")
    return str(wanted) if isinstance(wanted, str) else ""


def _value(slot_list: TextList, spoken: str) -> Any:
    text = canonical_word(spoken)
    for end, value in slot_list.matches(text, 0):
        if end == len(text):
            return value.value
    return None


def _numbers(slot: str, numbers: RangeList, unit: str, korean: bool) -> list[str]:
    """Values of a number slot as said: usual values first; Sino-Korean words, and native
    ones where a counter wants them (한 시간) or people use both (스물세 도)."""
    usual = [
        v
        for v in USUAL_NUMBERS.get(slot, ())
        if numbers.low <= v <= numbers.high and (v - numbers.low) % numbers.step == 0
    ]
    if not usual:
        span = numbers.high - numbers.low
        usual = sorted({numbers.low + span // 2, numbers.low + span // 4, numbers.high})
    if not korean:
        return [str(v) for v in usual]
    said: list[str] = []
    for value in usual:
        native = native_words(value)
        if unit == "시간" and native:
            said.append(native)
        elif unit == "도" and native:
            said += [sino_words(value), native]
        else:
            said.append(sino_words(value))
    return said


def names_for(block: Block, home: Home) -> list[Device]:
    """Devices a block's context rules accept."""
    wanted = {k: as_list(v) for k, v in block.requires_context.items() if k != "area"}
    return [
        device
        for device in home.devices
        if device.domain in wanted.get("domain", [device.domain])
        and device.device_class in wanted.get("device_class", [device.device_class])
    ]


# ---------------------------------------------------------------------------------------
# Whether the presets understand a phrase as meant.


def _means(found: Any, stratum: Stratum, home: Home) -> bool:
    if found is None or found.intent != stratum.intent or found.confidence < 1.0:
        return False
    target, slots = stratum.target, found.slots
    named = next((d for d in home.devices if d.name == slots.get("name")), None)
    if target.kind == "device":
        device = next(d for d in home.devices if d.id == target.ident)
        return slots.get("name") == device.name
    if target.kind == "area":
        if "area" not in slots and named is None:
            return True  # an intent that takes no room (청소 시작): nothing says otherwise
        area = home.area(target.ident)
        in_area = slots.get("area") == (area.name if area else None)
        return in_area or (named is not None and named.area == target.ident)
    if target.kind == "domain" and "domain" in slots:
        return slots["domain"] == target.domain or (
            named is not None and named.domain == target.domain
        )
    return True
