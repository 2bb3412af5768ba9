"""R5.4's ``any`` under R14.5.3's points order (issue 25 attack): the audit of a declaration
stands both for what ``any`` plays now (the special worth most) and for what R14's first
release recorded (R5.2's first), since stored events are forever; any other special recorded
for ``any`` fails R5."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from domain.audit.events import verify_submission
from domain.audit.report import Report
from domain.dealing import deal_record
from domain.round import Round
from domain.rules import play
from domain.rules.ruleset import ALL_PRESETS

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
# all_small (6 under puxian) first in R5.2's order; four_trips (52) worth most (R14.6)
SMALL_TRIPS = "2c 2d 2h 3c 3d 3h 4c 4d 4h 5c 5d 5h 6c".split()


def _declared_any(monkeypatch: pytest.MonkeyPatch, release: str) -> tuple[Round, object]:
    round_ = Round(
        **deal_record(
            round_id="r1",
            table_id="t1",
            number=1,
            balances={"A": 1000, "B": 1000},
            server_seed=bytes(32),
            client_seed="c",
            ruleset=ALL_PRESETS["puxian"],
            at=T0,
        )
    )
    round_.hands["A"] = SMALL_TRIPS  # a deal that gave A this hand
    if release == "first":  # R14's first release: R5.2's first for any, whatever the order
        monkeypatch.setattr(play, "strongest", lambda found, ruleset: found[0])
    round_.declare("A", "any", None, T0)
    monkeypatch.undo()
    event = round_.collect_events()[-1]
    assert isinstance(event, Round.SpecialDeclared)
    return round_, event


@pytest.mark.parametrize(("release", "special"), [("now", "four_trips"), ("first", "all_small")])
def test_r5_4_an_any_declaration_under_points_order_audits_as_recorded(
    monkeypatch: pytest.MonkeyPatch, release: str, special: str
) -> None:
    round_, event = _declared_any(monkeypatch, release)
    assert event.special == special  # type: ignore[attr-defined]
    report = Report()
    verify_submission(round_, event, "the declaration", report)
    assert all(f.ok for f in report.findings), report.findings
    assert "R5" in {f.rule for f in report.findings}


def test_r5_4_an_any_declaration_recorded_as_a_third_special_fails_r5(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Neither the special worth most nor R5.2's first: an edited record is named."""
    round_, event = _declared_any(monkeypatch, "now")
    object.__setattr__(event, "special", "six_pairs")
    report = Report()
    verify_submission(round_, event, "the declaration", report)
    assert [f.rule for f in report.findings if not f.ok] == ["R5"]
