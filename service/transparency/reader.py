"""The transparency log's stored tree and checkpoints, read (``LogReader``): the latest
checkpoint, the one an export proves its events against, roots, inclusion and consistency
proofs. Proofs read only the subtree hashes they need (``domain.tlog.merkle``), never every
leaf; every replica serves them from the store, and the audit of a store reads them too."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from domain.errors import RuleError
from domain.tlog.evidence import EventProof, LogEvidence
from domain.tlog.merkle import consistency_ranges, inclusion_ranges, nodes_for, range_hash, subtrees
from service.application import Thirteen
from service.errors import NotFound, NotYetLogged, Unavailable
from service.transparency.store import StoredCheckpoint, TreeStore


@dataclass(frozen=True)
class Located:
    """A stored event's place in the tree."""

    position: int
    leaf_index: int


class LogReader:
    """The stored tree and checkpoints of ``app``'s log, read: the latest checkpoint, proofs,
    roots. Shares nothing with the appender but the store."""

    def __init__(self, app: Thirteen) -> None:
        self.app = app
        self.store = TreeStore(app)

    def root_at(self, size: int) -> bytes:
        """The root of the stored tree's first ``size`` leaves."""
        wanted = subtrees(0, size)
        return range_hash(0, size, self.store.nodes(wanted).__getitem__)

    def latest(self) -> StoredCheckpoint:
        found = self.store.latest_checkpoint()
        if found is None:
            raise Unavailable("the transparency log has signed no checkpoint yet; retry shortly")
        return found

    def text(self, checkpoint: StoredCheckpoint) -> str:
        """The signed checkpoint with the witnesses' cosignatures after the log's signature."""
        return checkpoint.note + "".join(self.store.cosignatures(checkpoint.size))

    def covering_position(self, position: int, earlier_size: int = 0) -> StoredCheckpoint | None:
        """The checkpoint an export proves its events against: the newest one a witness has
        cosigned whose tree holds the event at ``position`` (and so every event before it)
        and ``earlier_size`` leaves (the caller's earlier checkpoint must be a prefix of it),
        else the latest, if its tree holds that event; None until one does. Not simply the
        latest (which ``GetCheckpoint`` serves, for witnesses to cosign): a log signs every
        ``checkpoint_interval`` while it grows and a witness polls less often, so the latest
        is seldom cosigned yet and an export of it would carry no cosignature."""
        latest = self.store.latest_checkpoint()
        if latest is None:
            return None
        index = self.store.leaf_index(position, latest.size)
        if index is None:
            return None
        cosigned = self.store.newest_cosigned(max(index + 1, earlier_size))
        return cosigned or latest

    def tree_size(self, requested: int) -> int:
        """``requested`` (0: the latest checkpoint's size), if the log has signed that far."""
        latest = self.latest().size
        if requested == 0:
            return latest
        if requested > latest:
            raise NotYetLogged(
                f"the log has signed checkpoints up to {latest} events, not {requested}: "
                "ask for a tree it has signed",
                field="tree_size",
            )
        return requested

    def locate(self, positions: Sequence[int], size: int) -> list[Located]:
        """The leaf of each event position in the tree of ``size`` leaves."""
        found = []
        for position in positions:
            index = self.store.leaf_index(position, size)
            if index is None:
                if position <= self.store.position(size - 1):
                    raise NotFound(f"no event is stored at position {position}", field="position")
                raise NotYetLogged(
                    f"the event at position {position} is not in the tree of {size} events "
                    "yet: ask again once a later checkpoint is signed",
                    field="position",
                )
            found.append(Located(position, index))
        return found

    def inclusion(self, located: Sequence[Located], size: int) -> list[list[bytes]]:
        """The inclusion proof of each located leaf in the tree of ``size`` leaves."""
        ranges = [inclusion_ranges(where.leaf_index, size) for where in located]
        distinct = {r for each in ranges for r in each}  # neighbours share their upper ranges
        nodes = self.store.nodes(nodes_for(distinct))
        hashes = {(s, e): range_hash(s, e, nodes.__getitem__) for s, e in distinct}
        return [[hashes[r] for r in each] for each in ranges]

    def consistency(self, old: int, new: int) -> list[bytes]:
        """The consistency proof from the tree of ``old`` leaves to that of ``new``."""
        if old > new:
            raise RuleError(f"old_size {old} is larger than new_size {new}", field="old_size")
        ranges = consistency_ranges(old, new)
        nodes = self.store.nodes(nodes_for(ranges))
        return [range_hash(s, e, nodes.__getitem__) for s, e in ranges]

    def evidence(
        self,
        events: Sequence[tuple[str, int, int]],
        checkpoint: StoredCheckpoint,
        earlier_size: int = 0,
    ) -> LogEvidence:
        """An export's log section: each event (stream, version, position) with its inclusion
        proof in ``checkpoint``'s tree, and the consistency proof from ``earlier_size``."""
        located = self.locate([position for _, _, position in events], checkpoint.size)
        proofs = self.inclusion(located, checkpoint.size)
        consistency: list[bytes] = []
        if 0 < earlier_size < checkpoint.size:
            consistency = self.consistency(earlier_size, checkpoint.size)
        return LogEvidence(
            self.text(checkpoint),
            tuple(
                EventProof(stream, version, where.position, where.leaf_index, tuple(proof))
                for (stream, version, _), where, proof in zip(events, located, proofs, strict=True)
            ),
            earlier_size if 0 < earlier_size <= checkpoint.size else 0,
            tuple(consistency),
        )
