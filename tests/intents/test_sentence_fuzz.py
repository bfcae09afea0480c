"""Hostile sentences and names (issue 25): random Korean syllables, particles, connectives
and repeats through the matcher and the multi-command split never raise, never hang,
and never give more than MAX_PARTS commands; random home names give a home or a
ConfigError."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cpu_time import cpu_seconds
from sori.assemble.understanding import Swappable, home_from_config, presets_from_config
from sori.core.config import parse_config
from sori.core.errors import ConfigError
from sori.core.home import MAX_NAME_CHARS
from sori.understanding.intents.compile import home_lists
from sori.understanding.intents.korean import canonical, leaves_hanging
from sori.understanding.multi_command import MAX_PARTS, plan

WORDS = [
    "거실", "안방", "불", "조명", "에어컨", "창문", "커튼", "티비", "켜", "꺼", "열어", "닫아",
    "켜줘", "꺼줘", "켜고", "끄고", "하고", "이랑", "랑", "그리고", "도", "면", "면서", "는데",
    "니까", "지만", "거든", "다가", "좋겠어", "주면", "을", "를", "에", "다", "모두", "26도",
    "50%", "-5", "마", "지", "안", "(", "|", "{name}", "\x00", "\u202e", " ",
]  # fmt: skip
SYLLABLES = st.characters(min_codepoint=0xAC00, max_codepoint=0xD7A3)
WORD = st.one_of(st.sampled_from(WORDS), st.text(SYLLABLES, min_size=1, max_size=4))
SENTENCE = st.one_of(
    st.lists(WORD, max_size=40).map(" ".join),
    st.tuples(st.lists(WORD, min_size=1, max_size=6).map(" ".join), st.integers(1, 300)).map(
        lambda said: (said[0] + " ") * said[1]
    ),
    st.text(max_size=300),
)
FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)


@FUZZ
@given(text=SENTENCE)
def test_any_sentence_is_matched_or_refused_with_at_most_the_cap_of_commands(presets, text):
    understanding = Swappable(presets)
    seconds, (found, several) = cpu_seconds(
        lambda: (understanding.match(text), plan(understanding, text))
    )
    assert seconds < 2.0
    if found is not None:
        assert found.intent
    if several is not None:
        assert len(several.parts) <= MAX_PARTS
        assert not (several.too_many and several.parts)
    leaves_hanging(canonical(text).text)


NAME = st.one_of(
    st.text(SYLLABLES, min_size=1, max_size=80),
    st.text(max_size=100),
    st.sampled_from(["거실" * 600, "가" * 64, "가" * 65, "(거실|안방)", "{name}", " "]),
)


@FUZZ
@given(names=st.lists(NAME, min_size=1, max_size=4), said=SENTENCE)
def test_any_home_names_give_a_home_or_a_config_error(names, said):
    """The names a config may hold build the matcher's name lists, which any text walks."""
    devices = [
        {"id": f"light.n{i}", "name": name, "aliases": names[:i]} for i, name in enumerate(names)
    ]
    try:
        config = parse_config({"home": {"devices": devices}})
    except ConfigError as error:
        assert "\n" not in str(error)
        return
    text = canonical(said).text
    for values in home_lists(home_from_config(config.home)).values():
        for pos in range(0, len(text), 7):
            list(values.matches(text, pos))
            list(values.fuzzy_matches(text, pos, 1.0))


def test_a_home_of_names_at_the_limit_compiles_and_matches_a_split_sentence():
    names = ["가" * MAX_NAME_CHARS, "나" * MAX_NAME_CHARS]
    devices = [{"id": f"light.n{i}", "name": n} for i, n in enumerate(names)]
    config = parse_config({"intents": {"home_assistant": False}, "home": {"devices": devices}})
    presets = presets_from_config(config.intents, home_from_config(config.home))
    several = plan(Swappable(presets), f"{names[0]} 켜고 {names[1]} 꺼줘")
    assert [p.match.intent for p in several.parts] == ["HassTurnOn", "HassTurnOff"]
