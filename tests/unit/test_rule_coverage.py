"""Every rule ID of RULES.md is named by at least one test (in its name or docstring)."""

import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent.parent
RULES = TESTS.parent.parent / "shared" / "RULES.md"


def rule_ids(text: str) -> set[str]:
    return set(re.findall(r"^- (R\d+\.\d+)\b", text, flags=re.M)) | set(
        re.findall(r"^## (R\d+)\b", text, flags=re.M)
    )


def test_every_rule_id_is_named_by_a_test():
    if not RULES.exists():
        pytest.skip(f"{RULES} is not beside the project")
    ids = rule_ids(RULES.read_text())
    assert len(ids) > 60
    corpus = "\n".join(p.read_text() for p in TESTS.rglob("test_*.py"))
    named = {
        m.replace("_", ".").upper()
        for m in re.findall(r"(?<![A-Za-z0-9])[rR](\d+(?:[._]\d+)?)", corpus)
    }
    named = {f"R{n}" for n in named}
    missing = sorted(ids - named, key=lambda r: [int(x) for x in r[1:].split(".")])
    assert not missing, f"rules no test names: {', '.join(missing)}"
