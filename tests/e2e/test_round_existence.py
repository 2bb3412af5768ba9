"""Permission before existence (AIP-211) for every RPC that shows one round: ``GetRound``,
``GetRoundResult``, ``AuditRound`` and ``ExportRound`` answer a caller who may not read rounds
in progress (a reader, an auditor) alike for a round in progress and for a round that does not
exist, PERMISSION_DENIED with one message, so the answer does not tell that the round exists
(the known gap of issue 11's access rules, closed as ``GetInclusionProof`` was in issue 12).
Dealers and admin, who may read rounds in progress, hear NOT_FOUND for none. Over mutual TLS,
a certificate per role (``tests.e2e.test_access``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from service._generated.thirteen.v1 import audit_pb2, results_pb2, table_pb2
from tests.e2e.helpers import Refusal
from tests.e2e.test_access import World, setup
from tests.support.stores import store_environ

ASK: dict[str, Callable[[Any, str], object]] = {
    "GetRound": lambda c, r: c.tables.GetRound(table_pb2.GetRoundRequest(round_id=r)),
    "GetRoundResult": lambda c, r: c.results.GetRoundResult(
        results_pb2.GetRoundResultRequest(round_id=r)
    ),
    "AuditRound": lambda c, r: c.audit.AuditRound(audit_pb2.AuditRoundRequest(round_id=r)),
    "ExportRound": lambda c, r: c.audit.ExportRound(audit_pb2.ExportRoundRequest(round_id=r)),
}
MAY_ASK = {"GetRound": ("reader", "auditor"), "AuditRound": ("auditor",)}
MAY_ASK["GetRoundResult"] = MAY_ASK["GetRound"]
MAY_ASK["ExportRound"] = MAY_ASK["AuditRound"]


@pytest.fixture
def roles(tmp_path: Path) -> Iterator[World]:
    with store_environ("sqlite", tmp_path) as environ:
        built = World(tmp_path / "data", environ, tmp_path / "certs")
        yield built
        built.close()


def refusal(call: Callable[[], object]) -> Refusal:
    with pytest.raises(grpc.RpcError) as refused:
        call()
    return Refusal.of(refused.value)


def test_a_round_in_progress_and_no_round_at_all_are_refused_alike(roles: World) -> None:
    ids = setup(roles)
    for rpc, ask in ASK.items():
        for role in MAY_ASK[rpc]:
            client = roles.as_[role]
            ask(client, ids["done"])  # over: answered
            in_progress = refusal(lambda: ask(client, ids["live"]))  # noqa: B023
            nowhere = refusal(lambda: ask(client, "no-such-round"))  # noqa: B023
            assert in_progress.code == nowhere.code == grpc.StatusCode.PERMISSION_DENIED, (
                rpc,
                role,
            )
            assert in_progress.reason == nowhere.reason == "ROLE_REQUIRED"
            assert in_progress.message.replace(ids["live"], "ID") == nowhere.message.replace(
                "no-such-round", "ID"
            ), (rpc, role)


def test_dealers_and_admin_read_rounds_in_progress_and_hear_not_found_for_none(
    roles: World,
) -> None:
    ids = setup(roles)
    get = ASK["GetRound"]
    for role in ("dealer", "dealer2", "admin"):
        client = roles.as_[role]
        get(client, ids["live"])
        assert refusal(lambda: get(client, "no-such-round")).code == grpc.StatusCode.NOT_FOUND  # noqa: B023
    admin = roles.as_["admin"]
    ASK["AuditRound"](admin, ids["live"])
    assert refusal(lambda: ASK["AuditRound"](admin, "nope")).code == grpc.StatusCode.NOT_FOUND
    for rpc in ("ExportRound", "GetRoundResult"):  # would carry its secrets; has none yet
        ask = ASK[rpc]
        in_progress = refusal(lambda: ask(admin, ids["live"]))  # noqa: B023
        assert in_progress.code == grpc.StatusCode.FAILED_PRECONDITION, rpc
        assert refusal(lambda: ask(admin, "nope")).code == grpc.StatusCode.NOT_FOUND, rpc  # noqa: B023
