"""The table listing (``projections.listing`` through ``ViewFold``) over random rounds of the pure
Round aggregate: after every event the round's row is what an observer may see of it then,
nothing hidden stored (R10.4, R12.1), and once the round is over every hand, the seed and the
result the reveal recorded (R12.6)."""

from __future__ import annotations

import orjson
from hypothesis import given
from hypothesis import strategies as st

from domain import visibility
from domain.results import round_result
from domain.round import Round
from projections.folds import ViewFold
from projections.listing import ListedRound
from tests.unit.test_player_rounds_fold import ACTIONS, play


@given(
    st.integers(2, 4).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(48, 10**6), min_size=n, max_size=n),
            st.lists(st.sampled_from(ACTIONS), min_size=n, max_size=n),
            st.text(max_size=8),
        )
    )
)
def test_r10_4_each_event_leaves_the_round_listed_as_an_observer_sees_it(
    drawn: tuple[list[int], list[str], str],
) -> None:
    balances, actions, client_seed = drawn
    players = ["ann", "bob", "cat", "dan"][: len(balances)]
    _, events, _ = play(players, balances, client_seed, actions)
    fold = ViewFold()
    state: Round | None = None
    for event in events:
        state = event.mutate(state)
        assert isinstance(state, Round)
        (row,) = [r for r in fold.apply(event) if isinstance(r, ListedRound)]
        stored = orjson.loads(orjson.dumps(row.to_dict()))  # as a page reads it back
        over = visibility.is_public(state)
        assert [h["player_id"] for h in stored["hands"]] == (players if over else [])
        assert [p["submitted"] for p in stored["players"]] == [
            p in state.submissions for p in players
        ]
        assert [p["escaped"] for p in stored["players"]] == [p in state.escaped for p in players]
        assert stored["phase"] == state.phase
        assert bool(stored["server_seed"]) == over
        if state.revealed:
            assert stored["result"] == round_result(state).to_dict()
        else:
            assert stored["result"] is None
        if not over:  # no card of anyone's hand or submission anywhere in the row
            text = orjson.dumps({**stored, "client_seed": ""}).decode()  # the caller's text
            assert not any(f'"{card}"' in text for p in players for card in state.hands[p])
