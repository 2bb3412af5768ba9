"""A cost bound per call (issue 22, finding 1): every listing of rounds serves at most 100 rounds
a call (docs/reference/limits.md), whatever page_size asks (AIP-158: the server may return
fewer), and its next_page_token continues where it stopped; a real server on both stores."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from service._generated.thirteen.v1 import results_pb2, table_pb2
from tests.e2e.helpers import arrange_well, deal, reveal, seated_table, wait_until
from tests.support.clock import ManualClock
from tests.support.server import ServerThread
from tests.support.stores import store_environ

ROUNDS_PER_CALL = 100  # the documented cap of a listing of rounds
HUGE = 2**31 - 1
Listing = Callable[[ServerThread, str], tuple[list[str], str]]


def list_rounds(server: ServerThread, token: str) -> tuple[list[str], str]:
    request = table_pb2.ListRoundsRequest(table_id="t", page_size=HUGE, page_token=token)
    answer = server.tables.ListRounds(request)
    return [r.round_id for r in answer.rounds], answer.next_page_token


def list_round_results(server: ServerThread, token: str) -> tuple[list[str], str]:
    request = results_pb2.ListRoundResultsRequest(table_id="t", page_size=HUGE, page_token=token)
    answer = server.results.ListRoundResults(request)
    return [r.round_id for r in answer.rounds], answer.next_page_token


def list_player_rounds(server: ServerThread, token: str) -> tuple[list[str], str]:
    request = results_pb2.ListPlayerRoundsRequest(player_id="A", page_size=HUGE, page_token=token)
    answer = server.results.ListPlayerRounds(request)
    return [r.round_id for r in answer.rounds], answer.next_page_token


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def played(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ServerThread, list[str]]]:
    """A table with three rounds more than a call lists, all revealed, in the views; played
    once a store for the three listings, which only read it."""
    directory = tmp_path_factory.mktemp("list-costs")
    with store_environ(request.param, directory) as environ:
        server = ServerThread(directory / "data", environ, ManualClock())
        try:
            yield server, _play(server)
        finally:
            server.stop()


def _play(server: ServerThread) -> list[str]:
    seated_table(server, "t", {"A": 10**9, "B": 10**9})
    ids = []
    for _ in range(ROUNDS_PER_CALL + 3):
        dealt = deal(server, "t")
        arrange_well(server, dealt)
        reveal(server, dealt.round_id)
        ids.append(dealt.round_id)

    def in_the_views() -> bool:
        request = results_pb2.ListPlayerRoundsRequest(player_id="A", page_size=1)
        newest = server.results.ListPlayerRounds(request).rounds
        return bool(newest) and newest[0].round_id == ids[-1]

    wait_until(in_the_views, "the views to take in every round")
    return ids


@pytest.mark.parametrize(
    ("listing", "newest_first"),
    [(list_rounds, False), (list_round_results, False), (list_player_rounds, True)],
    ids=["ListRounds", "ListRoundResults", "ListPlayerRounds"],
)
def test_a_page_size_of_2_to_the_31_minus_1_lists_at_most_100_rounds_and_continues(
    played: tuple[ServerThread, list[str]], listing: Listing, newest_first: bool
) -> None:
    server, ids = played
    first, token = listing(server, "")
    assert 0 < len(first) <= ROUNDS_PER_CALL
    assert token
    rest: list[str] = []
    while token:
        page, token = listing(server, token)
        assert 0 < len(page) <= ROUNDS_PER_CALL
        rest += page
    assert first + rest == (ids[::-1] if newest_first else ids)
