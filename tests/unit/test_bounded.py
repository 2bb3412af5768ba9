"""The caches bounded by entries and bytes (``service.bounded``)."""

from __future__ import annotations

import pytest

from service.bounded import AggregateWeights, Bounded, deep_size


def test_the_least_recently_used_entries_make_room_for_a_bound_on_entries() -> None:
    cache: Bounded[str, bytes] = Bounded(3, 10**6, len)
    for key in "abc":
        cache.put(key, b"x")
    cache.get("a")  # used: "b" is now the oldest
    cache.put("d", b"x")
    assert cache.count() == 3
    with pytest.raises(KeyError):
        cache.get("b")
    assert cache.get("a") == b"x"


def test_entries_make_room_until_what_they_weigh_is_within_the_bytes_bound() -> None:
    cache: Bounded[int, bytes] = Bounded(1000, 100, len)
    for key in range(10):
        cache.put(key, b"x" * 30)
    assert cache.count() == 3
    assert cache.bytes == 90
    cache.put(99, b"y" * 500)  # alone above the bound: the newest stays, the rest go
    assert cache.count() == 1
    assert cache.get(99) == b"y" * 500


def test_a_value_put_again_or_evicted_is_weighed_out() -> None:
    cache: Bounded[str, bytes] = Bounded(10, 1000, len)
    cache.put("a", b"x" * 100)
    cache.put("a", b"x" * 10)
    assert cache.bytes == 10
    assert cache.get("a", evict=True) == b"x" * 10
    assert cache.bytes == 0
    with pytest.raises(KeyError):
        cache.get("a")


def test_a_value_changed_in_place_is_weighed_again_when_read() -> None:
    cache: Bounded[str, list[int]] = Bounded(10, 100, len, reweigh=len)
    held = [1]
    cache.put("a", held)
    cache.put("b", [2])
    held.extend(range(150))  # brought up to date where it lies, as a repository does
    cache.get("a")
    assert cache.bytes == len(held)  # "b" made room; "a", the newest, stays
    assert cache.count() == 1


def test_deep_size_counts_what_an_object_holds_once() -> None:
    shared = "x" * 1000
    assert deep_size([shared, shared]) < deep_size([shared, "y" * 1000])
    assert deep_size({"k": [b"z" * 500]}) > 500


class Grows:
    def __init__(self, version: int) -> None:
        self.version = version
        self.items = [str(i) * 10 for i in range(version)]


def test_an_aggregate_weighs_what_its_kind_weighs_per_event_times_its_version() -> None:
    weights = AggregateWeights()
    for version in range(1, 40):
        weights(Grows(version))
    estimate = weights(Grows(400), measure=False)
    assert deep_size(Grows(400)) / 2 < estimate < deep_size(Grows(400)) * 2
