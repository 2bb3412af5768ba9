"""WatchTable: catch-up from a position, then live events; positions strictly increase and a
stream resumed after a position gives exactly the later events."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from service._generated.thirteen.v1 import table_pb2
from tests.e2e.helpers import (
    anything,
    arrange,
    credit,
    deal,
    events,
    good_piles,
    hands_of,
    of_type,
    open_table,
    read_until,
    reveal,
    sit,
    stand,
    watch,
)
from tests.support.server import ServerThread


def test_a_stream_catches_up_then_delivers_live_events_in_store_order(server: ServerThread) -> None:
    """table.proto WatchTable (no rule of RULES.md): open a stream, then act — each new event
    arrives as it happens, and the live events are exactly those a later catch-up from
    position 0 replays, in the same order."""
    for p in "ABC":
        credit(server, p, 1000, f"start-{p}")
    open_table(server, "t")
    open_table(server, "other")
    stream = watch(server, "t")
    live = []

    def next_events(last: Callable[[Any], bool] = anything) -> list[tuple[str, str]]:
        got = read_until(stream, last)
        live.extend(got)
        return [(m.type, m.player_id) for m in got]

    try:
        caught_up = read_until(stream, of_type("TableOpened"))
        assert [m.type for m in caught_up] == ["TableOpened"]
        for p in "AB":
            sit(server, "t", p)
            assert next_events() == [("PlayerSatDown", p)]
        sit(server, "other", "C")  # another table's events never show up here
        dealt = deal(server, "t")
        assert next_events(of_type("RoundDealt")) == [("RoundStarted", ""), ("RoundDealt", "")]
        assert live[-1].round_id == dealt.round_id and live[-1].table_id == "t"
        assert live[-2].table.current_round_id == dealt.round_id
        for p in "AB":
            arrange(server, dealt.round_id, p, good_piles(hands_of(dealt)[p]))
            assert next_events() == [("HandSubmitted", p)]  # to an observer (R10.4)
        reveal(server, dealt.round_id)
        assert next_events(of_type("RoundEnded")) == [("RoundRevealed", ""), ("RoundEnded", "")]
        stand(server, "t", "B")
        assert next_events() == [("PlayerStoodUp", "B")]
    finally:
        stream.cancel()

    history = events(server, "t", of_type("PlayerStoodUp", "B"))
    assert [(m.position, m.type, m.player_id, m.round_id) for m in history] == [
        (m.position, m.type, m.player_id, m.round_id) for m in caught_up + live
    ]
    assert history == caught_up + live


def test_positions_strictly_increase_and_resuming_after_one_gives_only_later_events(
    server: ServerThread,
) -> None:
    """table.proto WatchTable: resume with after = position and the stream continues exactly
    where it stopped."""
    for p in "AB":
        credit(server, p, 1000, f"start-{p}")
    open_table(server, "t")
    for p in "AB":
        sit(server, "t", p)
    dealt = deal(server, "t")
    for p in "AB":
        arrange(server, dealt.round_id, p, good_piles(hands_of(dealt)[p]))
    reveal(server, dealt.round_id)

    history = events(server, "t", of_type("RoundEnded"))
    positions = [m.position for m in history]
    assert positions == sorted(set(positions)) and positions[0] > 0
    for k, message in enumerate(history[:-1]):
        resumed = events(server, "t", of_type("RoundEnded"), after=message.position)
        assert [m.position for m in resumed] == positions[k + 1 :]
        assert [m.type for m in resumed] == [m.type for m in history[k + 1 :]]
    # A position between two events of this table (another aggregate's) resumes just as well.
    between = events(server, "t", of_type("RoundEnded"), after=positions[1] + 1)
    assert [m.position for m in between] == [p for p in positions if p > positions[1] + 1]


def test_streams_opened_while_the_table_is_busy_miss_nothing_and_repeat_nothing(
    server: ServerThread,
) -> None:
    """table.proto WatchTable: streams opened one after another while rounds are being played,
    each from position 0 — where catch-up hands over to live events no event is lost, doubled
    or reordered."""
    for p in "ABC":
        credit(server, p, 1000, f"start-{p}")
    open_table(server, "t")
    for p in "ABC":
        sit(server, "t", p)
    rounds = 4
    streams: list[Any] = []

    def play() -> None:
        for _ in range(rounds):
            dealt = deal(server, "t")
            for p in "ABC":
                arrange(server, dealt.round_id, p, good_piles(hands_of(dealt)[p]))
            reveal(server, dealt.round_id)

    player = threading.Thread(target=play)
    player.start()
    try:
        while (player.is_alive() and len(streams) < 20) or len(streams) < 3:
            streams.append(watch(server, "t"))
            time.sleep(0.02)  # spreads the openings over the play; nothing waits on it
    finally:
        player.join(timeout=60)
    last = _nth(rounds, "RoundEnded")
    history = events(server, "t", last())
    assert [m.type for m in history].count("RoundEnded") == rounds
    for stream in streams:
        try:
            got = read_until(stream, last())
        finally:
            stream.cancel()
        assert [(m.position, m.type) for m in got] == [(m.position, m.type) for m in history]


def _nth(n: int, kind: str) -> Callable[[], Callable[[table_pb2.WatchTableResponse], bool]]:
    def factory() -> Callable[[table_pb2.WatchTableResponse], bool]:
        seen = 0

        def last(message: table_pb2.WatchTableResponse) -> bool:
            nonlocal seen
            seen += message.type == kind
            return seen == n

        return last

    return factory
