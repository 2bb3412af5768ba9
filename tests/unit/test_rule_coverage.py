"""Every rule ID of the project's rule book, docs/rules.md, is named by at least one test (in its
name or docstring), and the book has the same rule IDs as the shared RULES.md when that is
beside the project."""

import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent.parent
REPO = Path(__file__).resolve().parents[2]
BOOK = REPO / "docs" / "rules.md"
SHARED_RULES = REPO.parent / "shared" / "RULES.md"  # /work/shared beside /work/main


def rule_ids(text: str) -> set[str]:
    return set(re.findall(r"^- (R\d+\.\d+)\b", text, flags=re.M)) | set(
        re.findall(r"^## (R\d+)\b", text, flags=re.M)
    )


def _in_order(ids: set[str]) -> list[str]:
    return sorted(ids, key=lambda r: [int(x) for x in r[1:].split(".")])


def test_every_rule_id_is_named_by_a_test() -> None:
    ids = rule_ids(BOOK.read_text(encoding="utf-8"))
    assert len(ids) > 60
    corpus = "\n".join(p.read_text(encoding="utf-8") for p in TESTS.rglob("test_*.py"))
    numbers = {
        m.replace("_", ".").upper()
        for m in re.findall(r"(?<![A-Za-z0-9])[rR](\d+(?:[._]\d+)?)", corpus)
    }
    named = {f"R{n}" for n in numbers}
    missing = _in_order(ids - named)
    assert not missing, f"rules no test names: {', '.join(missing)}"


def test_rule_book_has_the_rule_ids_of_the_shared_rules() -> None:
    if not SHARED_RULES.exists():
        pytest.skip(f"{SHARED_RULES} is not beside the project: nothing to compare with")
    book = rule_ids(BOOK.read_text(encoding="utf-8"))
    shared = rule_ids(SHARED_RULES.read_text(encoding="utf-8"))
    assert book == shared, (
        f"only in docs/rules.md: {', '.join(_in_order(book - shared)) or 'none'}; "
        f"only in {SHARED_RULES}: {', '.join(_in_order(shared - book)) or 'none'}"
    )
