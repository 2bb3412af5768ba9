"""R14's defaults keep R1–R13: 800 random rounds under ``standard``, ``fujian`` and random R13
overrides score exactly as the code before R14 scored them (``tests/fixtures/r13_scores.py``
says how that was recorded), totals, verdicts, piles, explanations and suggestions alike."""

from __future__ import annotations

import json

from tests.fixtures.r13_scores import SCORES, generate, result, result_digest


def test_r14_standard_and_fujian_score_random_rounds_as_before_r14() -> None:
    entries = json.loads(SCORES.read_text(encoding="utf-8"))
    assert [e["round"] for e in entries] == generate()  # the same rounds, from the same seed
    changed = [e["round"] for e in entries if result_digest(e["round"]) != e["sha256"]]
    assert not changed, (
        f"{len(changed)} of {len(entries)} rounds score differently from the code before R14; "
        f"the first: {json.dumps(changed[0])} now gives {json.dumps(result(changed[0]))}"
    )
