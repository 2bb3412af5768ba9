"""The same view for everyone before the reveal (issue 22, finding 8; R10.4): until the round is
over, whoever may not see a player's submission (an observer, a non-player, another player,
the table's dealer asking as any of them) learns that the player submitted, never what kind of
submission it was: an arrangement, a foul draft and a declared special look alike in
``WatchTable``, ``GetRound`` and ``ListRounds``. The player sees their own as it is."""

from __future__ import annotations

import pytest

from domain.rules.specials import SPLIT_PATTERNS, Special, qualifies
from service._generated.thirteen.v1 import table_pb2
from tests.e2e.helpers import (
    arrange,
    client_seed_for,
    deal,
    foul_piles,
    get_round,
    good_piles,
    hands_of,
    seated_table,
    watch,
)
from tests.support.server import ServerThread

CHEAP = [s for s in Special if s not in SPLIT_PATTERNS]  # quick to check on many deals
SUBMITTED = "HandSubmitted"
# A declares a special (R5.4), B arranges, C submits a foul draft (R4.3); D has not submitted.
KINDS = {"A": "SpecialDeclared", "B": "HandArranged", "C": "HandArranged"}
OTHERS = ["", "Z", "D"]  # an observer, someone not at the table, a player of the round


@pytest.fixture
def in_progress(server: ServerThread) -> tuple[ServerThread, str]:
    seated_table(server, "t", {p: 1000 for p in "ABCD"})
    seed = client_seed_for(
        server, "t", "r", 4, lambda hands: any(qualifies(s, hands[0]) for s in CHEAP)
    )
    dealt = deal(server, "t", client_seed=seed, request_id="r")
    hands = hands_of(dealt)
    assert arrange(server, dealt.round_id, "A", special="any").special
    assert not arrange(server, dealt.round_id, "B", good_piles(hands["B"])).foul
    assert arrange(server, dealt.round_id, "C", foul_piles(hands["C"])).foul
    return server, dealt.round_id


def submissions(server: ServerThread, viewer: str) -> dict[str, table_pb2.WatchTableResponse]:
    """The messages of A's, B's and C's submissions on a stream watched as ``viewer``."""
    stream = watch(server, "t", viewer=viewer)
    found: dict[str, table_pb2.WatchTableResponse] = {}
    try:
        for message in stream:
            if message.round_id and message.player_id in KINDS and message.type != "RoundDealt":
                found[message.player_id] = message
            if len(found) == len(KINDS):
                return found
    finally:
        stream.cancel()
    raise AssertionError("the stream ended before the submissions")


@pytest.mark.parametrize("viewer", OTHERS, ids=["observer", "non-player", "another-player"])
def test_r10_4_a_submission_of_any_kind_is_told_to_others_only_as_submitted(
    in_progress: tuple[ServerThread, str], viewer: str
) -> None:
    server, _ = in_progress
    seen = submissions(server, viewer)
    assert {player: m.type for player, m in seen.items()} == dict.fromkeys(KINDS, SUBMITTED)
    for message in seen.values():
        assert [h.player_id for h in message.round.hands] == ([viewer] if viewer == "D" else [])


@pytest.mark.parametrize("player", list(KINDS))
def test_r10_4_a_player_sees_their_own_submission_as_it_is_and_the_others_as_submitted(
    in_progress: tuple[ServerThread, str], player: str
) -> None:
    server, _ = in_progress
    seen = submissions(server, player)
    expected = {p: (KINDS[p] if p == player else SUBMITTED) for p in KINDS}
    assert {p: m.type for p, m in seen.items()} == expected


@pytest.mark.parametrize("viewer", OTHERS, ids=["observer", "non-player", "another-player"])
def test_r10_4_get_round_and_list_rounds_show_others_only_who_submitted(
    in_progress: tuple[ServerThread, str], viewer: str
) -> None:
    server, round_id = in_progress
    shown = get_round(server, round_id, viewer)
    listed = server.tables.ListRounds(table_pb2.ListRoundsRequest(table_id="t")).rounds
    (in_list,) = [r for r in listed if r.round_id == round_id]
    for round_ in (shown, in_list):
        submitted = {p.player_id: p.submitted for p in round_.players}
        assert submitted == {"A": True, "B": True, "C": True, "D": False}
        assert not round_.HasField("result") and round_.server_seed == ""
    assert [h.player_id for h in shown.hands] == ([viewer] if viewer == "D" else [])
    assert list(in_list.hands) == []  # ListRounds shows what an observer sees
