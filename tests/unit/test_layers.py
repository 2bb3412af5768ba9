"""The import graph of the production code (``domain``, ``projections``, ``service``): no import
runs back up the floors, and no module imports itself round a circle (``docs/internals/
layout.md``). Every import counts: at module level, inside a function, and under
``TYPE_CHECKING`` (a type-only import is still a dependency of the design)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("domain", "projections", "service")

# Floors, lowest first: a module may import its own floor and those below, never above. A
# module belongs to the floor of the longest prefix of its name listed here.
FLOORS: list[tuple[str, ...]] = [
    ("domain.errors", "domain.ids", "domain.findings"),
    ("domain.rules",),
    ("domain.fairness", "domain.tlog"),
    ("domain",),  # the aggregates and the policies across them
    ("projections",),
    (  # what every part of the service stands on, and the event store
        "service._generated",
        "service.clock",
        "service.errors",
        "service.caller",
        "service.logging",
        "service.small_files",
        "service.seed_keys",
        "service.bounded",
        "service.http_server",
        "service.eventstore",
    ),
    (  # the application and what reads or keeps the store beside it
        "service.application",
        "service.replies",
        "service.opening",
        "service.sweeper",
        "service.evidence",
        "service.transparency",
        "service.security",
        "service.report",
    ),
    (
        "service.rpc",
        "service.metrics",
        "service.tiles",
        "service.tracing",
        "service.web",
        "service.client",
    ),  # the adapters
    ("service.routing",),  # passes a table's calls to the replica that owns it
    ("service.bootstrap",),  # assembles a serving process
    ("service.tools", "service.witness"),  # offline: never serves
    ("service.entrypoints", "service.protogen"),  # where a person or a process starts
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            if "_generated" not in path.parts:
                found[module_name(path)] = path
    return found


def imported(path: Path, name: str, known: set[str]) -> Iterator[str]:
    """The project's modules that ``path`` (module ``name``) imports, anywhere in it."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            # ``from a import b`` imports the module a.b when there is one, else a name of a
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name and target.split(".")[0] in PACKAGES:
                yield target


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: set(imported(path, name, known)) for name, path in found.items()}


def floor(name: str) -> int:
    best, level = -1, -1
    for index, prefixes in enumerate(FLOORS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > best:
                best, level = len(prefix), index
    if level < 0:
        raise AssertionError(f"{name} is on no floor: add it to FLOORS")
    return level


def test_every_module_is_on_a_floor() -> None:
    for name in modules():
        if name not in PACKAGES:
            floor(name)


def test_no_import_runs_back_up_the_floors() -> None:
    wrong = sorted(
        f"{name} (floor {floor(name)}) imports {target} (floor {floor(target)})"
        for name, targets in graph().items()
        if name not in PACKAGES
        for target in targets
        if target not in PACKAGES and floor(target) > floor(name)
    )
    assert not wrong, "\n".join(wrong)


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_itself_round_a_circle() -> None:
    edges = {
        name: {t for t in targets if t not in PACKAGES}
        for name, targets in graph().items()
        if name not in PACKAGES
    }
    found = circles(edges)
    assert not found, "circles: " + "; ".join(" ⇄ ".join(c) for c in found)


@pytest.mark.parametrize(
    ("edges", "expected"),
    [
        ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ],
)
def test_circles_are_found(edges: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert circles(edges) == expected


def test_a_module_above_its_importer_is_found() -> None:
    assert floor("service.rpc.server") > floor("service.eventstore.writer")
    assert floor("domain.round") > floor("domain.rules.cards")
    assert floor("service.entrypoints.cli") > floor("service.bootstrap")
