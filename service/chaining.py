"""Tamper evidence where events are encoded: a mapper that links each new event to the one
before it in its stream (``domain.chain``) while it turns the event into stored bytes.

Each event is encoded once: its state becomes a JSON-ready tree in one walk (the registered
transcodings applied, exactly as the library's JSON transcoder writes them), the chain hashes
that tree's canonical form, and the stored bytes are that tree with the link added. The bytes
equal what the library would write, so stores stay byte-compatible with the first version.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Sequence
from typing import Any
from uuid import UUID

from eventsourcing.application import Application
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import (
    JSONTranscoder,
    Mapper,
    Recording,
    StoredEvent,
    TranscodingNotRegisteredError,
)
from eventsourcing.utils import get_topic

from domain.chain import CHAIN, canonical, link
from service.errors import NotFound

_NATIVE = (str, int, float, bool, type(None))


class ChainingMapper(Mapper[UUID]):
    """Encodes an event and, inside ``chaining(previous)``, links it into its stream.

    ``previous`` maps each stream about to be saved to the chain hash of its last stored event
    ("" for a new stream); the mapper moves each entry forward as it encodes that stream's
    events, in version order, so afterwards it holds the heads the save would store. Outside
    ``chaining`` events are encoded as they are (a copy, a snapshot)."""

    def __init__(self, transcoder: JSONTranscoder) -> None:
        super().__init__(transcoder=transcoder)
        self.json = transcoder
        self.previous: dict[UUID, str] | None = None
        self.encoded = 0  # events encoded, for tests that count encodings

    def to_stored_event(self, domain_event: Any) -> StoredEvent:
        if self.compressor or self.cipher:  # then the stored bytes are not the tree's JSON
            return super().to_stored_event(domain_event)
        self.encoded += 1
        topic = get_topic(type(domain_event))
        state = dict(vars(domain_event))
        stream = state.pop("originator_id")
        version = state.pop("originator_version")
        class_version = getattr(type(domain_event), "class_version", 1)
        if class_version > 1:
            state["class_version"] = class_version
        tree = {key: self._plain(value) for key, value in state.items()}
        if self.previous is not None and stream in self.previous:
            tree.pop(CHAIN, None)
            head = link(self.previous[stream], canonical(str(stream), version, topic, tree))
            self.previous[stream] = head
            tree[CHAIN] = head
            object.__setattr__(domain_event, CHAIN, head)
        if class_version > 1:  # last, where the library writes it: after the chain
            tree["class_version"] = tree.pop("class_version")
        data = json.dumps(tree, separators=(",", ":"), ensure_ascii=False).encode()
        return StoredEvent(
            originator_id=stream, originator_version=version, topic=topic, state=data
        )

    def _plain(self, value: Any) -> Any:
        """The JSON-ready form of a value, as ``JSONTranscoder`` writes it."""
        if isinstance(value, _NATIVE):
            return value
        if isinstance(value, dict):
            return {self._key(k): self._plain(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self._plain(v) for v in value]
        transcoding = self.json.types.get(type(value))
        if transcoding is None:
            raise TranscodingNotRegisteredError(
                f"Object of type {type(value)} is not serializable: register a transcoding"
            )
        return {"_type_": transcoding.name, "_data_": self._plain(transcoding.encode(value))}

    @staticmethod
    def _key(key: Any) -> str:
        if isinstance(key, str):
            return key
        return json.dumps(key) if isinstance(key, bool | int | float) else str(key)


class ChainHeads:
    """The chain hash of each stream's last *committed* event, and the save that links new
    events to them (``domain.chain``) as the mapper encodes them.

    ``writer`` is the application's one writer (``service.application.command``): a save holds
    it, so no other save can link to a head that is not yet committed."""

    def __init__(self, app: Application[UUID], writer: threading.RLock) -> None:
        self.app = app
        self.writer = writer
        self._heads: dict[UUID, tuple[int, str]] = {}  # stream → (version, chain)

    def save(
        self, objs: Sequence[Any], store: Callable[[], list[Recording[UUID]]]
    ) -> list[Recording[UUID]]:
        """Run ``store`` (the library's save of ``objs``) with each new event linked to the one
        before it in its stream. Heads are remembered only once stored."""
        streams = {
            obj.id: obj.pending_events[0].originator_version - 1
            for obj in objs
            if isinstance(obj, Aggregate) and obj.pending_events
        }
        mapper = self.app.mapper
        assert isinstance(mapper, ChainingMapper)
        with self.writer:
            mapper.previous = {
                stream: "" if base == 0 else self.head(stream, base)
                for stream, base in streams.items()
            }
            try:
                recordings = store()
            except BaseException:
                for stream in streams:  # neither those heads nor those states were stored
                    self._heads.pop(stream, None)
                    if self.app.repository.cache is not None:
                        with contextlib.suppress(KeyError):
                            self.app.repository.cache.get(stream, evict=True)
                raise
            finally:
                heads, mapper.previous = mapper.previous, None
            for obj in objs:  # each stream's last new event is now its committed head
                if isinstance(obj, Aggregate) and obj.id in heads:
                    self._heads[obj.id] = (obj.version, heads[obj.id])
            return recordings

    def head(self, aggregate_id: UUID, version: int | None = None) -> str:
        """The chain hash of a stream's event at ``version`` (default: its last event)."""
        cached = self._heads.get(aggregate_id)
        if cached is not None and (version is None or cached[0] == version):
            return cached[1]
        found = self.app.recorder.select_events(aggregate_id, lte=version, desc=True, limit=1)
        if not found or (version is not None and found[0].originator_version != version):
            raise NotFound(f"stream {aggregate_id} has no event at version {version}")
        return str(json.loads(found[0].state).get(CHAIN, ""))
