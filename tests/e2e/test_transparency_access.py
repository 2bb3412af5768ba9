"""Issue 12: ``GetInclusionProof`` of a round follows the rule of ``GetRound`` (readers,
auditors, witnesses and cashiers see a round only once it is over; dealers, as observers at any
table, and admin always), and to a caller who may not see a round in progress it answers alike
for a round in progress and for none at all: PERMISSION_DENIED with one message, so the answer
tells neither that the round exists nor how many events it has. The form by position stays
open to every role but shows such callers only the hashes, not which stream and version the
event is. Over mutual TLS, each role with a certificate of its own (``tests.e2e.test_access``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TypedDict, Unpack

import grpc
import pytest

from service._generated.thirteen.v1 import transparency_pb2
from tests.e2e.helpers import Refusal
from tests.e2e.test_access import World, setup
from tests.support.stores import store_environ

NOT_IN_PROGRESS = ("reader", "auditor", "witness", "cashier")


@pytest.fixture
def roles(tmp_path: Path) -> Iterator[World]:
    """A server with a client per role (``tests.e2e.test_access``)."""
    with store_environ("sqlite", tmp_path) as environ:
        built = World(tmp_path / "data", environ, tmp_path / "certs")
        yield built
        built.close()


class Target(TypedDict, total=False):
    """What GetInclusionProof is asked for: a round's events, or the event at a position."""

    round_id: str
    position: int
    tree_size: int


def inclusion(
    roles: World, role: str, **target: Unpack[Target]
) -> transparency_pb2.GetInclusionProofResponse:
    request = transparency_pb2.GetInclusionProofRequest(**target)
    return roles.as_[role].transparency.GetInclusionProof(request)


def refusal(roles: World, role: str, **target: Unpack[Target]) -> Refusal:
    with pytest.raises(grpc.RpcError) as refused:
        inclusion(roles, role, **target)
    return Refusal.of(refused.value)


def test_a_round_in_progress_and_no_round_at_all_are_refused_alike_before_the_end(
    roles: World,
) -> None:
    ids = setup(roles)
    done, live = ids["done"], ids["live"]
    for role in NOT_IN_PROGRESS:
        assert len(inclusion(roles, role, round_id=done).events) >= 4, role  # over: open
        in_progress = refusal(roles, role, round_id=live)
        nowhere = refusal(roles, role, round_id="no-such-round")
        assert in_progress.code == nowhere.code == grpc.StatusCode.PERMISSION_DENIED, role
        assert in_progress.reason == nowhere.reason == "ROLE_REQUIRED"
        assert in_progress.message.replace(live, "ID") == nowhere.message.replace(
            "no-such-round", "ID"
        )
        assert "is not over, or does not exist" in nowhere.message


def test_dealers_and_admin_see_rounds_in_progress_and_hear_not_found_for_none(roles: World) -> None:
    ids = setup(roles)
    for role in ("dealer", "dealer2", "admin"):  # dealer2: an observer of the other's table
        answer = inclusion(roles, role, round_id=ids["live"])
        assert len(answer.events) >= 1 and all(e.stream for e in answer.events), role
        assert refusal(roles, role, round_id="no-such-round").code == grpc.StatusCode.NOT_FOUND


def test_a_proof_by_position_shows_only_hashes_to_who_may_not_see_rounds_in_progress(
    roles: World,
) -> None:
    setup(roles)
    for role in (*NOT_IN_PROGRESS, "dealer", "admin"):
        answer = inclusion(roles, role, position=1)
        assert answer.hashes and answer.events[0].hashes == answer.hashes, role
        assert answer.events[0].leaf_index == answer.leaf_index == 0
        shown = (answer.events[0].stream, answer.events[0].version)
        if role in NOT_IN_PROGRESS:
            assert shown == ("", 0), role
        else:
            assert shown[0] and shown[1] == 1, role
