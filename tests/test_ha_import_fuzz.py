"""Property tests over Home Assistant's registry JSON (the file format `sori home import`
and `[home] source = "home_assistant"` read): any registries give home tables or a
SoriError, never another exception; and the TOML written for any tables reads back as
exactly those tables, whatever their strings hold (no key or table of its own)."""

from __future__ import annotations

import contextlib
import tomllib
from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from sori.core.config import parse_config
from sori.core.errors import ConfigError, SoriError
from sori.provisioning.ha_import import Registries, home_tables, home_toml

TRICKY = list("ab거실 _.-\"'\\[]=#{},\n\r\t\x00\x1b\x7f\u202e\u200b\u2028\ufeff") + ["\ud800"]
"""Characters that end strings, lines and tables in TOML, or hide what a name shows."""

hostile_text = st.text(st.sampled_from(TRICKY) | st.characters(), max_size=10)
plain_name = st.text(st.sampled_from(list("ab거실방 _.-\"'\\[]=#")), min_size=1, max_size=8)
"""Names that pass the checks, TOML's quotes, brackets and backslashes included."""
json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | hostile_text,
    lambda inner: (
        st.lists(inner, max_size=2)
        | st.dictionaries(st.sampled_from(["name", "id", "x"]), inner, max_size=2)
    ),
    max_leaves=4,
)


def mostly(good: st.SearchStrategy, *bad: st.SearchStrategy) -> st.SearchStrategy:
    """Mostly `good`, now and then one of `bad`: so that many cases get as far as the
    TOML, and a hostile value is met alone as well as among others."""
    return st.integers(0, 19).flatmap(lambda n: st.one_of(*bad) if n == 0 else good)


name = mostly(plain_name, hostile_text, json_value)
entity_id = mostly(st.from_regex(r"[a-z_]{1,5}\.[a-z0-9_]{1,5}", fullmatch=True), hostile_text)
aliases = mostly(st.lists(name, max_size=3), json_value)
area = mostly(st.sampled_from(["living_room", "bedroom"]), name)


def records(fields: dict[str, Any], **optional: Any) -> st.SearchStrategy:
    """A registry: a list of records with these fields (mostly), or anything at all."""
    record = mostly(st.fixed_dictionaries(fields, optional=optional), json_value)
    return mostly(st.lists(record, max_size=3), json_value)


@st.composite
def registries(draw: st.DrawFn) -> Registries:
    ids = draw(st.lists(entity_id, max_size=4))
    exposed = {i: {"conversation": draw(st.booleans())} for i in ids}
    entity = {"name": name, "area_id": area}
    more = {"device_id": name, "original_name": name, "aliases": aliases,
            "device_class": name, "disabled_by": json_value}  # fmt: skip
    return Registries(
        floors=draw(records({"floor_id": name, "name": name})),
        areas=draw(records({"area_id": area, "name": name, "aliases": aliases}, floor_id=name)),
        devices=draw(records({"id": name}, name=name, name_by_user=name, area_id=area)),
        entities=[
            draw(
                mostly(
                    st.fixed_dictionaries({"entity_id": st.just(i), **entity}, optional=more),
                    json_value,
                )
            )
            for i in ids
        ],
        entries=draw(st.dictionaries(st.sampled_from(ids) if ids else st.nothing(), json_value)),
        exposed=draw(mostly(st.just({"exposed_entities": exposed}), json_value)),
        states=draw(records({"entity_id": entity_id}, attributes=json_value)),
    )


def written(tables: dict[str, Any]) -> dict[str, Any]:
    """What the TOML of `tables` should read back as: empty values and floors unwritten."""

    def kept(entry: dict[str, Any]) -> dict[str, Any]:
        always = {"id", "name", "domain"}
        return {k: v for k, v in entry.items() if k in always or (v and k != "floor")}

    home = {k: [kept(e) for e in v] for k, v in tables.items() if v}
    return {"home": home}


@given(found=registries())
@settings(max_examples=300, deadline=None)
def test_any_registries_give_tables_that_read_back_exactly_or_a_clear_error(found):
    if not isinstance(found.exposed, dict):
        found.exposed = {}  # the client refuses that itself
    try:
        tables = home_tables(found)
    except SoriError:
        event("refused")  # --hypothesis-show-statistics: how many get as far as the TOML
        return
    event("read")
    text = home_toml(tables, source_url='http://x"\n[shell]')
    assert tomllib.loads(text) == written(tables)
    with contextlib.suppress(ConfigError):  # e.g. two areas with one id: a clear error
        parse_config(tomllib.loads(text), source="imported")


safe_text = st.text(st.sampled_from(TRICKY[:-1]) | st.characters(exclude_categories=["Cs"]))
"""Any string that UTF-8 can hold (a lone surrogate is refused before any writing)."""


@given(
    areas=st.lists(
        st.fixed_dictionaries(
            {
                "id": safe_text,
                "name": safe_text,
                "aliases": st.lists(safe_text, max_size=3),
                "floor": safe_text,
            }
        ),  # fmt: skip
        max_size=3,
    ),
    devices=st.lists(
        st.fixed_dictionaries(
            {
                "id": safe_text,
                "name": safe_text,
                "domain": safe_text,
                "area": safe_text,
                "aliases": st.lists(safe_text, max_size=3),
                "device_class": safe_text,
            }
        ),  # fmt: skip
        max_size=3,
    ),
    url=safe_text,
)
@settings(max_examples=300, deadline=None)
def test_the_writer_alone_never_lets_a_string_out_of_its_quotes(areas, devices, url):
    """Even unchecked strings (newlines, quotes, NUL, DEL) stay values: the escaping does
    not lean on the checks before it."""
    tables = {"areas": areas, "devices": devices}
    assert tomllib.loads(home_toml(tables, url)) == written(tables)
