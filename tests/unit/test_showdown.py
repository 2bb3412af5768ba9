"""``domain.showdown``: the reveal and leaving the table across the round, the table and the
wallets (R9, R10.3, R10.5, R11, R11.3, R12.1). Given aggregates with their events collected,
when one domain call, then the events each aggregate records, or a refusal that records
nothing anywhere."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from domain import showdown
from domain.dealing import deal_record
from domain.errors import PhaseError
from domain.fairness.seeds import KeyRing, SeedKeyMissing, derive_seed
from domain.fairness.shuffle import commitment
from domain.recorded import record
from domain.round import Round
from domain.rules.ruleset import STANDARD
from domain.rules.suggest import suggest
from domain.table import Table
from domain.wallet import Wallet

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
KEY = bytes(range(32))
KEYS = KeyRing.of([KEY])
FIRST, NEXT = bytes([1]) * 16, bytes([2]) * 16  # the nonces of the table's two commitments
SEED = derive_seed(KEY, "t1", 1, FIRST)  # what the table commits its first round to (R12.1)
OTHER_KEYS = KeyRing.of([bytes(32)])  # a key file without the table's key


@dataclass
class Given:
    table: Table
    wallets: dict[str, Wallet]
    round: Round | None = None

    def then(self) -> dict[str, list[str]]:
        """The events recorded since, by aggregate (round, table, then each wallet)."""
        named: dict[str, Any] = {"round": self.round, "table": self.table, **self.wallets}
        return {
            name: [type(e).__name__ for e in aggregate.collect_events()]
            for name, aggregate in named.items()
            if aggregate is not None
        }


def nothing(found: dict[str, list[str]]) -> bool:
    return all(not events for events in found.values())


def given(balances: dict[str, int], *, dealt: bool = True) -> Given:
    """A table with these players seated and, when ``dealt``, a round dealt to all of them."""
    table = Table.open("t1", STANDARD, "", KEYS, FIRST, "dealer", T0)
    wallets = {}
    for player, balance in balances.items():
        wallet = Wallet(player_id=player)
        wallet.credit(f"in-{player}", balance)
        wallet.sit_down("t1")
        table.sit_down(player, T0)
        wallets[player] = wallet
    state = Given(table, wallets)
    if dealt:
        table.start_round("r1", T0)
        state.round = Round(
            **deal_record(
                round_id="r1",
                table_id="t1",
                number=1,
                balances=dict(balances),
                server_seed=table.committed_seed(KEYS),
                client_seed="c",
                ruleset=STANDARD,
                at=T0,
            )
        )
        for wallet in wallets.values():
            wallet.enter_round("r1")
    state.then()  # what happened before is given
    return state


def arrange_well(round_: Round, *players: str) -> None:
    for player in players:
        best = suggest(round_.hand(player), STANDARD).arrangement
        round_.arrange(player, list(best.front), list(best.middle), list(best.back), T0)
        round_.collect_events()


# Reveal ---------------------------------------------------------------------------------------


def test_r10_3_r9_r12_1_a_reveal_settles_every_wallet_and_publishes_the_next_commitment() -> None:
    state = given(dict.fromkeys("ABCD", 1000))
    assert state.round is not None
    arrange_well(state.round, *"ABCD")
    outcome = showdown.reveal(state.round, state.table, state.wallets, KEYS, NEXT, T0)
    revealed = [e for e in state.round.pending_events if isinstance(e, Round.Revealed)]
    assert state.then() == {
        "round": ["Revealed"],
        "table": ["RoundEnded"],
        **{p: ["RoundSettled"] for p in "ABCD"},
    }
    assert revealed[0].result == record(outcome.score)  # recorded once, with the reveal
    assert {p: w.balance - 1000 for p, w in state.wallets.items()} == outcome.coins
    assert all(w.round_id is None for w in state.wallets.values())  # R10.6: unlocked
    assert state.table.next_commitment == commitment(derive_seed(KEY, "t1", 2, NEXT))  # R12.1
    assert state.table.next_seed_nonce == NEXT.hex() and state.table.clear_seed == ""
    assert state.round.server_seed == SEED.hex()  # R12.6


def test_r10_3_a_reveal_before_everyone_is_ready_records_nothing_anywhere() -> None:
    state = given(dict.fromkeys("AB", 1000))
    assert state.round is not None
    arrange_well(state.round, "A")
    with pytest.raises(PhaseError, match="still waiting for a non-foul arrangement from B"):
        showdown.reveal(state.round, state.table, state.wallets, KEYS, NEXT, T0)
    assert nothing(state.then()) and state.table.next_seed_nonce == FIRST.hex()


def test_r9_a_reveal_without_every_active_wallet_records_nothing_anywhere() -> None:
    state = given(dict.fromkeys("ABC", 1000))
    assert state.round is not None
    arrange_well(state.round, *"ABC")
    some = {p: state.wallets[p] for p in "AB"}
    with pytest.raises(PhaseError, match="wallets of C"):
        showdown.reveal(state.round, state.table, some, KEYS, NEXT, T0)
    assert nothing(state.then()) and state.table.next_seed_nonce == FIRST.hex()


def test_r10_4_a_revealed_round_is_not_revealed_again() -> None:
    state = given(dict.fromkeys("AB", 1000))
    assert state.round is not None
    arrange_well(state.round, "A", "B")
    showdown.reveal(state.round, state.table, state.wallets, KEYS, NEXT, T0)
    state.then()
    with pytest.raises(PhaseError, match="already over"):
        showdown.reveal(state.round, state.table, state.wallets, KEYS, NEXT, T0)
    assert nothing(state.then())


# Leaving --------------------------------------------------------------------------------------


def test_r10_5_leaving_between_rounds_is_free() -> None:
    state = given(dict.fromkeys("AB", 1000), dealt=False)
    left = showdown.stand_up(state.table, state.wallets["A"], None, {}, KEYS, NEXT, T0)
    assert left == showdown.Departure(escaped=False)
    assert state.then() == {"table": ["PlayerStoodUp"], "A": ["StoodUp"], "B": []}
    assert state.table.seats == ["B"] and state.table.next_seed_nonce == FIRST.hex()


def test_r10_5_a_player_seated_after_the_deal_leaves_the_round_alone() -> None:
    state = given(dict.fromkeys("AB", 1000))
    late = Wallet(player_id="E")
    late.credit("in-E", 1000)
    late.sit_down("t1")
    state.table.sit_down("E", T0)
    late.collect_events()
    state.then()
    others = {p: state.wallets[p] for p in "AB"}
    left = showdown.stand_up(state.table, late, state.round, others, KEYS, NEXT, T0)
    assert not left.escaped
    assert state.then() == {"round": [], "table": ["PlayerStoodUp"], "A": [], "B": []}
    assert [type(e).__name__ for e in late.collect_events()] == ["StoodUp"]


def test_r11_an_escape_pays_the_others_and_the_round_goes_on() -> None:
    """RULES.md worked example 8: base 1, B escapes with 1,000 coins."""
    state = given({"A": 100, "B": 1000, "C": 100, "D": 100})
    assert state.round is not None and state.round.base_stake == 1
    others = {p: state.wallets[p] for p in "ACD"}
    left = showdown.stand_up(state.table, state.wallets["B"], state.round, others, KEYS, NEXT, T0)
    assert left == showdown.Departure(escaped=True, transfers={"B": -25, "C": 9, "D": 8, "A": 8})
    assert state.then() == {
        "round": ["PlayerEscaped"],
        "table": ["PlayerStoodUp"],
        "A": ["EscapeShareReceived"],
        "B": ["EscapePenaltyPaid"],
        "C": ["EscapeShareReceived"],
        "D": ["EscapeShareReceived"],
    }
    balances = {p: w.balance for p, w in state.wallets.items()}
    assert balances == {"A": 108, "B": 975, "C": 109, "D": 108}
    assert state.round.active == ["A", "C", "D"] and state.table.current_round == "r1"
    assert state.table.next_seed_nonce == FIRST.hex()  # the round goes on: no new commitment


def test_r11_3_an_escape_that_leaves_one_player_ends_the_round_without_a_showdown() -> None:
    state = given(dict.fromkeys("AB", 1000))
    assert state.round is not None
    left = showdown.stand_up(
        state.table, state.wallets["A"], state.round, {"B": state.wallets["B"]}, KEYS, NEXT, T0
    )
    assert left.escaped and left.abandoned and sum(left.transfers.values()) == 0
    assert state.then() == {
        "round": ["PlayerEscaped", "Abandoned"],
        "table": ["PlayerStoodUp", "RoundEnded"],
        "A": ["EscapePenaltyPaid"],
        "B": ["EscapeShareReceived", "RoundClosed"],
    }
    assert state.round.ended and not state.round.revealed
    assert state.round.server_seed == SEED.hex()  # R12.6: published at the end
    assert state.table.next_commitment == commitment(derive_seed(KEY, "t1", 2, NEXT))  # R12.1
    assert state.wallets["B"].round_id is None


def test_r11_an_escape_without_the_other_wallets_records_nothing_anywhere() -> None:
    state = given(dict.fromkeys("ABC", 1000))
    with pytest.raises(PhaseError, match="wallets of C"):
        showdown.stand_up(
            state.table,
            state.wallets["A"],
            state.round,
            {"B": state.wallets["B"]},
            KEYS,
            NEXT,
            T0,
        )
    assert nothing(state.then())


# Seed keys (R12.1) ----------------------------------------------------------------------------


def test_r12_1_a_reveal_without_the_committed_seed_key_records_nothing_anywhere() -> None:
    state = given(dict.fromkeys("AB", 1000))
    assert state.round is not None
    arrange_well(state.round, "A", "B")
    with pytest.raises(SeedKeyMissing, match=KEYS.current):
        showdown.reveal(state.round, state.table, state.wallets, OTHER_KEYS, NEXT, T0)
    assert nothing(state.then()) and not state.round.ended


def test_r12_1_an_escape_that_ends_the_round_needs_the_seed_key_and_records_nothing_without() -> (
    None
):
    state = given(dict.fromkeys("AB", 1000))
    others = {"B": state.wallets["B"]}
    with pytest.raises(SeedKeyMissing, match=KEYS.current):
        showdown.stand_up(
            state.table, state.wallets["A"], state.round, others, OTHER_KEYS, NEXT, T0
        )
    assert nothing(state.then()) and state.table.seats == ["A", "B"]


def test_r12_1_an_escape_that_leaves_the_round_going_needs_no_seed_key() -> None:
    state = given(dict.fromkeys("ABC", 1000))
    others = {p: state.wallets[p] for p in "BC"}
    left = showdown.stand_up(
        state.table, state.wallets["A"], state.round, others, OTHER_KEYS, NEXT, T0
    )
    assert left.escaped and not left.abandoned


def test_r12_1_the_next_commitment_is_made_under_the_current_key_after_a_rotation() -> None:
    state = given(dict.fromkeys("AB", 1000))
    assert state.round is not None
    arrange_well(state.round, "A", "B")
    rotated = KeyRing.of([bytes(32), KEY])  # a new current key; the old one kept
    showdown.reveal(state.round, state.table, state.wallets, rotated, NEXT, T0)
    assert state.round.server_seed == SEED.hex()  # revealed under the old key
    assert state.table.next_seed_key == rotated.current != KEYS.current
    assert state.table.next_commitment == commitment(derive_seed(bytes(32), "t1", 2, NEXT))
