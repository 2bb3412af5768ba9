"""Every rule ID of the project's rule book, docs/rules.md, is named by at least one test (in its
name or docstring), and the book has the same rule IDs as the shared RULES.md and VARIANTS.md
(chapter R14) when they are beside the project. Rule IDs have two levels (R6.2) or, in R14, three
(R14.1.3); a chapter's sections are headings (### R14.1)."""

import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent.parent
REPO = Path(__file__).resolve().parents[2]
BOOK = REPO / "docs" / "rules.md"
SHARED_RULES = REPO.parent / "shared" / "RULES.md"  # /work/shared beside /work/main
SHARED_VARIANTS = REPO.parent / "shared" / "VARIANTS.md"  # chapter R14, kept apart there


def rule_ids(text: str) -> set[str]:
    return (
        set(re.findall(r"^- (R\d+(?:\.\d+)+)\b", text, flags=re.M))
        | set(re.findall(r"^##+ (R\d+(?:\.\d+)*)\b", text, flags=re.M))
        | set(re.findall(r"^\*\*(R\d+(?:\.\d+)+)\b", text, flags=re.M))
    )


def _in_order(ids: set[str]) -> list[str]:
    return sorted(ids, key=lambda r: [int(x) for x in r[1:].split(".")])


def test_every_rule_id_is_named_by_a_test() -> None:
    ids = rule_ids(BOOK.read_text(encoding="utf-8"))
    assert len(ids) > 60
    corpus = "\n".join(p.read_text(encoding="utf-8") for p in TESTS.rglob("test_*.py"))
    numbers = {
        m.replace("_", ".").upper()
        for m in re.findall(r"(?<![A-Za-z0-9])[rR](\d+(?:[._]\d+)*)", corpus)
    }
    # R14.1.3 also names R14.1, as a two-level match always did (r6_2_roll names R6.2)
    named = {f"R{n}" for n in numbers} | {f"R{'.'.join(n.split('.')[:2])}" for n in numbers}
    missing = _in_order(ids - named)
    assert not missing, f"rules no test names: {', '.join(missing)}"


def test_rule_book_has_the_rule_ids_of_the_shared_rules() -> None:
    if not SHARED_RULES.exists():
        pytest.skip(f"{SHARED_RULES} is not beside the project: nothing to compare with")
    book = rule_ids(BOOK.read_text(encoding="utf-8"))
    shared = rule_ids(SHARED_RULES.read_text(encoding="utf-8"))
    if SHARED_VARIANTS.exists():
        shared |= rule_ids(SHARED_VARIANTS.read_text(encoding="utf-8"))
    assert book == shared, (
        f"only in docs/rules.md: {', '.join(_in_order(book - shared)) or 'none'}; "
        f"only in {SHARED_RULES}: {', '.join(_in_order(shared - book)) or 'none'}"
    )


def test_every_r14_rule_id_is_cited_in_the_code_that_implements_it() -> None:
    """R14 (chapter): each of its rules is cited by the code that implements it (``domain/``,
    and the offline tools that read rulesets), as the rule book asks of every rule."""
    ids = {i for i in rule_ids(BOOK.read_text(encoding="utf-8")) if i.startswith("R14.")}
    code = "\n".join(
        p.read_text(encoding="utf-8")
        for folder in ("domain", "service")
        for p in (REPO / folder).rglob("*.py")
    )
    cited = set(re.findall(r"R14(?:\.\d+)+", code))
    cited |= {".".join(c.split(".")[:2]) for c in cited}
    missing = _in_order(ids - cited)
    assert not missing, f"R14 rules no code cites: {', '.join(missing)}"
