"""Tamper evidence where events are encoded: a mapper that links each new event to the one
before it in its stream (``domain.tlog.chain``) while it turns the event into stored bytes.

Each event is encoded once: its state becomes a JSON-ready tree in one walk (the registered
transcodings applied, exactly as the library's JSON transcoder writes them), the chain hashes
that tree's canonical form, and the stored bytes are that tree with the link added. The bytes
equal what the library would write, so stores stay byte-compatible with the first version.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Sequence
from typing import Any
from uuid import UUID

import orjson
from eventsourcing.application import Application, LRUCache
from eventsourcing.persistence import JSONTranscoder, Mapper, Recording, StoredEvent
from eventsourcing.utils import get_topic

from domain.tlog.chain import CHAIN, link
from domain.tlog.merkle import leaf_hash
from service.errors import NotFound
from service.eventstore.encoding import PLAIN, FastJSONTranscoder, OddKey

HEADS = 20_000  # streams whose last chain hash is kept in memory


class ChainingMapper(Mapper[UUID]):
    """Encodes an event and, inside ``chaining(previous)``, links it into its stream.

    ``previous`` maps each stream about to be saved to the chain hash of its last stored event
    ("" for a new stream); the mapper moves each entry forward as it encodes that stream's
    events, in version order, so afterwards it holds the heads the save would store. Outside
    ``chaining`` events are encoded as they are (a copy, a snapshot). The JSON is orjson's,
    byte for byte ``json``'s (``service.eventstore.encoding``), or ``json``'s itself where
    orjson cannot write an event that way."""

    def __init__(self, transcoder: JSONTranscoder) -> None:
        self.json = FastJSONTranscoder.like(transcoder)
        super().__init__(transcoder=self.json)
        self.previous: dict[UUID, str] | None = None
        # Inside ``chaining``: the transparency log's leaf hash of each event encoded (the
        # canonical form the link hashes is the leaf's data: ``domain.tlog.evidence``).
        self.leaves: dict[tuple[UUID, int], bytes] | None = None  # None: no log to feed
        self.encoded = 0  # events encoded, for tests that count encodings

    def to_stored_event(self, domain_event: Any) -> StoredEvent:
        if self.compressor or self.cipher:  # then the stored bytes are not the tree's JSON
            return super().to_stored_event(domain_event)
        self.encoded += 1
        try:
            return self.encode(domain_event, fast=True)
        except (orjson.JSONEncodeError, OddKey):  # nothing was changed: the chain moves on once
            return self.encode(domain_event, fast=False)

    def encode(self, domain_event: Any, *, fast: bool) -> StoredEvent:
        """The stored event, written by orjson (``fast``: may raise ``orjson.JSONEncodeError``
        or ``OddKey`` before it changes anything) or by ``json``, as every version has."""
        topic = get_topic(type(domain_event))
        state = dict(vars(domain_event))
        stream = state.pop("originator_id")
        version = state.pop("originator_version")
        class_version = getattr(type(domain_event), "class_version", 1)
        if class_version > 1:
            state["class_version"] = class_version
        transcoder = self.json
        walk = transcoder.tree
        tree = {k: v if type(v) in PLAIN else walk(v, fast=fast) for k, v in state.items()}
        chained = self.previous is not None and stream in self.previous
        if chained:
            tree.pop(CHAIN, None)
            body = (transcoder.canonical if fast else transcoder.canonical_as_json)(
                str(stream), version, topic, tree
            )
            assert self.previous is not None
            head = link(self.previous[stream], body)
            tree[CHAIN] = head
        if class_version > 1:  # last, where the library writes it: after the chain
            tree["class_version"] = tree.pop("class_version")
        data = transcoder.dumps(tree) if fast else transcoder.dumps_as_json(tree)
        if chained:  # written: only now may the chain move on
            assert self.previous is not None
            if self.leaves is not None:
                self.leaves[(stream, version)] = leaf_hash(body)
            self.previous[stream] = head
            object.__setattr__(domain_event, CHAIN, head)
        return StoredEvent(
            originator_id=stream, originator_version=version, topic=topic, state=data
        )


class ChainHeads:
    """The chain hash of each stream's last *committed* event, and the commit that links new
    events to them (``domain.tlog.chain``) as the mapper encodes them.

    Only the application's writer thread commits (``service.eventstore.writer``), so no commit can
    link to a head that is not yet stored."""

    def __init__(self, app: Application[UUID]) -> None:
        self.app = app
        self._heads: LRUCache[UUID, tuple[int, str]] = LRUCache(HEADS)  # stream → version, chain
        self.leaves: dict[tuple[UUID, int], bytes] = {}  # of the last commit: leaf hashes
        self.keep_leaves = False  # set by a transparency log that takes them from memory

    def commit(
        self, events: Sequence[Any], store: Callable[[], list[Recording[UUID]]]
    ) -> list[Recording[UUID]]:
        """Run ``store`` (one transaction of ``events``, in order) with each new event linked to
        the one before it in its stream. Heads are remembered only once stored."""
        streams: dict[UUID, int] = {}  # stream → its version before these events
        last: dict[UUID, int] = {}
        for event in events:
            streams.setdefault(event.originator_id, event.originator_version - 1)
            last[event.originator_id] = event.originator_version
        mapper = self.app.mapper
        assert isinstance(mapper, ChainingMapper)
        mapper.previous = {
            stream: "" if base == 0 else self.head(stream, base) for stream, base in streams.items()
        }
        mapper.leaves = {} if self.keep_leaves else None
        try:
            recordings = store()
        except BaseException:
            for stream in streams:  # those heads were not stored
                with contextlib.suppress(KeyError):
                    self._heads.get(stream, evict=True)
            raise
        finally:
            heads, mapper.previous = mapper.previous, None
        for stream, version in last.items():  # each stream's last new event is its head now
            self._heads.put(stream, (version, heads[stream]))
        self.leaves = mapper.leaves or {}
        return recordings

    def follow(self, stream: UUID, version: int, state: bytes) -> None:
        """Another replica stored ``version`` of ``stream`` (``state``, its stored bytes): a
        cached head just before it moves on to it, so the next commit to the stream links to it
        without reading it; a cached head further behind is dropped (read when next needed)."""
        try:
            cached: tuple[int, str] = self._heads.get(stream)
        except KeyError:
            return
        if cached[0] >= version:  # this process's own commit
            return
        if cached[0] == version - 1:
            self._heads.put(stream, (version, str(orjson.loads(state).get(CHAIN, ""))))
        else:
            with contextlib.suppress(KeyError):
                self._heads.get(stream, evict=True)

    def head(self, aggregate_id: UUID, version: int | None = None) -> str:
        """The chain hash of a stream's event at ``version`` (default: its last stored event,
        read from the store: another replica may have added to it)."""
        try:
            cached: tuple[int, str] | None = self._heads.get(aggregate_id)
        except KeyError:
            cached = None
        if cached is not None and version is not None and cached[0] == version:
            return cached[1]
        found = self.app.recorder.select_events(aggregate_id, lte=version, desc=True, limit=1)
        if not found or (version is not None and found[0].originator_version != version):
            raise NotFound(f"stream {aggregate_id} has no event at version {version}")
        return str(json.loads(found[0].state).get(CHAIN, ""))
