"""The pages about the code stay true to it (issue 20), beside ``test_docs.py``:

- docs/internals/layout.md is the map of the code: its floors are the import floors
  tests/unit/test_layers.py enforces (``FLOORS``), in order, and its tables name every module
  of ``domain/``, ``projections/`` and ``service/`` (generated stubs aside), each either as a
  path (`` `service/opening.py` ``) or by its name in its package's row (`` `writer` `` in the
  row of `` `service/eventstore/` ``). Every other lowercase name in code in a package's row
  is a module of the package or a name one of its modules defines (`` `create_server` ``), so
  a module renamed or gone cannot stay on the map.
- docs/rules.md says where the rules live in the code: every name it gives there is one that
  ``domain/`` defines, and every file it names is one of ``domain/``.
- docs/internals/testing.md lists the sections ``make bench`` runs (``tests/bench/__main__.py``
  ``SECTIONS``, and the Makefile's comment) and every ``THIRTEEN_*`` variable the Makefile sets.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from tests.unit.test_docs import DOCS, LAYOUT, PACKAGES, REPO
from tests.unit.test_layers import FLOORS

# The map of the code --------------------------------------------------------------------------

MAP_END = "\n## Where things moved"  # below: old paths, struck out
FLOOR_ITEM = re.compile(r"^(\d+)\.\s")
FLOOR_NAME = re.compile(r"`((?:domain|projections|service)(?:\.\w+)*)`")
CODE = re.compile(r"`([^`]+)`")
MODULE_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")
CELL = re.compile(r"(?<!\\)\|")  # a cell ends at a pipe that is not escaped


def layout_floors(text: str) -> list[set[str]]:
    """The import floors the map lists, lowest first: the numbered list's items, each the set of
    modules (`` `service.eventstore` ``) it names."""
    floors: list[set[str]] = []
    listing = False
    for line in text.split(MAP_END)[0].splitlines():
        item = FLOOR_ITEM.match(line)
        if item:
            listing = True
            floors.append(set(FLOOR_NAME.findall(line)))
        elif listing and line.startswith("   ") and line.strip():
            floors[-1] |= set(FLOOR_NAME.findall(line))
        elif listing:
            break
    return floors


def floor_failures(listed: list[set[str]], floors: Sequence[tuple[str, ...]]) -> list[str]:
    """How the floors a page lists differ from ``floors``, floor by floor (1 is the lowest)."""
    failures = []
    if len(listed) != len(floors):
        failures.append(f"{len(listed)} floors listed, {len(floors)} in FLOORS")
    for number, (shown, floor) in enumerate(zip(listed, floors, strict=False), start=1):
        if shown != set(floor):
            only_page = ", ".join(sorted(shown - set(floor))) or "none"
            only_test = ", ".join(sorted(set(floor) - shown)) or "none"
            failures.append(
                f"floor {number}: only listed: {only_page}; only in FLOORS: {only_test}"
            )
    return failures


def map_rows(text: str) -> Iterator[tuple[int, list[str], str]]:
    """The rows of the map's tables, with their line: the code of the first cell (the paths the
    row is about), and the rest of the row."""
    for number, line in enumerate(text.split(MAP_END)[0].splitlines(), start=1):
        if line.startswith("| `"):
            cells = CELL.split(line)[1:-1]
            yield number, CODE.findall(cells[0]), "|".join(cells[1:])


def module_files(repo: Path = REPO) -> list[str]:
    """Every module of the code as a path (``service/eventstore/writer.py``): not the packages'
    ``__init__.py`` (the packages are checked apart), not the generated stubs."""
    found = []
    for root in PACKAGES:
        for path in sorted((repo / root).rglob("*.py")):
            relative = path.relative_to(repo).as_posix()
            if path.name != "__init__.py" and "_generated" not in relative:
                found.append(relative)
    return found


def defined_names(modules: list[Path]) -> set[str]:
    """The names ``modules`` define at their top level and in their classes' bodies, and the
    strings their top-level assignments hold (a header's name)."""
    names: set[str] = set()
    for path in modules:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            inner = node.body if isinstance(node, ast.ClassDef) else []
            for each in (node, *inner):
                if isinstance(each, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    names.add(each.name)
                elif isinstance(each, ast.Assign | ast.AnnAssign) and each.value is not None:
                    targets = each.targets if isinstance(each, ast.Assign) else [each.target]
                    names |= {target.id for target in targets if isinstance(target, ast.Name)}
                    names |= {
                        constant.value
                        for constant in ast.walk(each.value)
                        if isinstance(constant, ast.Constant) and isinstance(constant.value, str)
                    }
    return names


def row_names(rest: str) -> Iterator[tuple[str, str | None]]:
    """The lowercase names in code in a row's cells, each with the path in code right before it
    when there is one (`` `service/opening.py` `open_app` ``: a name of that module). A command
    (`` `thirteen` ``, `` `thirteen worker` ``) is no name of the code."""
    before: tuple[int, str] | None = None
    for code in CODE.finditer(rest):
        name = code.group(1)
        follows = before is not None and not rest[before[0] : code.start()].strip()
        if MODULE_NAME.match(name) and name != "thirteen":
            yield name, before[1] if follows and before is not None else None
        before = (code.end(), name) if name.endswith(".py") else None


def map_failures(text: str, repo: Path = REPO, page: str = "docs/internals/layout.md") -> list[str]:
    """Modules of the code the map does not name, and names in a package's row that are no
    module of it, nor a name its modules define."""
    failures = []
    named: set[str] = set()
    for number, heads, rest in map_rows(text):
        named |= {path for path in CODE.findall(rest) + heads if path.endswith(".py")}
        for package in (head.rstrip("/") for head in heads if head.endswith("/")):
            if not (repo / package / "__init__.py").exists():
                continue
            for name, owner in row_names(rest):
                module = f"{package}/{name}.py"
                if owner is None and (
                    (repo / module).exists() or (repo / package / name / "__init__.py").exists()
                ):
                    named.add(module)
                    continue
                modules = [repo / owner] if owner else sorted((repo / package).glob("*.py"))
                if not all(m.exists() for m in modules) or name not in defined_names(modules):
                    where_ = f"`{owner}`" if owner else f"`{package}/`"
                    failures.append(f"{page}:{number}: `{name}` is no module or name of {where_}")
    failures += [f"{page}: names no `{m}`" for m in module_files(repo) if m not in named]
    return failures


def test_the_layout_lists_the_import_floors_of_test_layers() -> None:
    listed = layout_floors(LAYOUT.read_text(encoding="utf-8"))
    failures = floor_failures(listed, FLOORS)
    assert not failures, "docs/internals/layout.md against FLOORS:\n" + "\n".join(failures)


def test_a_floor_left_out_or_merged_is_caught() -> None:
    page = (
        "Floors:\n\n1. `domain.rules`\n2. the service: `service.eventstore`,\n"
        "   `service.rpc`\n\nMore.\n\n3. not a floor: after the list\n"
    )
    assert layout_floors(page) == [{"domain.rules"}, {"service.eventstore", "service.rpc"}]
    floors = [("domain.rules",), ("service.eventstore",), ("service.rpc",)]
    assert floor_failures(layout_floors(page), floors) == [
        "2 floors listed, 3 in FLOORS",
        "floor 2: only listed: service.rpc; only in FLOORS: none",
    ]


def test_the_layout_names_every_module_and_only_modules_that_exist() -> None:
    failures = map_failures(LAYOUT.read_text(encoding="utf-8"))
    assert not failures, "the map against the code:\n" + "\n".join(failures)


def test_a_module_left_off_the_map_or_gone_is_caught(tmp_path: Path) -> None:
    store = tmp_path / "service" / "eventstore"
    store.mkdir(parents=True)
    for name in ("__init__", "writer", "eventlog", "batch"):
        (store / f"{name}.py").write_text("def command() -> None: ...\n", encoding="utf-8")
    (tmp_path / "service" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "service" / "opening.py").write_text("def open_app() -> None: ...\n", "utf-8")
    (tmp_path / "service" / "clock.py").write_text("", encoding="utf-8")
    page = (
        "| path | what it holds |\n|---|---|\n"
        "| `service/opening.py` | `open_app` |\n"
        "| `service/eventstore/` | `writer` (`command`, `thirteen worker`), `application`; "
        "`service/opening.py` `open_app`, `service/opening.py` `close_app` |\n"
        "\n## Where things moved\n\n| ~~`service/clock.py`~~ | `service/clock.py` |\n"
    )
    assert map_failures(page, repo=tmp_path, page="layout.md") == [
        "layout.md:4: `application` is no module or name of `service/eventstore/`",
        "layout.md:4: `close_app` is no module or name of `service/opening.py`",
        "layout.md: names no `service/clock.py`",
        "layout.md: names no `service/eventstore/batch.py`",
        "layout.md: names no `service/eventstore/eventlog.py`",
    ]


# Where the rules live, and the make targets ---------------------------------------------------

RULE_BOOK = DOCS / "rules.md"
TESTING = DOCS / "internals" / "testing.md"
CODE_NAME = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?$")


def section(text: str, heading: str) -> str:
    """The text under ``## heading``, up to the next heading of its level or above."""
    start = text.index(f"\n## {heading}\n") + len(heading) + 5
    end = re.search(r"^#{1,2} ", text[start:], flags=re.M)
    return text[start : start + end.start()] if end else text[start:]


def test_the_rule_book_points_to_names_the_domain_defines() -> None:
    where = section(RULE_BOOK.read_text(encoding="utf-8"), "Where the rules live in the code")
    domain = sorted((REPO / "domain").rglob("*.py"))
    defined = defined_names(domain)
    names = [name for name in CODE.findall(where) if CODE_NAME.match(name)]
    assert len(names) > 20
    files = {path.name for path in domain}
    unknown = [
        n
        for n in names
        if (n not in files if n.endswith(".py") else not set(n.split(".")) <= defined)
    ]
    assert not unknown, "docs/rules.md names what domain/ does not define: " + ", ".join(unknown)


def bench_sections() -> list[str]:
    """The sections ``python -m tests.bench`` runs, read from its ``SECTIONS``."""
    tree = ast.parse((REPO / "tests" / "bench" / "__main__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.AnnAssign | ast.Assign) and isinstance(node.value, ast.Dict):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(target, ast.Name) and target.id == "SECTIONS" for target in targets):
                return [str(k.value) for k in node.value.keys if isinstance(k, ast.Constant)]
    raise AssertionError("tests/bench/__main__.py has no SECTIONS")


def test_testing_md_lists_every_bench_section_and_makefile_variable() -> None:
    testing = TESTING.read_text(encoding="utf-8")
    (bench,) = [line for line in testing.splitlines() if line.startswith("| `make bench`")]
    sections = bench_sections()
    listed = re.search(r"sections \(([^)]*)\)", bench)
    assert listed is not None, "the make bench row lists no sections"
    assert CODE.findall(listed.group(1)) == sections, f"make bench's sections are {sections}"
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    comment = re.search(r"sections \(([a-z #\n]+)\)", makefile)  # a comment over two lines
    assert comment is not None, "the Makefile's bench comment lists no sections"
    assert [w for w in comment.group(1).split() if w != "#"] == sections
    variables = sorted(set(re.findall(r"\b(THIRTEEN_\w+)=", makefile)))
    missing = [v for v in variables if f"`{v}`" not in testing]
    assert not missing, "the Makefile sets, testing.md does not list: " + ", ".join(missing)
