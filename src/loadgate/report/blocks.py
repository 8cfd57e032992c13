"""The blocks of a report page (headings, paragraphs, bullets, tables, images) and their two
renderings: Markdown (report.md) and one self-contained HTML file (report.html). Pure."""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2


@dataclass(frozen=True)
class Para:
    text: str


@dataclass(frozen=True)
class Bullets:
    items: tuple[str, ...]


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Image:
    file: str  # relative to the page
    alt: str


Block = Heading | Para | Bullets | Table | Image


# ---- Markdown ------------------------------------------------------------------------------


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(blocks: Sequence[Block]) -> str:
    out: list[str] = []
    for b in blocks:
        if isinstance(b, Heading):
            out += ["#" * b.level + " " + b.text, ""]
        elif isinstance(b, Para):
            out += [b.text, ""]
        elif isinstance(b, Bullets):
            out += [f"- {item}" for item in b.items] + [""]
        elif isinstance(b, Table):
            out.append("| " + " | ".join(_md_cell(h) for h in b.header) + " |")
            out.append("|" + "|".join("---" for _ in b.header) + "|")
            out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in b.rows]
            out.append("")
        else:
            out += [f"![{_md_cell(b.alt)}]({b.file})", ""]
    return "\n".join(out)


# ---- HTML ----------------------------------------------------------------------------------

_STYLE = (
    "body{font-family:sans-serif;max-width:1400px;margin:1em auto;padding:0 1em}"
    "table{border-collapse:collapse;font-size:13px;margin:0.5em 0}"
    "th,td{border:1px solid #ccc;padding:3px 6px;text-align:left}"
    "th{background:#f0f0f0}td.PASS{background:#e6f4e6}td.FAIL{background:#fbe6e6}"
    "img{max-width:100%;border:1px solid #eee}"
)


def _inline(text: str) -> str:
    """Escaped text; `code` and **bold** from the Markdown source become tags."""
    out = html.escape(text)
    out = re.sub(r"`([^`]*)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]*)\*\*", r"<b>\1</b>", out)


def _verdict_class(cell: str) -> str:
    word = cell.split(" ", 1)[0] if cell else ""
    return f' class="{word}"' if word in ("PASS", "FAIL") else ""


def html_page(
    blocks: Sequence[Block],
    title: str = "loadgate report",
    embedded: Mapping[str, bytes] | None = None,
) -> str:
    """The page as HTML; an image whose file is in `embedded` (name -> PNG bytes) is inlined as
    a data URI, so the page is one self-contained file."""
    embedded = embedded or {}
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
    ]
    for b in blocks:
        if isinstance(b, Heading):
            out.append(f"<h{b.level}>{_inline(b.text)}</h{b.level}>")
        elif isinstance(b, Para):
            out.append(f"<p>{_inline(b.text)}</p>")
        elif isinstance(b, Bullets):
            out.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in b.items) + "</ul>")
        elif isinstance(b, Table):
            head = "".join(f"<th>{html.escape(h)}</th>" for h in b.header)
            body = "".join(
                "<tr>"
                + "".join(f"<td{_verdict_class(c)}>{html.escape(c)}</td>" for c in row)
                + "</tr>"
                for row in b.rows
            )
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        else:
            data = embedded.get(b.file)
            src = (
                "data:image/png;base64," + base64.b64encode(data).decode("ascii")
                if data is not None
                else html.escape(b.file, quote=True)
            )
            out.append(f'<p><img src="{src}" alt="{html.escape(b.alt, quote=True)}"></p>')
    out.append("</body></html>")
    return "\n".join(out) + "\n"
