"""Retries: the same id with the same content returns the same answer and moves nothing twice
(credit and debit on transfer_id, OpenTable on request_id, Deal on request_id)."""

from __future__ import annotations

from service._generated.thirteen.v1 import table_pb2, wallet_pb2
from tests.e2e.helpers import (
    arrange_well,
    balance,
    deal,
    get_table,
    head,
    nothing_stored,
    open_table,
    reveal,
    seated_table,
)
from tests.support.server import ServerThread


def test_a_retried_credit_or_debit_returns_its_first_answer_and_moves_nothing(
    server: ServerThread,
) -> None:
    """R7.2: a retry creates no coins; the answer is the balance right after that transfer,
    even when others came since."""
    first = server.wallets.Credit(
        wallet_pb2.CreditRequest(player_id="A", amount=100, transfer_id="c1")
    )
    server.wallets.Credit(wallet_pb2.CreditRequest(player_id="A", amount=50, transfer_id="c2"))
    debit = server.wallets.Debit(
        wallet_pb2.DebitRequest(player_id="A", amount=30, transfer_id="d1")
    )
    assert (first.balance, debit.balance) == (100, 120)
    with nothing_stored(server, players=["A"]):
        for _ in range(3):
            again = server.wallets.Credit(
                wallet_pb2.CreditRequest(player_id="A", amount=100, transfer_id="c1")
            )
            assert again == first
            assert (
                server.wallets.Debit(
                    wallet_pb2.DebitRequest(player_id="A", amount=30, transfer_id="d1")
                )
                == debit
            )
    assert balance(server, "A") == 120


def test_a_retried_open_table_returns_the_same_table_and_commitment(server: ServerThread) -> None:
    """OpenTable with the same table_id, request_id and ruleset opens nothing new: the same
    commitment to the first deal (R12.1) and the same opening time."""
    parameters = table_pb2.RulesetParameters(arrange_seconds=90)
    first = open_table(server, "t", ruleset="fujian", parameters=parameters, request_id="o1")
    with nothing_stored(server, tables=["t"]):
        again = open_table(server, "t", ruleset="fujian", parameters=parameters, request_id="o1")
    assert again == first
    assert get_table(server, "t").next_commitment == first.next_commitment


def test_a_retried_deal_returns_the_same_round_and_deals_nothing_twice(
    server: ServerThread,
) -> None:
    """R10.1, R12.2: Deal with the same request_id and client seed returns the round it dealt,
    with the same hands, while the round is open and after it was revealed; nothing more is
    stored."""
    seated_table(server, "t", {"A": 1000, "B": 1000, "C": 1000})
    dealt = deal(server, "t", client_seed="s", request_id="r1")
    with nothing_stored(server, tables=["t"], rounds=[dealt.round_id], players=["A", "B", "C"]):
        assert deal(server, "t", client_seed="s", request_id="r1") == dealt
    table = get_table(server, "t")
    assert (table.round_count, table.current_round_id) == (1, dealt.round_id)

    arrange_well(server, dealt)
    revealed = reveal(server, dealt.round_id)
    settled = {p: balance(server, p) for p in "ABC"}
    mark = head(server)
    later = deal(server, "t", client_seed="s", request_id="r1")
    assert head(server) == mark
    assert (later.round_id, list(later.hands)) == (dealt.round_id, list(dealt.hands))
    assert later.server_seed == revealed.server_seed
    assert {p: balance(server, p) for p in "ABC"} == settled
    assert get_table(server, "t").round_count == 1
