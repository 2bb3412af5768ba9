"""The transparency log (issue 12): a Merkle tree over every stored event in log order, signed
checkpoints of it, and its proofs.

- **Appending.** One thread per process follows the event log in position order and appends
  each event's leaf (``domain.transparency.leaf_data``), storing the perfect subtrees it
  completes (``service.transparency.store``) with the tree's new size in one transaction. A
  SQLite store has one writing process: the leaves of its own commits are taken from memory,
  hashed when the event was encoded for its chain link (``service.chaining``). On PostgreSQL the
  other replicas' events are read from the log; one replica at a time appends and signs (an
  advisory lock, as the projector's), and another takes over from the stored tree.
- **Checkpoints.** While the tree grows, the appender signs a checkpoint at most every
  ``checkpoint_interval`` seconds and stores it before anyone can read it. Before signing it
  recomputes the last stored checkpoint's root from the stored tree: a tree that no longer
  extends it is never signed again (``transparency_log_inconsistent`` in the log), so the log
  never signs two inconsistent checkpoints, across restarts too.
- **Proofs** read only the subtree hashes they need (``domain.merkle``), never every leaf.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

import structlog
from eventsourcing.persistence import IntegrityError
from psycopg.conninfo import make_conninfo

from domain.checkpoint import Checkpoint, sign_checkpoint, verify_cosignature
from domain.errors import RuleError
from domain.merkle import (
    Frontier,
    Node,
    consistency_ranges,
    inclusion_ranges,
    leaf_hash,
    nodes_for,
    range_hash,
    subtrees,
)
from domain.signed_note import NoteError, Signer, Verifier, parse
from domain.transparency import EventProof, LogEvidence, leaf_data
from projections.projector import AdvisoryLock, Leadership, Solo
from service.application import Thirteen
from service.errors import (
    InvalidCosignature,
    NotFound,
    NotYetLogged,
    Unavailable,
    UnknownWitness,
)
from service.evidence import record_of
from service.transparency.store import StaleTree, StoredCheckpoint, TreeState, TreeStore

log = structlog.get_logger("thirteen.transparency")

CHECKPOINT_INTERVAL = 2.0  # seconds between checkpoints while the log grows (at least)
APPEND_INTERVAL = 0.25  # seconds between appends: each is one transaction for what arrived
BATCH = 2000  # leaves appended per transaction when catching up
PURPOSE = "transparency_log"  # the advisory lock that elects the appender among replicas


@dataclass(frozen=True)
class LogOptions:
    """How a server keeps its transparency log (``service.rpc.server.start``)."""

    key: Signer | None = None  # None: a key made for this process only, gone when it ends
    witnesses: tuple[Verifier, ...] = ()  # whose cosignatures AddCosignature keeps
    checkpoint_interval: float = CHECKPOINT_INTERVAL
    enabled: bool = True  # off only for the benchmark that measures what the log costs

    def build(self, app: Thirteen) -> TransparencyLog | None:
        if not self.enabled:
            return None
        key = self.key
        if key is None:
            key = Signer.from_seed(
                f"thirteen.invalid/ephemeral-{secrets.token_hex(4)}", secrets.token_bytes(32)
            )
            log.warning(
                "log_key_ephemeral",
                vkey=key.verifier.vkey,
                reason="no log key given: checkpoints are signed by a key this process forgets",
            )
        return TransparencyLog(
            app, key, witnesses=self.witnesses, checkpoint_interval=self.checkpoint_interval
        )


@dataclass(frozen=True)
class Located:
    """A stored event's place in the tree."""

    position: int
    leaf_index: int


def _leadership(app: Thirteen) -> Leadership:
    if app.env.get("PERSISTENCE_MODULE") != "eventsourcing.postgres":
        return Solo()  # one process serves a SQLite store (``service.storage.serving``)
    from service.storage import _postgres_settings

    settings = _postgres_settings(app.env)
    scope = app.env.get("POSTGRES_SCHEMA") or settings.get("dbname", "")
    return AdvisoryLock(make_conninfo("", **settings), scope, PURPOSE)


class TransparencyLog:
    """The tree over ``app``'s events, its checkpoints signed by ``signer`` (while this process
    leads: on PostgreSQL the others serve what the leader stored); ``witnesses`` may cosign."""

    def __init__(
        self,
        app: Thirteen,
        signer: Signer,
        *,
        witnesses: Sequence[Verifier] = (),
        checkpoint_interval: float = CHECKPOINT_INTERVAL,
        append_interval: float = APPEND_INTERVAL,
        leadership: Leadership | None = None,
    ) -> None:
        self.app = app
        self.store = TreeStore(app)
        self.signer = signer
        self.witnesses = list(witnesses)
        self.checkpoint_interval = checkpoint_interval
        self.append_interval = max(0.01, min(append_interval, checkpoint_interval))
        self.leadership = leadership or _leadership(app)
        self.leading = False
        self.failure: str | None = None  # why no checkpoint can be signed, when none can
        self._single_writer = not app.writer.fastforward
        app.heads.keep_leaves = True  # each commit's leaf hashes, computed as it is encoded
        self._state: TreeState | None = None
        self._frontier: Frontier | None = None
        self._signed: StoredCheckpoint | None = None
        self._signed_at = float("-inf")
        self._origin_checked = False
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="transparency-log", daemon=True)

    # Running ------------------------------------------------------------------------------

    def create(self) -> None:
        self.store.create()

    def start(self) -> None:
        self._thread.start()

    def stop(self, *, drain: bool = True) -> None:
        """Stop following; the leader first appends what is stored (unless ``drain`` is False,
        as after a crash), so the next start (here or on another replica) has less to catch
        up."""
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=10)
        if drain and self.leading and not self._thread.is_alive():
            try:
                self.append_once()
            except Exception as error:
                log.warning("transparency_log_not_drained", cause=repr(error))
        self.leadership.release()

    def poke(self) -> None:
        self._wake.set()

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            leading = False
            try:
                leading = self.leadership.acquire()
                if leading != self.leading:
                    self._reset()
                self.leading = leading
                if leading:
                    self.append_once()
                    self.sign_if_due()
                failures = 0
            except Exception as error:  # the database: a cut session, a lost race
                failures += 1
                log.warning("transparency_log_retrying", cause=repr(error), attempt=failures)
                self._reset()
                self._stop.wait(min(1.0, 0.1 * failures))
            self._wake.wait(self.append_interval if leading else 1.0)
            self._wake.clear()

    def _reset(self) -> None:
        """Forget what may be behind the stored tree; it is read again when next needed."""
        self._state = self._frontier = self._signed = None

    def _load(self) -> tuple[TreeState, Frontier]:
        if self._state is None or self._frontier is None:
            state = self.store.state()
            hashes = self.store.nodes(subtrees(0, state.size) if state.size else [])
            self._frontier = Frontier.at(state.size, hashes.__getitem__)
            self._state = state
        return self._state, self._frontier

    # Appending ----------------------------------------------------------------------------

    def _new_leaves(self, after: int) -> list[tuple[int, bytes]]:
        """(position, leaf hash) of the events stored after ``after``, in log order."""
        recent = list(self.app.logged)  # a snapshot: the writer appends meanwhile
        if self._single_writer and recent and recent[0][0] <= after <= recent[-1][0]:
            for at, (position, _) in enumerate(recent):
                if position == after:  # this process wrote everything after it
                    return recent[at + 1 : at + 1 + BATCH]
        known = dict(recent)
        return [
            (n.id, known.get(n.id) or leaf_hash(leaf_data(record_of(n.id, n))))
            for n in self.app.recorder.select_notifications(start=after + 1, limit=BATCH)
        ]

    def append_once(self) -> int:
        """Append every event stored after the tree's last leaf; returns how many."""
        done = 0
        while True:
            state, frontier = self._load()
            leaves = self._new_leaves(state.position)
            if not leaves:
                return done
            grown = Frontier(frontier.size, list(frontier.hashes))
            nodes: list[tuple[Node, bytes]] = []
            gaps: list[tuple[int, int]] = []
            position = state.position
            for at, leaf in leaves:
                if grown.size == 0 or at != position + 1:
                    gaps.append((grown.size, at))
                nodes.extend(grown.append(leaf))
                position = at
            after = TreeState(grown.size, position)
            try:
                self.store.append(state, after, nodes, gaps)
            except StaleTree:
                self._reset()
                continue
            self._state, self._frontier = after, grown
            done += len(leaves)
            if len(leaves) < BATCH:
                return done

    # Checkpoints --------------------------------------------------------------------------

    def root_at(self, size: int) -> bytes:
        """The root of the stored tree's first ``size`` leaves."""
        wanted = subtrees(0, size)
        return range_hash(0, size, self.store.nodes(wanted).__getitem__)

    def sign_if_due(self, now: float | None = None) -> StoredCheckpoint | None:
        """Sign a checkpoint of the tree as it is, when it grew and the interval has passed
        since the last one; the new checkpoint, or None."""
        now = time.monotonic() if now is None else now
        state, frontier = self._load()
        if self._signed is None:
            self._signed = self.store.latest_checkpoint()
            if self._signed is not None and self._signed_at == float("-inf"):
                self._signed_at = now  # signed before this process: wait an interval from here
        last = self._signed
        if state.size == 0 or (last is not None and state.size <= last.size):
            return None
        if now - self._signed_at < self.checkpoint_interval:
            return None
        if last is not None and self.root_at(last.size) != last.root:
            if self.failure is None:
                log.error(
                    "transparency_log_inconsistent",
                    checkpoint_size=last.size,
                    reason="the stored tree no longer extends the last signed checkpoint: "
                    "its nodes were changed; nothing more is signed",
                )
            self.failure = f"the stored tree no longer extends the checkpoint of {last.size}"
            return None
        if last is not None and not self._origin_checked:
            self._origin_checked = True
            if last.note.split("\n", 1)[0] != self.signer.name:
                log.warning(
                    "log_key_changed",
                    previous_origin=last.note.split("\n", 1)[0],
                    origin=self.signer.name,
                    reason="the log key's name differs from the last checkpoint's origin: "
                    "witnesses see another log from here on (give every replica the same key)",
                )
        checkpoint = Checkpoint(self.signer.name, state.size, frontier.root())
        signed = StoredCheckpoint(
            checkpoint.size, checkpoint.root, sign_checkpoint(checkpoint, self.signer)
        )
        try:
            self.store.add_checkpoint(signed)  # durable before anyone can read it
        except IntegrityError:  # another replica signed this size meanwhile
            self._signed = None
            return None
        self._signed, self._signed_at = signed, now
        return signed

    def latest(self) -> StoredCheckpoint:
        found = self.store.latest_checkpoint()
        if found is None:
            raise Unavailable("the transparency log has signed no checkpoint yet; retry shortly")
        return found

    def text(self, checkpoint: StoredCheckpoint) -> str:
        """The signed checkpoint with the witnesses' cosignatures after the log's signature."""
        return checkpoint.note + "".join(self.store.cosignatures(checkpoint.size))

    def covering_position(self, position: int) -> StoredCheckpoint | None:
        """The latest checkpoint, if its tree holds the event at ``position`` (and so every
        event before it); None until one does."""
        latest = self.store.latest_checkpoint()
        if latest is None or self.store.leaf_index(position, latest.size) is None:
            return None
        return latest

    # Proofs -------------------------------------------------------------------------------

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
        nodes = self.store.nodes(nodes_for(r for each in ranges for r in each))
        return [[range_hash(s, e, nodes.__getitem__) for s, e in each] for each in ranges]

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

    # Cosignatures -------------------------------------------------------------------------

    def add_cosignature(self, cosigned: str) -> StoredCheckpoint:
        """Keep every witness's cosignature in ``cosigned`` (a checkpoint this log signed, as a
        signed note carrying the witness's line); the checkpoint it is for."""
        try:
            note = parse(cosigned)
            checkpoint = Checkpoint.parse(note.text)
        except NoteError as error:
            raise InvalidCosignature(
                f"not a cosigned checkpoint: {error}", field="checkpoint_cosignature"
            ) from None
        stored = self.store.checkpoint(checkpoint.size)
        if stored is None or parse(stored.note).text != note.text:
            raise InvalidCosignature(
                f"the log signed no such checkpoint (of {checkpoint.size} events with that "
                "root): cosign a checkpoint from GetCheckpoint",
                field="checkpoint_cosignature",
            )
        kept = 0
        for signature in note.signatures:
            witness = next((w for w in self.witnesses if signature.by(w)), None)
            if witness is None:
                continue
            try:
                verify_cosignature(note.text, signature, witness)
            except NoteError as error:
                raise InvalidCosignature(str(error), field="checkpoint_cosignature") from None
            self.store.add_cosignature(
                checkpoint.size, f"{witness.name}+{witness.key_id.hex()}", signature.line
            )
            kept += 1
        if not kept:
            known = ", ".join(w.vkey for w in self.witnesses) or "none (serve --witness-key)"
            raise UnknownWitness(
                f"no line of it is a cosignature by a witness key this server knows: {known}"
            )
        return stored
