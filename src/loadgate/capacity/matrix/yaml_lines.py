"""YAML with the line of every value, so errors in a matrix file name the field and its line
(`experiments[1].hand.exporter (line 14)`). Pure: text in, values and lines out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

Path = tuple[str | int, ...]


class YamlError(ValueError):
    """The text is not valid YAML (or has a key twice); the message names the line."""


@dataclass(frozen=True)
class Located:
    """A YAML document's value and the line (1-based) each path in it starts on."""

    data: Any
    lines: dict[Path, int] = field(default_factory=dict[Path, int])

    def line(self, path: Path) -> int | None:
        """The line of `path`, or of the nearest enclosing value that has one (not the whole
        document's: a key missing at the top has no line)."""
        for cut in range(len(path), 0 if path else -1, -1):
            if path[:cut] in self.lines:
                return self.lines[path[:cut]]
        return None


def name(path: Path) -> str:
    """`experiments[1].hand.exporter`."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out or "(the file)"


def load(text: str) -> Located:
    """The document in `text` and the line of each value. Raises YamlError."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise YamlError(f"not valid YAML: {exc}") from None
    lines: dict[Path, int] = {}
    if node is not None:
        _walk(node, (), lines)
    return Located(data, lines)


def _walk(node: yaml.Node, path: Path, lines: dict[Path, int]) -> None:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        pairs: Sequence[tuple[yaml.Node, yaml.Node]] = node.value  # pyright: ignore[reportUnknownMemberType]
        for key, value in pairs:
            text = str(key.value)  # pyright: ignore[reportUnknownMemberType]
            line = key.start_mark.line + 1
            if text in seen:
                raise YamlError(
                    f"{name((*path, text))} (line {line}): given twice (first on line {seen[text]})"
                )
            seen[text] = line
            _walk(value, (*path, text), lines)
            lines[(*path, text)] = line
    elif isinstance(node, yaml.SequenceNode):
        items: Sequence[yaml.Node] = node.value  # pyright: ignore[reportUnknownMemberType]
        for i, item in enumerate(items):
            _walk(item, (*path, i), lines)


def mapping_items(value: object) -> list[tuple[str, Any]]:
    """A mapping's items with text keys (the caller checked it is a mapping)."""
    assert isinstance(value, Mapping)
    return [(str(k), v) for k, v in value.items()]  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
