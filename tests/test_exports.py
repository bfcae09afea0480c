"""The public surface is explicit: `sori.__all__` is complete, sorted and importable."""

from __future__ import annotations

import sori


def test_all_is_sorted_and_every_name_exists():
    assert sori.__all__ == sorted(sori.__all__)
    for name in sori.__all__:
        assert hasattr(sori, name), name


def test_every_public_name_is_listed():
    public = {
        name
        for name, value in vars(sori).items()
        if not name.startswith("_") and not getattr(value, "__name__", "").startswith("sori.")
    }
    assert public <= set(sori.__all__), sorted(public - set(sori.__all__))


def test_every_error_is_a_sori_error():
    for name in sori.__all__:
        value = getattr(sori, name)
        if isinstance(value, type) and name.endswith("Error"):
            assert issubclass(value, sori.SoriError)
