"""The documentation holds together: every relative link in README.md and docs/*.md reaches an
existing file (and, with a #fragment, a heading of it), and the README's Quick start is the two
commands a fresh clone needs."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
QUICK_START = ("./scripts/loadgate run", "./scripts/test")

_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
_CODE_SPAN = re.compile(r"(`+).+?\1", re.S)
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # http:, https:, mailto:, ...


def documents() -> list[Path]:
    return [README, *sorted((ROOT / "docs").rglob("*.md"))]


def prose(text: str) -> str:
    """The text without fenced code blocks and code spans, where brackets are not links."""
    return _CODE_SPAN.sub("", _FENCE.sub("", text))


def links(text: str) -> list[str]:
    return _LINK.findall(prose(text))


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's anchor; a repeated heading gets -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    for heading in _HEADING.findall(_FENCE.sub("", path.read_text())):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


def broken_links(doc: Path) -> Iterator[str]:
    """Each relative link of `doc` whose file does not exist or whose #fragment names no
    heading of a Markdown file, with the reason."""
    for target in links(doc.read_text()):
        if _EXTERNAL.match(target):
            continue
        name, _, fragment = target.partition("#")
        path = (doc.parent / name).resolve() if name else doc
        if not path.exists():
            yield f"{target}: no such file {os.path.relpath(path, ROOT)}"
        elif fragment and path.suffix == ".md" and fragment not in anchors(path):
            yield f"{target}: no heading #{fragment} in {os.path.relpath(path, ROOT)}"


def section(text: str, title: str) -> str:
    """The body of the `## title` section (up to the next heading of level 2 or above)."""
    match = re.search(rf"^## {re.escape(title)}\s*$(.*?)(?=^#{{1,2}} |\Z)", text, re.M | re.S)
    assert match, f"no '## {title}' section"
    return match.group(1)


def commands(text: str) -> list[str]:
    """The command lines of the fenced code blocks of `text`, comments and blanks left out."""
    out: list[str] = []
    for block in _FENCE.finditer(text):
        for line in block.group(0).splitlines()[1:-1]:
            command = line.split("#", 1)[0].strip()
            if command:
                out.append(command)
    return out


def test_the_link_check_finds_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other\n\n## A `code` heading: here\n")
    doc = tmp_path / "doc.md"
    doc.write_text(
        "# Doc\n\n"
        "[ok](other.md) [ok](other.md#a-code-heading-here) [ok](#doc) [web](https://example.com)\n"
        "[gone](missing.md) [no heading](other.md#nowhere) ![img](pic.png)\n"
        "`[in code](missing-too.md)`\n\n```\n[in a block](missing-three.md)\n```\n"
    )
    assert list(broken_links(doc)) == [
        f"missing.md: no such file {os.path.relpath(tmp_path / 'missing.md', ROOT)}",
        f"other.md#nowhere: no heading #nowhere in {os.path.relpath(tmp_path / 'other.md', ROOT)}",
        f"pic.png: no such file {os.path.relpath(tmp_path / 'pic.png', ROOT)}",
    ]


def test_headings_get_githubs_anchors() -> None:
    assert slug("Capacity search (`loadgate search`)") == "capacity-search-loadgate-search"
    assert slug("Reading a run's result") == "reading-a-runs-result"
    assert slug("Which Loki figures: one copy, end to end") == (
        "which-loki-figures-one-copy-end-to-end"
    )


def test_every_relative_link_in_the_readme_and_docs_resolves() -> None:
    docs = documents()
    assert {"README.md", "manual.md", "architecture.md", "design-notes.md"} <= {
        d.name for d in docs
    }
    assert sum(len(links(d.read_text())) for d in docs) > 20  # the check sees the links
    broken = {str(d.relative_to(ROOT)): list(broken_links(d)) for d in docs}
    assert {d: b for d, b in broken.items() if b} == {}


def test_the_quick_start_is_the_two_commands_of_a_fresh_clone() -> None:
    quick_start = section(README.read_text(), "Quick start")
    assert commands(quick_start) == list(QUICK_START)
    for command in QUICK_START:
        script = ROOT / command.split()[0]
        assert script.is_file(), script
        assert os.access(script, os.X_OK), f"{script} is not executable"


def test_the_readme_is_the_front_door_and_dated_figures_live_in_measurements() -> None:
    """About 150 lines: what loadgate is and for whom, the two commands, what a run prints, the
    commands, the charm CI recipe and where to read on; no dated measurement (issue 39)."""
    text = README.read_text()
    assert len(text.splitlines()) <= 170
    for title in ("Quick start", "What a run prints", "Commands", "Gate a charm in its own CI",
                  "Where to read on"):  # fmt: skip
        assert section(text, title).strip(), title
    dates = re.findall(r"\b20\d\d-\d\d-\d\d\b", prose(text))
    assert dates == [], f"dated figures belong in docs/measurements.md: {dates}"
    assert "docs/measurements.md" in text
    assert "docs/charm-ci.md" in section(text, "Gate a charm in its own CI")
