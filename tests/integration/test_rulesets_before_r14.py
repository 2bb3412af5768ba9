"""Stored events are forever (STYLE 14): the rulesets the first version recorded
(``tests/fixtures/v1_store``, read only here), with R13's parameters and none of R14's, read with
every R14 parameter at its default, record again exactly as they were recorded, and the rounds
played under them score as they recorded (R14: the defaults keep R1–R13)."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from domain.rules.parameters import R14_DEFAULTS
from domain.rules.ruleset import FUJIAN, STANDARD, Ruleset

FIXTURE = Path(__file__).parent.parent / "fixtures" / "v1_store" / "thirteen.sqlite"


def _recorded_rulesets() -> list[tuple[str, dict[str, Any]]]:
    """(topic, ruleset) of every table opening and deal of the fixture."""
    with closing(sqlite3.connect(f"file:{FIXTURE}?mode=ro&immutable=1", uri=True)) as db:
        rows = db.execute(
            "SELECT topic, state FROM stored_events WHERE topic IN "
            "('domain.table:Table.Opened', 'domain.round:Round.Dealt') ORDER BY rowid"
        ).fetchall()
    found = []
    for topic, state in rows:
        data = json.loads(state)
        found.append((topic, data["ruleset"]))
    return found


def test_r14_rulesets_recorded_before_r14_read_with_r14_s_defaults_and_record_the_same() -> None:
    """R14 (chapter): a ruleset recorded before R14 reads with R14's defaults; recorded again it
    is the very dict it was, so old tables, their deals and their audits compare equal."""
    recorded = _recorded_rulesets()
    topics = {topic for topic, _ in recorded}
    assert topics == {"domain.table:Table.Opened", "domain.round:Round.Dealt"}
    names = set()
    for _, data in recorded:
        assert not set(data) & set(R14_DEFAULTS)  # written before R14
        ruleset = Ruleset.from_dict(data)
        assert all(getattr(ruleset, key) == value for key, value in R14_DEFAULTS.items())
        assert ruleset.variants() == {}
        assert ruleset.to_dict() == data
        assert json.dumps(ruleset.to_dict(), sort_keys=True) == json.dumps(data, sort_keys=True)
        names.add(ruleset.name)
        if ruleset.name in ("standard", "fujian"):
            assert ruleset == {"standard": STANDARD, "fujian": FUJIAN}[ruleset.name]
    assert names >= {"standard", "fujian"}
