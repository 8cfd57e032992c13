"""What the modules of a Python source tree import, read with `ast` (nothing is imported or run),
and the loops in it.

`imports(file, src)` lists a file's import statements, lazy ones and those under
`if TYPE_CHECKING:` too, relative ones resolved. `module_graph(src, top)` is the tree's files as
modules (`loadgate.records.result`), each with the modules of the tree it imports: `from a
import b` points at module `a.b` when the tree has it, else at `a` (a name of `a`, or of its
`__init__.py`). `package_graph` groups those by package (the first folder under the top
package; a top-level file is a package of its own). `loops(graph)` gives the loops of a graph, each
a path back to its start, every arrow of a loop in one of them.

Imports under `if TYPE_CHECKING:` count: the annotation ties the two files as surely as a call
does (a reader of one must read the other), and a loop through one is a loop the code hides.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator, Mapping
from pathlib import Path

Graph = Mapping[str, frozenset[str]]


def imports(file: Path, src: Path) -> Iterator[tuple[str, tuple[str, ...]]]:
    """Each import statement of `file` (under `src`, the folder holding the top package), lazy
    ones too, as (module, names taken from it): `import a.b` is ("a.b", ()); `from ..x import
    y` in loadgate/t/m.py is ("loadgate.x", ("y",))."""
    package = list(file.relative_to(src).parts[:-1])  # __init__.py too: its folder
    for node in ast.walk(ast.parse(file.read_text(), filename=str(file))):
        if isinstance(node, ast.Import):
            yield from ((alias.name, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            yield module, tuple(alias.name for alias in node.names)


def module_name(file: Path, src: Path) -> str:
    """`src/loadgate/records/result.py` is `loadgate.records`'s `result`; an `__init__.py` is
    its package."""
    parts = file.relative_to(src).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_graph(src: Path, top: str) -> dict[str, frozenset[str]]:
    """Every module of the package `top` under `src`, with the modules of `top` it imports."""
    files = {module_name(f, src): f for f in sorted((src / top).rglob("*.py"))}
    graph: dict[str, frozenset[str]] = {}
    for name, file in files.items():
        targets: set[str] = set()
        for module, names in imports(file, src):
            within = [f"{module}.{n}" for n in names if f"{module}.{n}" in files]
            targets |= set(within) if within else {module} & files.keys()
            if len(within) < len(names) and module in files:
                targets.add(module)  # a name of the module itself, beside its submodules
        graph[name] = frozenset(targets - {name})
    return graph


def package_of(module: str, top: str) -> str:
    """The first name under `top` (`loadgate.records.result` -> `records`); `top` itself is
    `__init__`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == top else "__init__"


def package_graph(modules: Graph, top: str) -> dict[str, frozenset[str]]:
    """The packages of `top`, each with the other packages its modules import."""
    graph: dict[str, set[str]] = {}
    for module, targets in modules.items():
        package = package_of(module, top)
        graph.setdefault(package, set()).update(package_of(t, top) for t in targets)
    return {p: frozenset(t - {p}) for p, t in graph.items()}


def witness(modules: Graph, top: str, a: str, b: str) -> tuple[str, str]:
    """A module of package `a` and one of package `b` that it imports (the first, sorted)."""
    return min(
        (m, t)
        for m, targets in modules.items()
        if package_of(m, top) == a
        for t in targets
        if package_of(t, top) == b
    )


def _shortest_path(graph: Graph, start: str, end: str, within: frozenset[str]) -> list[str]:
    """The shortest path from `start` to `end` inside `within` (breadth first, sorted)."""
    came_from = {start: start}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if node == end:
            path = [end]
            while path[-1] != start:
                path.append(came_from[path[-1]])
            return path[::-1]
        for nxt in sorted(graph.get(node, frozenset()) & within):
            if nxt not in came_from:
                came_from[nxt] = node
                queue.append(nxt)
    raise ValueError(f"no way from {start} to {end} inside {sorted(within)}")


def _components(graph: Graph) -> list[frozenset[str]]:
    """The strongly connected components of `graph` with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, frozenset())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = {stack.pop()}
            while node not in component:
                component.add(stack.pop())
            if len(component) > 1:
                found.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def loops(graph: Graph) -> list[list[str]]:
    """The loops of the graph, every arrow of a tangle (nodes that reach each other) in one:
    for each arrow a -> b inside a tangle, a and the shortest way from b back to a. Each loop
    once, from its first node in sorted order, back to it; empty when the arrows only point
    one way."""
    found: set[tuple[str, ...]] = set()
    for tangle in _components(graph):
        for a in tangle:
            for b in graph.get(a, frozenset()) & tangle:
                loop = [a, *_shortest_path(graph, b, a, tangle)[:-1]]
                first = loop.index(min(loop))
                found.add(tuple(loop[first:] + loop[:first]))
    return [[*loop, loop[0]] for loop in sorted(found)]
