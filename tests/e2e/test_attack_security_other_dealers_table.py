"""Attack (issue 11 §4, tables bound to their dealer): a second dealer reads a table another
dealer opened. ``GetTable`` and ``ListRounds`` are open to every dealer as an observer sees them
(README, "Security: who may do what"): seats, the commitment, the rounds, and never a hand or a
submission before the round is over; running the table stays its own dealer's.

A real server over mutual TLS with a policy; the clients show certificates of a test CA."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from service._generated.thirteen.v1 import table_pb2, wallet_pb2
from service.security.policy import Policy
from tests.support.certs import Authority
from tests.support.clock import ManualClock
from tests.support.server import ServerThread
from tests.support.stores import store_environ

SPIFFE = "spiffe://thirteen.dev/"


class Tables:
    """A server, its admin, the dealer that opens ``t-mine`` (two players, a round dealt) and a
    second dealer."""

    def __init__(self, data: Path, environ: dict[str, str], certs: Path) -> None:
        ca = Authority(certs)
        server = ca.issue("server", server=True)
        issued = {name: ca.issue(name, uri=SPIFFE + name) for name in ("admin", "d1", "d2")}
        policy = Policy.parse(
            "[identities]\n"
            f'"{SPIFFE}admin" = ["admin"]\n'
            f'"{SPIFFE}d1" = ["dealer"]\n'
            f'"{SPIFFE}d2" = ["dealer"]\n'
        )
        trust = ca.ca.read_bytes()
        key, cert = server.pair()
        self.server = ServerThread(
            data,
            environ,
            ManualClock(),
            credentials=grpc.ssl_server_credentials(
                [(key, cert)], root_certificates=trust, require_client_auth=True
            ),
            policy=policy,
            channel_credentials=grpc.ssl_channel_credentials(trust, *issued["admin"].pair()),
        )
        self.as_ = {
            name: self.server.client(grpc.ssl_channel_credentials(trust, *i.pair()))
            for name, i in issued.items()
        }
        admin, mine = self.as_["admin"], self.as_["d1"]
        for player in ("A", "B"):
            admin.wallets.Credit(
                wallet_pb2.CreditRequest(player_id=player, amount=5000, transfer_id=f"c-{player}")
            )
        mine.tables.OpenTable(table_pb2.OpenTableRequest(table_id="t-mine"))
        for player in ("A", "B"):
            mine.tables.SitDown(table_pb2.SitDownRequest(table_id="t-mine", player_id=player))
        mine.tables.Deal(table_pb2.DealRequest(table_id="t-mine"))

    def close(self) -> None:
        for client in self.as_.values():
            client.stop()
        self.server.stop()


@pytest.fixture
def tables(tmp_path: Path) -> Iterator[Tables]:
    with store_environ("sqlite", tmp_path) as environ:
        built = Tables(tmp_path / "data", environ, tmp_path / "certs")
        yield built
        built.close()


def _code(call: Callable[[], object]) -> grpc.StatusCode:
    try:
        call()
    except grpc.RpcError as error:
        return error.code()
    return grpc.StatusCode.OK


@pytest.mark.parametrize("method", ["GetTable", "ListRounds"])
def test_another_dealer_reads_a_table_it_did_not_open_only_as_an_observer(
    tables: Tables, method: str
) -> None:
    other, mine = tables.as_["d2"], tables.as_["d1"]
    calls = {
        "GetTable": lambda c: c.tables.GetTable(
            table_pb2.GetTableRequest(table_id="t-mine"), timeout=10
        ),
        "ListRounds": lambda c: c.tables.ListRounds(
            table_pb2.ListRoundsRequest(table_id="t-mine"), timeout=10
        ),
    }
    assert _code(lambda: calls[method](mine)) == grpc.StatusCode.OK
    seen = calls[method](other)
    assert seen == calls[method](mine)  # what its own dealer reads here is an observer's too
    if method == "ListRounds":
        (dealt,) = seen.rounds
        assert not dealt.hands and not any(p.submitted for p in dealt.players)
    code = _code(lambda: other.tables.Deal(table_pb2.DealRequest(table_id="t-mine"), timeout=10))
    assert code == grpc.StatusCode.PERMISSION_DENIED  # reading is not running it
