"""The game-recall fold (``projections.folds.recall_lines`` through ``ViewFold``) over random
rounds of the pure Round aggregate: nothing before the round is over (R10.4), then one line per
player dealt in, whose coins are what the round's journals moved for that player (R9, R11)."""

from __future__ import annotations

import contextlib
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import event as label
from hypothesis import given
from hypothesis import strategies as st

from domain.dealing import deal_record
from domain.errors import SpecialError
from domain.round import Round
from domain.rules.ruleset import STANDARD
from domain.rules.specials import qualifying
from domain.rules.suggest import suggest
from projections.folds import Journal, RecallLine, RoundRecord, ViewFold

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
SEED = bytes(range(32))
ACTIONS = ("good", "foul", "special", "none", "escape")


def _dealt(players: list[str], balances: list[int], client_seed: str) -> Round:
    return Round(
        **deal_record(
            round_id="r1",
            table_id="t1",
            number=3,
            balances=dict(zip(players, balances, strict=True)),
            server_seed=SEED,
            client_seed=client_seed,
            ruleset=STANDARD,
            at=T0,
        )
    )


def _act(round_: Round, player: str, action: str, at: datetime) -> Any:
    """The player's move: (the piles, is it a foul) for an arrangement, the special's id for a
    declaration, else None."""
    if action == "special":
        with contextlib.suppress(SpecialError):  # the cards hold none: arrange instead
            return round_.declare(player, "any", None, at).id
        action = "good"
    if action in ("good", "foul"):
        a = suggest(round_.hand(player), STANDARD).arrangement
        piles = (list(a.front), list(a.middle), list(a.back))
        if action == "foul":
            piles = (list(a.front), list(a.back), list(a.middle))  # middle above back: R4.2
        reason = round_.arrange(player, *piles, at)
        return tuple(sorted(str(c) for c in pile) for pile in piles), reason is not None
    if action == "escape":
        round_.escape(player, at)
    return None


def play(players: list[str], balances: list[int], client_seed: str, actions: list[str]) -> Any:
    """Deal, let each player act in seat order, then end the round as the service would:
    abandoned as soon as fewer than two remain (R11.3), else revealed after the deadline."""
    round_ = _dealt(players, balances, client_seed)
    arranged = {}
    at = T0 + timedelta(seconds=1)
    for player, action in zip(players, actions, strict=True):
        if round_.ended:
            break
        submitted = _act(round_, player, action, at)
        if submitted is not None:
            arranged[player] = submitted
        if len(round_.active) < 2:
            round_.abandon(SEED, at)
    if not round_.ended:
        round_.reveal(SEED, round_.deadline + timedelta(seconds=1))
    return round_, round_.collect_events(), arranged


@given(
    st.integers(2, 4).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(48, 10**6), min_size=n, max_size=n),
            st.lists(st.sampled_from(ACTIONS), min_size=n, max_size=n),
            st.text(max_size=8),
        )
    )
)
def test_recall_lines_come_with_the_end_of_the_round_one_per_player_dealt_in(
    drawn: tuple[list[int], list[str], str],
) -> None:
    balances, actions, client_seed = drawn
    players = ["ann", "bob", "cat", "dan"][: len(balances)]
    round_, events, arranged = play(players, balances, client_seed, actions)
    fold = ViewFold()
    moved: dict[str, int] = defaultdict(int)
    lines: list[RecallLine] = []
    ends: list[RoundRecord] = []
    for k, event in enumerate(events):
        records = fold.apply(event)
        found = [r for r in records if isinstance(r, RecallLine)]
        if k < len(events) - 1:
            assert found == [], f"a recall line before the round ended ({type(event).__name__})"
        lines += found
        ends += [r for r in records if isinstance(r, RoundRecord)]
        for record in records:
            if isinstance(record, Journal):
                assert record.round_id == "r1"
                for leg in record.legs:
                    moved[leg.account] += leg.amount
    (ended,) = ends
    label(ended.outcome)
    label(f"escapes: {len(round_.escaped)}")
    label(f"specials: {sum(1 for line in lines if line.special)}")

    assert [(line.player_id, line.seat) for line in lines] == [
        (p, i) for i, p in enumerate(players)
    ]
    assert {line.outcome for line in lines} == {ended.outcome}
    assert sum(line.coins for line in lines) == 0
    for line in lines:
        assert line.coins == moved.get(line.player_id, 0), line.player_id  # R9, R11.1, R11.2
        assert list(line.cards) == round_.hands[line.player_id]  # R12: the cards dealt
        assert (line.round_id, line.table_id, line.number) == ("r1", "t1", 3)
        assert line.ended_at == round_.ended_at and line.dealt_at == T0
        assert line.escaped == (line.player_id in round_.escaped)
        if line.escaped or ended.outcome == "abandoned":  # no showdown for them (R11.3)
            assert (line.points, line.foul, line.foul_reason) == (0, False, "")
        else:
            assert line.points == round_.points[line.player_id]
            # R4.3: a foul arrangement, or none at all, is foul at the showdown
            submitted = arranged.get(line.player_id)
            if isinstance(submitted, str):  # R5.4: declared
                assert (line.special, line.foul) == (submitted, False)
            else:
                foul = submitted is None or submitted[1]
                assert (line.special, line.foul, bool(line.foul_reason)) == ("", foul, foul)
        if isinstance(arranged.get(line.player_id), tuple):
            shown = tuple(sorted(pile) for pile in (line.front, line.middle, line.back))
            assert shown == arranged[line.player_id][0]
    if ended.outcome == "revealed":
        assert sum(line.points for line in lines) == 0


def test_a_declared_special_is_recalled_with_its_id_and_no_foul() -> None:
    """R5.4: ``any`` resolves to the strongest special the cards hold; the recall shows it."""
    for k in range(5000):
        round_ = _dealt(["ann", "bob"], [1000, 1000], f"seed-{k}")
        held = qualifying(round_.hand("ann"))
        if held:
            break
    else:
        raise AssertionError("no deal among 5,000 gives ann a special hand")
    special = round_.declare("ann", "any", None, T0)
    _act(round_, "bob", "good", T0)
    round_.reveal(SEED, T0 + timedelta(seconds=1))
    fold = ViewFold()
    lines = [r for e in round_.collect_events() for r in fold.apply(e) if isinstance(r, RecallLine)]
    ann = lines[0]
    assert (ann.special, ann.foul, ann.escaped) == (special.id, False, False)
    assert special.id == held[0].special.id
    assert ann.points == round_.points["ann"] > 0
