"""Hidden information: before the reveal a viewer sees only their own cards — by GetRound, by
ListRounds and in every WatchTable event — and an observer sees none; once the round is over
every hand is shown."""

from __future__ import annotations

from service._generated.thirteen.v1 import table_pb2
from tests.e2e.helpers import (
    arrange_well,
    deal,
    events,
    get_round,
    hands_of,
    of_type,
    read_until,
    reveal,
    seated_table,
    watch,
)
from tests.support.server import ServerThread

PLAYERS = ["A", "B", "C"]


def _visible(message: table_pb2.GetRoundResponse | table_pb2.Round) -> list[str]:
    return [hand.player_id for hand in message.hands]


def test_before_the_reveal_get_round_shows_each_viewer_only_their_own_hand(
    server: ServerThread,
) -> None:
    """table.proto GetRound: before the reveal only the viewer's own cards, none for an
    observer or a stranger, and no seed (R12.1); after the reveal every hand (R12.6)."""
    seated_table(server, "t", dict.fromkeys(PLAYERS, 1000))
    dealt = deal(server, "t")
    arrange_well(server, dealt, ["A", "B"])
    for viewer in PLAYERS:
        seen = get_round(server, dealt.round_id, viewer)
        assert _visible(seen) == [viewer]
        assert list(seen.hands[0].cards) == hands_of(dealt)[viewer]
        assert seen.server_seed == ""
        assert not seen.HasField("result")
    for observer in ["", "mallory"]:
        assert _visible(get_round(server, dealt.round_id, observer)) == []
    listed = server.tables.ListRounds(table_pb2.ListRoundsRequest(table_id="t")).rounds
    assert [(_visible(r), r.server_seed) for r in listed] == [([], "")]

    arrange_well(server, dealt, ["C"])
    reveal(server, dealt.round_id)
    for viewer in ["", "mallory", *PLAYERS]:
        shown = get_round(server, dealt.round_id, viewer)
        assert hands_of(shown) == hands_of(dealt)
    listed = server.tables.ListRounds(table_pb2.ListRoundsRequest(table_id="t")).rounds
    assert hands_of(listed[0]) == hands_of(dealt)


def test_before_the_reveal_no_streamed_event_shows_another_players_cards(
    server: ServerThread,
) -> None:
    """table.proto WatchTable, R12.1: every event up to the showdown, caught up from the store
    or live, shows the viewer's own hand at most and no seed; the reveal event shows every
    hand, the seed and the result (R12.6)."""
    seated_table(server, "t", dict.fromkeys(PLAYERS, 1000))
    live = {viewer: watch(server, "t", viewer=viewer) for viewer in ["", *PLAYERS]}
    for stream in live.values():  # caught up: the streams are open before the deal
        read_until(stream, of_type("PlayerSatDown", "C"))
    dealt = deal(server, "t")
    arrange_well(server, dealt)
    reveal(server, dealt.round_id)

    for viewer in ["", *PLAYERS]:
        own = [viewer] if viewer else []
        try:
            streamed = read_until(live[viewer], of_type("RoundEnded"))
        finally:
            live[viewer].cancel()
        replayed = events(server, "t", of_type("RoundEnded"), viewer=viewer)
        assert [m.position for m in streamed] == [m.position for m in replayed[-len(streamed) :]]
        for message in streamed + replayed:
            if not message.HasField("round"):
                continue
            if message.type == "RoundRevealed":
                assert hands_of(message.round) == hands_of(dealt)
                assert message.round.server_seed and message.round.HasField("result")
            else:
                assert _visible(message.round) == own, (viewer, message.type, message.position)
                assert message.round.server_seed == ""
                assert not message.round.HasField("result")
        types = [m.type for m in streamed]
        # Each player's own submission by its kind, the others' only as submitted.
        submitted = ["HandArranged" if player == viewer else "HandSubmitted" for player in PLAYERS]
        assert types == ["RoundStarted", "RoundDealt", *submitted, "RoundRevealed", "RoundEnded"]
