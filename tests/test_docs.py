"""The README and docs/ as a reader meets them in a clone: every relative link and anchor
resolves, nothing points at data a clone lacks or at a package index Sori is not on, the
README stays a short guide, and the license pyproject declares is there."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
PAGES = [REPO / "README.md", *sorted(DOCS.glob("*.md"))]
MAX_README_LINES = 350
FENCE = re.compile(r"^ {0,3}(```|~~~)")
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FORBIDDEN = {
    "../shared": "a clone has no ../shared: point at something the repository ships",
    "pip install sori": "Sori is not on PyPI: say 'from a clone' or build the wheel",
    "pip install 'sori[": "Sori is not on PyPI: name the extra; scripts/install.sh installs it",
    'pip install "sori[': "Sori is not on PyPI: name the extra; scripts/install.sh installs it",
    "<this repository>": "a placeholder, not a command: say 'from the clone'",
}


def prose(text: str) -> list[str]:
    """The lines of a Markdown page outside fenced code blocks, inline code removed."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(re.sub(r"(`+).*?\1", "", line))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading anchor of a page (a repeated heading gets -1, -2, ... as on GitHub)."""
    seen: dict[str, int] = {}
    found = set()
    lines, fenced = [], False
    for line in page.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    for line in lines:
        match = re.match(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> list[str]:
    """Relative link targets of a page (web and mail links left out); a link's text may
    run over a line break."""
    text = "\n".join(prose(page.read_text(encoding="utf-8")))
    return [t for t in LINK.findall(text) if not re.match(r"^[a-z][a-z0-9+.-]*:", t, re.I)]


def broken_links(page: Path) -> list[str]:
    """Each relative link of `page` whose file, or heading, does not exist."""
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        if not where.exists():
            broken.append(f"{target}: no such file")
        elif not where.is_relative_to(REPO):
            broken.append(f"{target}: outside the repository")
        elif anchor and where.suffix == ".md" and anchor not in anchors(where):
            broken.append(f"{target}: no heading #{anchor} in {where.name}")
    return broken


def test_there_are_docs_pages() -> None:
    assert len(list(DOCS.glob("*.md"))) >= 5


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = broken_links(page)
    assert not broken, f"{page.relative_to(REPO)}:\n" + "\n".join(broken)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_nothing_points_where_a_reader_cannot_go(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    found = [f"{needle!r}: {why}" for needle, why in FORBIDDEN.items() if needle in text]
    assert not found, f"{page.relative_to(REPO)}:\n" + "\n".join(found)


def test_the_readme_is_a_short_guide() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines; move depth to docs/"
    first_block = next(i for i, line in enumerate(lines) if line.startswith("```"))
    assert lines[first_block + 1].startswith("bash scripts/install.sh && .venv/bin/sori demo")
    assert lines[first_block + 2].startswith("bash scripts/test.sh")


def test_the_license_is_the_one_pyproject_declares() -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert declared["project"]["license"] == "Apache-2.0"
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text


def test_the_link_checker_sees_what_it_should(tmp_path, monkeypatch) -> None:
    """The helpers themselves: code is not prose, headings make GitHub's anchors, and a
    link to a missing file or heading is reported."""
    assert slug("Load test: `sori edge bench`") == "load-test-sori-edge-bench"
    assert slug("The wake phrase over Sori's own voice") == "the-wake-phrase-over-soris-own-voice"
    assert slug("2. Sori as HA's engine") == "2-sori-as-has-engine"
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path.resolve())
    (tmp_path / "there.md").write_text("# Top\n```sh\n# not a heading\n```\n## Top\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[a](there.md) `[b](gone.md)` [c\nd](there.md#top-1) [e](https://x.org)\n"
        "```\n[f](gone.md)\n```\n[g](gone.md) [h](there.md#not-a-heading) [i](#nowhere)\n",
        encoding="utf-8",
    )
    assert links(page) == ["there.md", "there.md#top-1", "gone.md", "there.md#not-a-heading",
                           "#nowhere"]  # fmt: skip
    assert [b.split(":")[0] for b in broken_links(page)] == [
        "gone.md",
        "there.md#not-a-heading",
        "#nowhere",
    ]
