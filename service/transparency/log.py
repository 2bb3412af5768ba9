"""The transparency log (issue 12): a Merkle tree over every stored event in log order, signed
checkpoints of it, and its proofs.

- **Appending.** One thread per process follows the event log in position order and appends
  each event's leaf (``domain.tlog.evidence.leaf_data``), storing the perfect subtrees it
  completes (``service.transparency.store``) with the tree's new size in one transaction. A
  SQLite store has one writing process: the leaves of its own commits are taken from memory,
  hashed when the event was encoded for its chain link (``service.eventstore.chaining``). On
  PostgreSQL the other replicas' events are read from the log; one replica at a time appends and
  signs (an advisory lock, as the projector's), and another takes over from the stored tree.
- **Checkpoints.** While the tree grows, the appender signs a checkpoint at most every
  ``checkpoint_interval`` seconds and stores it before anyone can read it. Before signing it
  checks the last stored checkpoint: signed by this very key when it bears this key's name
  (``domain.tlog.checkpoint.key_conflict``: a restored or rotated key needs a new name), and
  extended by the tree about to be signed (a consistency proof from the stored tree, verified as
  a witness verifies one). A tree that does not extend it, or a checkpoint of this name by
  another key, is never signed over (``transparency_log_inconsistent``,
  ``log_key_conflict`` in the log), so the log never signs two inconsistent checkpoints, across
  restarts too.
- **Health.** ``on_health`` is told when the log stops serving and when it serves again: it
  refuses to sign (above), the appender failed ``FAILURES_BEFORE_NOT_SERVING`` times in a row
  (a database error, an integrity error from a tampered tree), or events have waited for the
  tree or a checkpoint for ``stall_after`` seconds beyond the checkpoint interval without either
  advancing. Every replica judges the last from the stored tree, not only the appender.
- **Proofs** read only the subtree hashes they need (``domain.tlog.merkle``), never every leaf
  (``LogReader``, which the audit of a store uses too).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import structlog
from eventsourcing.persistence import IntegrityError

from domain.errors import RuleError
from domain.tlog.checkpoint import (
    Checkpoint,
    cosignature_time_problem,
    key_conflict,
    sign_checkpoint,
    verify_cosignature,
)
from domain.tlog.evidence import EventProof, LogEvidence, leaf_data
from domain.tlog.merkle import (
    Frontier,
    Node,
    consistency_ranges,
    inclusion_ranges,
    leaf_hash,
    nodes_for,
    range_hash,
    subtrees,
    verify_consistency,
)
from domain.tlog.note import NoteError, Signer, Verifier, parse
from projections.projector import Leadership
from service.application import Thirteen
from service.errors import (
    CosignatureTimeRefused,
    InvalidCosignature,
    NotFound,
    NotYetLogged,
    Unavailable,
    UnknownWitness,
)
from service.eventstore.application import from_memory, mine_after
from service.evidence import record_of
from service.transparency.store import StaleTree, StoredCheckpoint, TreeState, TreeStore

log = structlog.get_logger("thirteen.transparency")

CHECKPOINT_INTERVAL = 2.0  # seconds between checkpoints while the log grows (at least)
APPEND_INTERVAL = 0.25  # seconds between appends: each is one transaction for what arrived
BATCH = 2000  # leaves appended per transaction when catching up
PURPOSE = "transparency_log"  # the advisory lock that elects the appender among replicas
STALL_AFTER = 30.0
"""Seconds, beyond the checkpoint interval, that stored events may wait for the tree or a
checkpoint while neither advances, before the log reports NOT_SERVING."""
FAILURES_BEFORE_NOT_SERVING = 3  # the appender's failures in a row (as the projector's)


@dataclass(frozen=True)
class LogOptions:
    """How a server keeps its transparency log (``service.rpc.server.start``)."""

    key: Signer | None = None  # None: a key made for this process only, gone when it ends
    witnesses: tuple[Verifier, ...] = ()  # whose cosignatures AddCosignature keeps
    checkpoint_interval: float = CHECKPOINT_INTERVAL
    enabled: bool = True  # off only for the benchmark that measures what the log costs
    stall_after: float = STALL_AFTER

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
            app,
            key,
            witnesses=self.witnesses,
            checkpoint_interval=self.checkpoint_interval,
            stall_after=self.stall_after,
        )


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


class TransparencyLog(LogReader):
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
        stall_after: float = STALL_AFTER,
    ) -> None:
        super().__init__(app)
        self.signer = signer
        self.witnesses = list(witnesses)
        self.checkpoint_interval = checkpoint_interval
        self.append_interval = max(0.01, min(append_interval, checkpoint_interval))
        self.stall_after = stall_after
        # One appender among the replicas of a store (none needed where one process serves it).
        self.leadership = leadership or app.database.leadership(PURPOSE)
        self.leading = False
        self.failure: str | None = None  # why no checkpoint can be signed, when none can
        self.on_health: Callable[[bool], None] | None = None  # told when serving changes
        self._single_writer = not app.writer.fastforward
        app.heads.keep_leaves = True  # each commit's leaf hashes, computed as it is encoded
        self._state: TreeState | None = None
        self._frontier: Frontier | None = None
        self._signed: StoredCheckpoint | None = None
        self._signed_at = float("-inf")
        self._failures = 0  # the appender's failures in a row
        self._cause = ""  # the last one's
        self._progress: tuple[int, int] = (-1, -1)  # (tree size, signed size) last seen
        self._progress_at = time.monotonic()  # when it last advanced, or nothing waited
        self._waiting = False  # whether stored events wait for the tree or a checkpoint
        self._serving = True
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
        if self.leadership is not None:
            self.leadership.release()

    def poke(self) -> None:
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            leading = False
            try:
                leading = self.leadership is None or self.leadership.acquire()
                if leading != self.leading:
                    self._reset()
                self.leading = leading
                if leading:
                    self.append_once()
                    self.sign_if_due()
                self.observe(time.monotonic())
                self._failures = 0
            except Exception as error:  # the database: a cut session, a lost race, tampering
                self._failures += 1
                self._cause = repr(error)
                log.warning("transparency_log_retrying", cause=self._cause, attempt=self._failures)
                self._reset()
                self._stop.wait(min(1.0, 0.1 * self._failures))
            self.report(time.monotonic())
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

    # Health -------------------------------------------------------------------------------

    def observe(self, now: float) -> None:
        """Note whether the tree and its checkpoints have advanced (and whether events wait
        for them), from this leader's own state or, on another replica, the stored one."""
        state = self._state if self.leading and self._state is not None else self.store.state()
        if self.leading and self._signed is not None:
            signed = self._signed.size
        else:
            latest = self.store.latest_checkpoint()
            signed = latest.size if latest is not None else 0
        waiting = state.position < self.app.max_position() or signed < state.size
        progress = (state.size, signed)
        if progress != self._progress or not self._waiting:  # advanced, or it starts waiting
            self._progress, self._progress_at = progress, now
        self._waiting = waiting

    def problem(self, now: float) -> str | None:
        """Why the log does not serve now (it signs nothing more, or has stalled); None when
        it does."""
        if self.failure is not None:
            return self.failure
        if self._failures >= FAILURES_BEFORE_NOT_SERVING:
            return f"the appender failed {self._failures} times in a row: {self._cause}"
        waited = now - self._progress_at
        if self._waiting and waited > self.stall_after + self.checkpoint_interval:
            return (
                f"stored events have waited {waited:.0f} s for the tree or a checkpoint, and "
                f"neither advanced (tree of {self._progress[0]} events, signed "
                f"{self._progress[1]})"
            )
        return None

    def report(self, now: float) -> None:
        """Tell ``on_health`` when the log stops serving or serves again."""
        reason = self.problem(now)
        if (reason is None) == self._serving:
            return
        self._serving = reason is None
        if reason is None:
            log.info("transparency_log_serving")
        else:
            log.error("transparency_log_not_serving", reason=reason)
        if self.on_health is not None:
            self.on_health(self._serving)

    # Appending ----------------------------------------------------------------------------

    def _new_leaves(self, after: int) -> list[tuple[int, bytes]]:
        """(position, leaf hash) of the events stored after ``after``, in log order."""
        recent = list(self.app.logged)  # a snapshot: the writer appends meanwhile
        run, whole = from_memory(recent, after, BATCH, only_writer=self._single_writer)
        if whole:
            return run
        start = run[-1][0] if run else after
        read = self.app.recorder.select_notifications(start=start + 1, limit=BATCH - len(run))
        known = mine_after(recent, start) if read else {}
        return run + [
            (n.id, known.get(n.id) or leaf_hash(leaf_data(record_of(n.id, n)))) for n in read
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

    def _refuse(self, event: str, failure: str, **details: object) -> None:
        """Sign nothing more (in this process): ``failure`` says why."""
        if self.failure is None:
            log.error(event, reason=f"{failure}; nothing more is signed", **details)
        self.failure = failure

    def _last_signed(self, now: float) -> StoredCheckpoint | None:
        """The last stored checkpoint, read again after a start or a reset; the last one of
        this key's name (the last of all, or one from before a rename) must be this key's
        (``domain.tlog.checkpoint.key_conflict``)."""
        if self._signed is None:
            self._signed = self.store.latest_checkpoint()
            if self._signed is not None and self._signed_at == float("-inf"):
                self._signed_at = now  # signed before this process: wait an interval from here
            if self._signed is not None:
                ours = self._signed
                if ours.note.split("\n", 1)[0] != self.signer.name:
                    ours = self.store.latest_of(self.signer.name) or ours
                conflict = key_conflict(ours.note, self.signer.verifier)
                if conflict is not None:
                    self._refuse(
                        "log_key_conflict",
                        f"{conflict}: a restored or rotated log key needs a new name",
                    )
                elif self._signed.note.split("\n", 1)[0] != self.signer.name:
                    log.warning(
                        "log_key_changed",
                        previous_origin=self._signed.note.split("\n", 1)[0],
                        origin=self.signer.name,
                        reason="the log key's name differs from the last checkpoint's origin: "
                        "witnesses see another log from here on (give every replica the same "
                        "key)",
                    )
        return self._signed

    def sign_if_due(self, now: float | None = None) -> StoredCheckpoint | None:
        """Sign a checkpoint of the tree as it is, when it grew and the interval has passed
        since the last one; the new checkpoint, or None."""
        now = time.monotonic() if now is None else now
        state, frontier = self._load()
        last = self._last_signed(now)
        if self.failure is not None:
            return None
        if state.size == 0 or (last is not None and state.size <= last.size):
            return None
        if now - self._signed_at < self.checkpoint_interval:
            return None
        checkpoint = Checkpoint(self.signer.name, state.size, frontier.root())
        if last is not None and not self._extends(last, checkpoint):
            self._refuse(
                "transparency_log_inconsistent",
                f"the stored tree no longer extends the checkpoint of {last.size} events: its "
                "nodes were changed",
                checkpoint_size=last.size,
            )
            return None
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

    def _extends(self, last: StoredCheckpoint, checkpoint: Checkpoint) -> bool:
        """Whether the tree about to be signed extends the last checkpoint, by a consistency
        proof from the stored subtrees verified as a witness would: the new root comes from
        the appender's frontier, which may be folded from other stored subtrees than the last
        root (a tree of 20 leaves from the 16-leaf subtree 0 and leaves 16–19, one of 32 from
        the 16-leaf subtrees 0 and 1), so comparing the last root alone misses an edit."""
        try:
            proof = self.consistency(last.size, checkpoint.size)
        except LookupError:  # a stored subtree it needs is missing: the tables were edited
            return False
        return verify_consistency(last.size, checkpoint.size, last.root, checkpoint.root, proof)

    # Cosignatures -------------------------------------------------------------------------

    def add_cosignature(self, cosigned: str) -> StoredCheckpoint:
        """Keep every witness's cosignature in ``cosigned`` (a checkpoint this log signed, as a
        signed note carrying the witness's lines), all or none: each line by a known witness
        must verify and carry a time near the log's clock
        (``domain.tlog.checkpoint.cosignature_time_problem``); per witness the newest is kept. The
        checkpoint it is for."""
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
        now = int(self.app.clock.now().timestamp())
        kept: list[tuple[str, str, int]] = []
        for signature in note.signatures:
            witness = next((w for w in self.witnesses if signature.by(w)), None)
            if witness is None:
                continue
            try:
                stamp = verify_cosignature(note.text, signature, witness)
            except NoteError as error:
                raise InvalidCosignature(str(error), field="checkpoint_cosignature") from None
            problem = cosignature_time_problem(stamp, now)
            if problem is not None:
                raise CosignatureTimeRefused(
                    f"the cosignature of {witness.name!r} is refused: {problem}",
                    field="checkpoint_cosignature",
                )
            kept.append((f"{witness.name}+{witness.key_id.hex()}", signature.line, stamp))
        if not kept:
            known = ", ".join(w.vkey for w in self.witnesses) or "none (serve --witness-key)"
            raise UnknownWitness(
                f"no line of it is a cosignature by a witness key this server knows: {known}"
            )
        self.store.add_cosignatures(checkpoint.size, kept)
        return stored
