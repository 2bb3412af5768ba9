"""The documentation stays true to the code it describes (issue 20): every ``thirteen`` command
that README.md and docs/ show in a code block parses with the real command line, every relative
link resolves to a file of the repository, every path of the repository they name exists, the
map of the code names every package, and the API reference documents exactly the RPCs the
protos declare. The map's floors and modules, the rule book's pointers into the code and the
make targets of docs/internals/testing.md are checked in ``test_docs_map.py``.

Conventions the pages follow, so that these checks can read them:

- A command is checked when it sits in a fenced code block that is not output (any fence but
  ``text``, ``json``, ``toml`` and the like): a line whose command, or one of whose piped
  commands, is ``thirteen`` or a path ending in ``/thirteen`` (``.venv/bin/thirteen``). A
  leading ``$ ``, environment assignments (``THIRTEEN_STORE=postgres``), redirections and a
  trailing ``#`` comment are not part of it; a trailing backslash continues the line. Values
  may be placeholders (``ROUND_ID``, ``<id>``) where the command accepts any text, but flags
  and commands must exist, and optional parts are shown as commands of their own, not in
  ``[brackets]``.
- A path of the repository written in code (`` `service/eventstore/writer.py` ``,
  `` `domain/rules/` ``) names a file or folder that exists, so a moved module cannot leave a
  page behind; a path that exists no more is struck out (`` ~~`service/tools/cli.py`~~ ``).
  docs/internals/layout.md names every package of the code.
- Each RPC is documented in docs/reference/api.md under a heading ``### Service.Method``
  (for example ``### TableService.Deal``), and every ``Service.Method`` or
  ``Service/Method`` the page names is one the protos declare.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from service.entrypoints.cli import build_parser

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
API_REFERENCE = DOCS / "reference" / "api.md"
PROTOS = REPO / "protos" / "thirteen" / "v1"

# Fences whose lines are output or data, never commands to run.
NOT_COMMANDS = {"text", "json", "jsonl", "toml", "proto", "protobuf", "python", "py", "diff"}
SEPARATORS = {"|", "||", "&&", ";", "&"}
REDIRECTIONS = re.compile(r"^[<>&]+$")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
PLACEHOLDER = re.compile(r"<([A-Za-z][A-Za-z0-9_-]*)>")
FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([^`\s]*)")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
INLINE_CODE = re.compile(r"(`+)[\s\S]*?\1")  # may run over a line break
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
RPC_HEADING = re.compile(r"^#{2,4}\s+`?(\w+Service)\.(\w+)`?\s*$", re.M)
RPC_MENTION = re.compile(r"\b([A-Z]\w*Service)[./]([A-Z]\w*)\b")


def pages() -> list[Path]:
    """README.md and every page under docs/."""
    return [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]


def where(page: Path, repo: Path = REPO) -> str:
    """How a failure names a page: its path in the repository."""
    return str(page.relative_to(repo)) if page.is_relative_to(repo) else str(page)


# Commands -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shown:
    """A ``thirteen`` command a page shows: where, as written, and its arguments."""

    page: str
    line: int
    text: str
    args: list[str]


def code_lines(text: str) -> Iterator[tuple[int, str]]:
    """The lines of the fenced code blocks that may hold commands, with their line numbers,
    each logical line whole: a trailing backslash, or a quote left open, joins the next."""
    fence = ""
    checked = False
    pending: list[str] = []
    start = 0
    for number, line in enumerate(text.splitlines(), start=1):
        opened = FENCE.match(line)
        if fence and opened and opened.group(1).startswith(fence) and not opened.group(2):
            if pending:  # a quote left open at the end of the block: judge what there is
                yield start, "\n".join(pending)
            fence, pending = "", []
            continue
        if not fence:
            if opened:
                fence = opened.group(1)
                checked = opened.group(2).lower() not in NOT_COMMANDS
            continue
        if not checked:
            continue
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending.append(line.rstrip()[:-1])
            continue
        pending.append(line)
        logical = "\n".join(pending)
        if _quotes_balanced(logical):
            yield start, logical
            pending = []


def _quotes_balanced(text: str) -> bool:
    try:
        _tokens(text)
    except ValueError:
        return False
    return True


def _tokens(text: str) -> list[str]:
    lexer = shlex.shlex(PLACEHOLDER.sub(r"\1", text), posix=True, punctuation_chars="|&;<>")
    lexer.whitespace_split = True
    return list(lexer)


def commands_in(text: str, page: str) -> Iterator[Shown]:
    """Every ``thirteen`` command in the code blocks of a page's ``text``."""
    for number, logical in code_lines(text):
        shown = logical.strip()
        shown = shown[2:] if shown.startswith("$ ") else shown
        try:
            tokens = _tokens(shown)
        except ValueError as error:  # a quote never closed
            if "thirteen" in shown:
                yield Shown(page, number, shown, [f"<unparsable shell line: {error}>"])
            continue
        for segment in _segments(tokens):
            words = _command(segment)
            if words and (words[0] == "thirteen" or words[0].endswith("/thirteen")):
                lines = shown.splitlines()
                text = lines[0].rstrip() + (" …" if len(lines) > 1 else "")
                yield Shown(page, number, text, words[1:])


def _segments(tokens: list[str]) -> Iterator[list[str]]:
    """The commands of a line: split at pipes, ``&&``, ``;`` and the like."""
    segment: list[str] = []
    for token in tokens:
        if token in SEPARATORS:
            yield segment
            segment = []
        else:
            segment.append(token)
    yield segment


def _command(segment: list[str]) -> list[str]:
    """A command's words: without leading environment assignments, up to a redirection."""
    words = list(segment)
    while words and ASSIGNMENT.match(words[0]):
        words.pop(0)
    for index, word in enumerate(words):
        if REDIRECTIONS.match(word):
            return words[:index]
    return words


def refusal(args: list[str]) -> str | None:
    """Why ``thirteen`` refuses these arguments on its command line, or None when they parse."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            build_parser().parse_args(args)
        except SystemExit as exit_:
            said = err.getvalue().strip()
            if "cannot read config file" in said:  # the parser reads --config; docs' are examples
                return None
            if exit_.code not in (0, None):  # --help exits 0
                return said or f"exit status {exit_.code}"
    return None


def command_failures(text: str, page: str) -> list[str]:
    failures = []
    for shown in commands_in(text, page):
        why = refusal(shown.args)
        if why is not None:
            failures.append(f"{shown.page}:{shown.line}: `{shown.text}`: {why}")
    return failures


# Links ----------------------------------------------------------------------------------------


def prose(text: str) -> Iterator[tuple[int, str]]:
    """The lines outside fenced code blocks, with their line numbers; a code block reads as a
    blank line."""
    fence = ""
    for number, line in enumerate(text.splitlines(), start=1):
        opened = FENCE.match(line)
        if fence:
            if opened and opened.group(1).startswith(fence) and not opened.group(2):
                fence = ""
            continue
        if opened:
            fence = opened.group(1)
            yield number, ""
            continue
        yield number, line


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as
    hyphens; a repeated heading gets -1, -2 …"""
    seen: dict[str, int] = {}
    found = set()
    for _, line in prose(text):
        heading = HEADING.match(line)
        if heading is None:
            continue
        words = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.group(2))
        slug = re.sub(r"[^\w\- ]", "", words.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def paragraphs(text: str) -> Iterator[tuple[int, str]]:
    """The paragraphs outside fenced code blocks, with the line each starts on, and inline code
    blanked out (a link in code is not a link); a link may run over a line break."""
    paragraph: list[str] = []
    start = 0
    for number, line in prose(text):
        if line.strip():
            if not paragraph:
                start = number
            paragraph.append(line)
            continue
        if paragraph:
            yield start, _without_code("\n".join(paragraph))
        paragraph = []
    if paragraph:
        yield start, _without_code("\n".join(paragraph))


def _without_code(text: str) -> str:
    return INLINE_CODE.sub(lambda code: re.sub(r"[^\n]", " ", code.group()), text)


def link_failures(page: Path, repo: Path = REPO) -> list[str]:
    """Relative links of ``page`` that name no file inside ``repo`` (or no heading of it)."""
    failures = []
    for start, paragraph in paragraphs(page.read_text(encoding="utf-8")):
        for link in LINK.finditer(paragraph):
            target = link.group(1)
            if re.match(r"^(https?:|mailto:|#)", target):
                continue
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve()
            number = start + paragraph.count("\n", 0, link.start())
            here = f"{where(page, repo)}:{number}: ({target})"
            if not resolved.is_relative_to(repo.resolve()):
                failures.append(f"{here}: points outside the repository")
            elif not resolved.exists():
                named = resolved.relative_to(repo.resolve()).as_posix()
                failures.append(f"{here}: {named} does not exist")
            elif (
                anchor
                and resolved.suffix == ".md"
                and anchor not in anchors(resolved.read_text(encoding="utf-8"))
            ):
                failures.append(f"{here}: no heading #{anchor} in {resolved.name}")
    return failures


# Paths ----------------------------------------------------------------------------------------

PACKAGES = ("domain", "projections", "service")
PATH_IN_CODE = re.compile(
    r"(?<!~~)`((?:domain|projections|service|tests|protos|docs)/[\w./-]*)`(?!~~)"
)
LAYOUT = DOCS / "internals" / "layout.md"


def path_failures(page: Path, repo: Path = REPO) -> list[str]:
    """Paths of the repository a page writes in code that name nothing there."""
    failures = []
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        for path in PATH_IN_CODE.findall(line):
            if not (repo / path).exists():
                failures.append(f"{where(page, repo)}:{number}: `{path}` does not exist")
    return failures


def packages(repo: Path = REPO) -> list[str]:
    """Every package of the code, as a path (``service/eventstore``), generated stubs aside."""
    found = []
    for root in PACKAGES:
        for init in sorted((repo / root).rglob("__init__.py")):
            package = init.parent.relative_to(repo).as_posix()
            if "_generated" not in package:
                found.append(package)
    return found


# RPCs -----------------------------------------------------------------------------------------


def declared_rpcs() -> set[str]:
    """``Service.Method`` of every RPC of every service in protos/thirteen/v1/*.proto."""
    rpcs = set()
    for proto in sorted(PROTOS.glob("*.proto")):
        text = proto.read_text(encoding="utf-8")
        for service, body in re.findall(r"^service (\w+) \{(.*?)^\}", text, flags=re.M | re.S):
            rpcs |= {f"{service}.{rpc}" for rpc in re.findall(r"\brpc (\w+)", body)}
    return rpcs


def documented_rpcs(text: str) -> set[str]:
    """The RPCs a reference documents: one heading ``### Service.Method`` each."""
    return {f"{service}.{rpc}" for service, rpc in RPC_HEADING.findall(text)}


def rpc_failures(text: str, declared: set[str]) -> list[str]:
    documented = documented_rpcs(text)
    named = {f"{service}.{rpc}" for service, rpc in RPC_MENTION.findall(text)}
    failures = [f"not documented: {rpc}" for rpc in sorted(declared - documented)]
    failures += [
        f"documented but not in the protos: {rpc}" for rpc in sorted(documented - declared)
    ]
    failures += [f"named but not in the protos: {rpc}" for rpc in sorted(named - declared)]
    return failures


# The checks -----------------------------------------------------------------------------------


def test_every_thirteen_command_the_docs_show_parses() -> None:
    failures = []
    for page in pages():
        failures += command_failures(page.read_text(encoding="utf-8"), where(page))
    assert not failures, "commands the command line refuses:\n" + "\n".join(failures)


def test_the_docs_show_commands_of_every_group() -> None:
    shown = {
        shown.args[0]
        for page in pages()
        for shown in commands_in(page.read_text(encoding="utf-8"), where(page))
        if shown.args
    }
    assert {"serve", "demo", "audit", "console", "rng", "keys", "witness"} <= shown


def test_a_made_up_flag_is_caught_with_its_page_and_line() -> None:
    page = "```sh\nmake run\n$ .venv/bin/thirteen serve --no-such-flag   # made up\n```\n"
    (failure,) = command_failures(page, "docs/made-up.md")
    assert failure.startswith("docs/made-up.md:3: `.venv/bin/thirteen serve --no-such-flag")
    assert "--no-such-flag" in failure.split("`: ", 1)[1]


def test_a_made_up_command_and_a_bad_value_are_caught() -> None:
    page = "```\nthirteen shuffle --players 4\nthirteen demo --rounds lots\n```\n"
    assert [f.split(":")[1] for f in command_failures(page, "README.md")] == ["2", "3"]


def test_commands_are_read_through_prompts_pipes_comments_and_continuations() -> None:
    page = (
        "```sh\n"
        "$ THIRTEEN_STORE=postgres thirteen audit --all --data var | tail -n 1  # all\n"
        'echo \'{"cards": [\n  "As"]}\' | .venv/bin/thirteen suggest > out.jsonl\n'
        ".venv/bin/thirteen replay \\\n  --round <id> --json\n"
        "```\n"
        "```text\n"
        "thirteen console: serving http://127.0.0.1:8080/\n"
        "```\n"
    )
    shown = [(s.line, s.args) for s in commands_in(page, "x.md")]
    assert shown == [
        (2, ["audit", "--all", "--data", "var"]),
        (3, ["suggest"]),
        (5, ["replay", "--round", "id", "--json"]),
    ]
    assert command_failures(page, "x.md") == []


def test_every_relative_link_in_the_docs_resolves() -> None:
    failures = [failure for page in pages() for failure in link_failures(page)]
    assert not failures, "broken links:\n" + "\n".join(failures)


def test_a_broken_link_is_caught(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "there.md").write_text("# There\n\n## A heading\n", encoding="utf-8")
    page = tmp_path / "docs" / "page.md"
    page.write_text(
        "[fine](there.md) [fine too](there.md#a-heading) [web](https://example.com) [here](#x)\n"
        "`[in code](nowhere.md)`\n"
        "[gone](missing.md) [bad anchor](there.md#nope) [outside](../../shared/RULES.md)\n"
        "\n```sh\n[not a link](nowhere.md)\n```\n"
        "a link [over a\nline break](also-missing.md)\n",
        encoding="utf-8",
    )
    failures = link_failures(page, repo=tmp_path)
    assert [f.split(": ", 1)[0] for f in failures] == [
        "docs/page.md:3",
        "docs/page.md:3",
        "docs/page.md:3",
        "docs/page.md:8",
    ]
    assert "missing.md does not exist" in failures[0]
    assert "no heading #nope" in failures[1]
    assert "outside the repository" in failures[2]


def test_the_api_reference_documents_every_rpc_of_the_protos_and_no_other() -> None:
    declared = declared_rpcs()
    assert len(declared) >= 20 and "TableService.Deal" in declared
    failures = rpc_failures(API_REFERENCE.read_text(encoding="utf-8"), declared)
    assert not failures, "docs/reference/api.md against the protos:\n" + "\n".join(failures)


def test_an_rpc_left_out_or_made_up_is_caught() -> None:
    declared = {"WalletService.Credit", "WalletService.Debit"}
    text = (
        "## WalletService\n### WalletService.Credit\nCall `WalletService/Refund` to undo.\n"
        "### `WalletService.Transfer`\n"
    )
    assert rpc_failures(text, declared) == [
        "not documented: WalletService.Debit",
        "documented but not in the protos: WalletService.Transfer",
        "named but not in the protos: WalletService.Refund",
        "named but not in the protos: WalletService.Transfer",
    ]


def test_every_path_the_docs_write_in_code_exists() -> None:
    failures = [failure for page in pages() for failure in path_failures(page)]
    assert not failures, "paths that name nothing:\n" + "\n".join(failures)


def test_a_moved_module_is_caught(tmp_path: Path) -> None:
    (tmp_path / "service" / "eventstore").mkdir(parents=True)
    (tmp_path / "service" / "eventstore" / "writer.py").write_text("", encoding="utf-8")
    page = tmp_path / "README.md"
    page.write_text(
        "The writer is `service/eventstore/writer.py`; the CLI `service/tools/cli.py`.\n"
        "It was ~~`service/writer.py`~~.\n",
        encoding="utf-8",
    )
    assert path_failures(page, repo=tmp_path) == [
        "README.md:1: `service/tools/cli.py` does not exist"
    ]


def test_the_layout_names_every_package_of_the_code() -> None:
    layout = LAYOUT.read_text(encoding="utf-8")
    missing = [p for p in packages() if f"`{p}/" not in layout and f"`{p}`" not in layout]
    assert not missing, "packages docs/internals/layout.md does not name: " + ", ".join(missing)
