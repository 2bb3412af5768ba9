"""Stored events' JSON: µs per event to encode (with its chain link, as the writer does) and to
decode, with ``json`` (the library's transcoder, before) and orjson
(``service.eventstore.encoding``), over the events of a long game on SQLite."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

from eventsourcing.persistence import Mapper, StoredEvent

from service.eventstore.chaining import ChainingMapper
from tests.integration.test_encoding import _long_game, _transcoders

REPEATS = 5


def _best(run: Callable[[], object], count: int) -> float:
    """The fastest of ``REPEATS`` runs, in µs per event."""
    best = float("inf")
    for _ in range(REPEATS):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best / count * 1e6


def _encoding(mapper: ChainingMapper, events: list[Any], *, fast: bool) -> Callable[[], None]:
    def run() -> None:
        for event in events:
            stream = event.originator_id
            mapper.previous, mapper.leaves = {stream: ""}, {}
            mapper.encode(event, fast=fast)

    return run


def _decoding(mapper: Mapper[UUID], stored: list[StoredEvent]) -> Callable[[], None]:
    def run() -> None:
        for record in stored:
            mapper.to_domain_event(record)

    return run


def _line(what: str, before: float, after: float) -> str:
    return f"  {what:<24}json {before:.1f}  orjson {after:.1f}  ({before / after:.2f}×)"


def report() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as tmp:
        stored = _long_game(Path(tmp))
    old, new = _transcoders()
    chaining = ChainingMapper(old)
    events = [chaining.to_domain_event(record) for record in stored]
    count = len(events)
    yield f"encoding: {count} events of a long game, µs per event (best of {REPEATS})"
    before = _best(_encoding(chaining, events, fast=False), count)
    after = _best(_encoding(chaining, events, fast=True), count)
    yield _line("encode with chain link:", before, after)
    before = _best(_decoding(Mapper(transcoder=old), stored), count)
    after = _best(_decoding(Mapper(transcoder=new), stored), count)
    yield _line("decode to an event:", before, after)
    states = [record.state for record in stored]
    before = _best(lambda: [old.decode(s) for s in states], count)
    after = _best(lambda: [new.decode(s) for s in states], count)
    yield _line("decode bytes only:", before, after)
