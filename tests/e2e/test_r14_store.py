"""Stored events are forever (STYLE 14) for R14: the store the first release serving the regional
variants wrote (``tests/fixtures/r14_store``: the puxian presets with four, five and six seats,
copies of a card, the horse, a five of a kind, a special, a foul, an escape, an open round) reads
and answers exactly as that release answered (``tests/fixtures/r14_outputs.json``), and audits
clean."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.fixtures.r14_outputs import OUTPUTS, STORE, capture

SCRIPT = Path(sys.executable).parent / "thirteen"


def test_r14_the_r14_store_answers_exactly_as_the_release_that_wrote_it() -> None:
    """R13, R14: GetTable (every R14 parameter), ListRounds, GetRound for every viewer (the
    undealt cards, R14.2.4), GetRoundResult, a repeated Reveal, ListRoundResults,
    ListPlayerRounds, WatchTable and the rebuilt results view, field for field."""
    before = json.loads(OUTPUTS.read_text(encoding="utf-8"))
    now = json.loads(json.dumps(capture(), ensure_ascii=False))
    assert now.keys() == before.keys()
    for section in ("views", "tables", "rounds", "players"):
        assert now[section].keys() == before[section].keys(), section
        for key, value in before[section].items():
            assert now[section][key] == value, f"{section}: {key}"


def test_r14_the_r14_store_audits_clean(tmp_path: Path) -> None:
    """R14.1.6, R14.2.3 and every other rule: ``thirteen audit --all`` passes each round."""
    data = tmp_path / "data"
    shutil.copytree(STORE, data)
    done = subprocess.run(
        [str(SCRIPT), "audit", "--data", str(data), "--all", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "THIRTEEN_STORE": "sqlite"},
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["ok"] is True and len(report["rounds"]) == 8
    rules = {f["rule"] for r in report["rounds"] for f in r["findings"]}
    assert {"R14.1.6", "R14.2.3", "R12", "R6", "R9", "R11"} <= rules
