"""The transparency log (issue 12): a Merkle tree over every stored event in log order, and
signed checkpoints of it, kept by one appender thread per process (``TransparencyLog``).

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
- **Health.** ``on_health`` is told when the log stops serving and when it serves again: when it
  refuses to sign (above), or when the appender keeps failing or the tree stalls
  (``service.transparency.health``).

The stored tree, its checkpoints and proofs are read by ``service.transparency.reader``
(``LogReader``, which the log extends), witnesses' cosignatures kept by
``service.transparency.cosignatures``, each checkpoint signed here submitted to C2SP
``tlog-witness`` witnesses by ``service.transparency.submitting``, and a server's options build
the log in ``service.transparency.options``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

import structlog
from eventsourcing.persistence import IntegrityError

from domain.tlog.checkpoint import Checkpoint, key_conflict, sign_checkpoint
from domain.tlog.evidence import leaf_data
from domain.tlog.merkle import Frontier, Node, leaf_hash, subtrees, verify_consistency
from domain.tlog.note import Signer, Verifier
from projections.projector import Leadership
from service.application import Thirteen
from service.eventstore.eventlog import from_memory, mine_after
from service.eventstore.locks import Standby
from service.evidence import record_of
from service.transparency.cosignatures import add_cosignature
from service.transparency.health import STALL_AFTER, Health
from service.transparency.reader import LogReader
from service.transparency.remembered import Remembered
from service.transparency.store import StaleTree, StoredCheckpoint, TreeState
from service.transparency.submitting import Submitter

log = structlog.get_logger("thirteen.transparency")

CHECKPOINT_INTERVAL = 2.0  # seconds between checkpoints while the log grows (at least)
APPEND_INTERVAL = 0.25  # seconds between appends: each is one transaction for what arrived
BATCH = 2000  # leaves appended per transaction when catching up
PURPOSE = "transparency_log"  # the advisory lock that elects the appender among replicas


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
        appends: bool = True,
        remembered: Remembered | None = None,
        new_log: bool = False,
    ) -> None:
        super().__init__(app)
        # Whether this key may sign over the checkpoints of another log name (``--new-log``):
        # otherwise a replica given another key signs nothing, so that witnesses never see
        # two logs alternate over one store (issue 23).
        self.new_log = new_log
        self.remembered = remembered  # the last checkpoint this key signed, kept beside it
        self.signer = signer
        self.witnesses = list(witnesses)
        self.checkpoint_interval = checkpoint_interval
        self.append_interval = max(0.01, min(append_interval, checkpoint_interval))
        # One appender among the processes of a store; none here when a ``thirteen worker``
        # appends and signs (``appends`` False): this process serves what the worker stores.
        self.leadership = leadership or (app.database.leadership(PURPOSE) if appends else Standby())
        self.leading = False
        self.failure: str | None = None  # why no checkpoint can be signed, when none can
        self.health = Health(checkpoint_interval, stall_after)
        self.on_health: Callable[[bool], None] | None = None  # told when serving changes
        self._single_writer = not app.writer.fastforward
        if appends:  # each commit's leaf hashes, computed as it is encoded
            app.heads.keep_leaves = True
        self._state: TreeState | None = None
        self._frontier: Frontier | None = None
        self._signed: StoredCheckpoint | None = None
        self._signed_at = float("-inf")
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="transparency-log", daemon=True)
        # Submits each checkpoint signed here to tlog-witness witnesses (``LogOptions.build``).
        self.submitter: Submitter | None = None

    # Running ------------------------------------------------------------------------------

    def create(self) -> None:
        self.store.create()

    def start(self) -> None:
        self._thread.start()
        if self.submitter is not None:
            self.submitter.start()

    def stop(self, *, drain: bool = True) -> None:
        """Stop following; the leader first appends what is stored (unless ``drain`` is False,
        as after a crash), so the next start (here or on another replica) has less to catch
        up."""
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=10)
        if self.submitter is not None:
            self.submitter.stop()
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
                self.health.recovered()
            except Exception as error:  # the database: a cut session, a lost race, tampering
                cause = repr(error)
                self.health.failed(cause)
                log.warning("transparency_log_retrying", cause=cause, attempt=self.health.failures)
                self._reset()
                self._stop.wait(min(1.0, 0.1 * self.health.failures))
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
        self.health.observe(state, signed, self.app.max_position(), now)

    def problem(self, now: float) -> str | None:
        """Why the log does not serve now (it signs nothing more, or has stalled); None when
        it does."""
        if self.failure is not None:
            return self.failure
        return self.health.problem(now)

    def report(self, now: float) -> None:
        """Tell ``on_health`` when the log stops serving or serves again."""
        if self.health.judge(self.problem(now)) and self.on_health is not None:
            self.on_health(self.health.serving)

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
                else:
                    self._check_origin(self._signed)
        return self._signed

    def _check_origin(self, last: StoredCheckpoint) -> None:
        """Refuse to sign when the store's last checkpoint ``last`` is of another log name than
        this key's, unless this key starts a new log (``new_log``) under a name the store never
        had; say once that it does."""
        origin = last.note.split("\n", 1)[0]
        if origin == self.signer.name:
            return
        if not self.new_log or self.store.latest_of(self.signer.name) is not None:
            self._refuse(
                "log_key_foreign",
                f"the log's last checkpoint ({last.size} events) is of log {origin}, not of this "
                f"key's name {self.signer.name}: every replica signs with the log's key (a new "
                "log needs a name never used, and --new-log)",
                origin=origin,
            )
            return
        log.warning(
            "log_key_changed",
            previous_origin=origin,
            origin=self.signer.name,
            reason="--new-log: this key starts a new log over the store; tell witnesses and "
            "auditors its public key",
        )

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
        newest = self.store.latest_checkpoint()  # another replica may have signed meanwhile
        if newest is not None and (last is None or newest.size > last.size):
            self._signed = newest
            self._check_origin(newest)
            if self.failure is not None or state.size <= newest.size:
                return None
            last = newest
        checkpoint = Checkpoint(self.signer.name, state.size, frontier.root())
        if last is not None and not self._extends(last, checkpoint):
            self._refuse(
                "transparency_log_inconsistent",
                f"the stored tree no longer extends the checkpoint of {last.size} events: its "
                "nodes were changed",
                checkpoint_size=last.size,
            )
            return None
        if not self._extends_remembered(checkpoint):
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
        if self.remembered is not None:
            self.remembered.keep(signed.note, checkpoint)
        if self.submitter is not None:
            self.submitter.poke()
        return signed

    def _extends_remembered(self, checkpoint: Checkpoint) -> bool:
        """Whether ``checkpoint`` extends the last one this key signed as kept beside it
        (``service.transparency.remembered``): a store rewritten, its log's tables emptied and
        rebuilt, would otherwise be signed afresh."""
        mark = self.remembered.restored() if self.remembered is not None else None
        if mark is not None:
            self._refuse(
                "log_key_conflict",
                f"the log key was put back from a backup ({mark}) without its record of what it "
                "signed after the backup: signing under its name could fork the log; start a new "
                "log (thirteen keys init DIR --name NEW, then --log-key DIR/log.key --new-log), "
                f"or remove {mark} if the key signed nothing after the backup",
                mark=str(mark),
            )
            return False
        kept = self.remembered.last() if self.remembered is not None else None
        if kept is None and self.remembered is not None and self._signed is not None:
            self.remembered.missing(self._signed.size)  # said once: the check is gone
        if kept is None or kept.origin != checkpoint.origin:
            return True
        stored = StoredCheckpoint(kept.size, kept.root, "")
        if checkpoint.size >= kept.size and self._extends(stored, checkpoint):
            return True
        assert self.remembered is not None
        self._refuse(
            "transparency_log_rewritten",
            f"the store's log does not extend the checkpoint of {kept.size} events this key "
            f"signed (kept in {self.remembered.path}): the store was rewritten, or restored from "
            "a copy older than it; its history is no longer the one signed",
            checkpoint_size=kept.size,
        )
        return False

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
        """Keep the witnesses' cosignatures in ``cosigned``
        (``service.transparency.cosignatures``); the checkpoint they are for."""
        return add_cosignature(self.store, self.witnesses, self.app.clock, cosigned)
