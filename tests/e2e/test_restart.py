"""A restart: stop the server and start another on the same store. Everything is rebuilt from
the stored events — tables, rounds, balances, the next commitment — and play goes on."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from service._generated.thirteen.v1 import table_pb2, wallet_pb2
from tests.e2e.helpers import (
    PHASE,
    arrange,
    arrange_well,
    balances,
    deal,
    events,
    get_round,
    get_table,
    good_piles,
    hands_of,
    reveal,
    seated_table,
    wait_for_phase,
)
from tests.support.clock import ManualClock
from tests.support.server import ServerThread

PLAYERS = ["A", "B", "C"]


def test_a_restart_keeps_tables_rounds_balances_and_the_next_commitment(
    start_server: Callable[[], ServerThread],
) -> None:
    """R12.1: the committed seed survives the restart (the next deal uses it); a revealed round
    reads the same; a round dealt before the restart can be arranged and revealed after it."""
    first = start_server()
    seated_table(first, "t", {"A": 1000, "B": 700, "C": 480})
    done = deal(first, "t")
    arrange_well(first, done)
    revealed = reveal(first, done.round_id)
    open_round = deal(first, "t", client_seed="before")
    arrange(first, open_round.round_id, "A", good_piles(hands_of(open_round)["A"]))
    table = get_table(first, "t")
    wallets = balances(first, PLAYERS)
    rounds = first.tables.ListRounds(table_pb2.ListRoundsRequest(table_id="t"))

    def last(message: table_pb2.WatchTableResponse) -> bool:
        # An observer sees a submission only as submitted (R10.4).
        return message.type == "HandSubmitted" and message.round_id == open_round.round_id

    history = events(first, "t", last)
    first.stop()

    second = start_server()
    assert get_table(second, "t") == table
    assert balances(second, PLAYERS) == wallets
    assert second.tables.ListRounds(table_pb2.ListRoundsRequest(table_id="t")) == rounds
    assert get_round(second, done.round_id).result.players == revealed.players
    for p in PLAYERS:
        wallet = second.wallets.GetBalance(wallet_pb2.GetBalanceRequest(player_id=p))
        assert (wallet.table_id, wallet.round_id) == ("t", open_round.round_id)
    assert events(second, "t", last) == history  # same positions, same events

    for p in ["B", "C"]:
        arrange(second, open_round.round_id, p, good_piles(hands_of(open_round)[p]))
    result = reveal(second, open_round.round_id)
    assert hashlib.sha256(bytes.fromhex(result.server_seed)).hexdigest() == table.next_commitment
    assert sum(p.coins for p in result.players) == 0
    assert sum(balances(second, PLAYERS).values()) == 1000 + 700 + 480


def test_a_round_dealt_before_a_restart_is_revealed_by_the_new_servers_sweeper(
    start_server: Callable[[], ServerThread], clock: ManualClock
) -> None:
    """R10.3: the sweeper of the restarted server knows the open rounds from the log and
    reveals them at their deadline; R4.3: whoever did not arrange is foul."""
    first = start_server()
    seated_table(first, "t", {"A": 1000, "B": 1000})
    dealt = deal(first, "t")
    arrange_well(first, dealt, ["B"])
    first.stop()

    second = start_server()
    clock.advance(60)
    revealed = wait_for_phase(second, dealt.round_id, PHASE.ROUND_PHASE_REVEALED)
    assert [(p.player_id, p.foul, p.points) for p in revealed.result.players] == [
        ("A", True, -6),
        ("B", False, 6),
    ]
    assert balances(second, ["A", "B"]) == {"A": 1000 - 60, "B": 1000 + 60}
    assert get_table(second, "t").current_round_id == ""
