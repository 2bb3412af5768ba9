"""Memory that levels off (issue 22): the aggregate caches of a serving process hold no more
than their bound in bytes, whatever the number of rounds played (a round held in memory weighs
30-45 kB, so 5,000 of them were 200 MB). The resident size itself is the soak's business
(``make soak``: ``tests/simulation/memory.py``), not a test's."""

from __future__ import annotations

from typing import Any

from service.bounded import deep_size
from tests.e2e.helpers import arrange_well, deal, get_round, reveal, seated_table
from tests.support.server import ServerThread

BOUND = 250_000  # bytes: a handful of rounds
ROUNDS = 30


def test_aggregate_caches_stay_within_their_bytes_bound_as_rounds_are_played(
    server: ServerThread,
) -> None:
    held: dict[str, Any] = {
        "writer": server.app.writer.live,
        "readers": server.app.repository.cache,
    }
    for cache in held.values():
        cache.max_bytes = BOUND
    seated_table(server, "t", {"ann": 10_000, "bob": 10_000})
    for n in range(ROUNDS):
        dealt = deal(server, "t", request_id=f"r{n}")
        arrange_well(server, dealt)
        reveal(server, dealt.round_id)
        get_round(server, dealt.round_id)  # read: into the readers' cache
    for name, cache in held.items():
        aggregates = held_values(cache)
        weight = sum(deep_size(a) for a in aggregates)
        assert len(aggregates) < ROUNDS, f"{name}: nothing made room"
        # the bound is kept on estimates: within half again of what they really weigh
        assert weight <= BOUND * 1.5, f"{name}: {len(aggregates)} aggregates weigh {weight}"


def held_values(cache: Any) -> list[Any]:
    """What a cache holds (eventsourcing's ``LRUCache`` keeps links: [prev, next, key, value])."""
    if hasattr(cache, "values"):
        return list(cache.values())
    return [link[3] for link in cache.cache.values()]
