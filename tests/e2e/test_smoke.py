"""A whole round through the real server, on both stores."""

from service._generated.thirteen.v1 import table_pb2, wallet_pb2
from tests.support.server import ServerThread


def test_a_round_from_credit_to_reveal(server: ServerThread) -> None:
    for p in "ABCD":
        server.wallets.Credit(
            wallet_pb2.CreditRequest(player_id=p, amount=1000, transfer_id=f"c-{p}")
        )
    server.tables.OpenTable(table_pb2.OpenTableRequest(table_id="t1", request_id="o1"))
    for p in "ABCD":
        server.tables.SitDown(table_pb2.SitDownRequest(table_id="t1", player_id=p))
    dealt = server.tables.Deal(table_pb2.DealRequest(table_id="t1", client_seed="s"))
    assert len(dealt.hands) == 4
    server.clock.advance(61)
    result = server.tables.Reveal(table_pb2.RevealRequest(round_id=dealt.round_id))
    assert all(p.foul for p in result.players)
    assert sum(p.coins for p in result.players) == 0
