"""The log's part of an audit from the store (``AuditRound``, ``thirteen audit --round`` and
``--all``), as the offline audit of an export has it (``domain.tlog.evidence``, findings
``LOG``): each event of a round, its leaf recomputed from the stored event's canonical form,
proven by its inclusion proof against the latest signed checkpoint; and, for the whole store,
that the stored tree's root at that checkpoint is the checkpoint's root.

``audit --all`` hands every stored event over as it reads the log (``take``): rather than a
proof per event, each event's leaf is recomputed and the tree they make up compared with the
latest checkpoint's root, which checks every event of the store at once (credits and tables
too), and names the events whose leaves are not the stored ones when it fails.

Events stored after the latest checkpoint are not a failure: a note says how many wait for
the next one. A store that holds no log (never served with one) or no checkpoint yet gets a
note too. The checkpoint's signature is checked when a key is given: ``--log-public-key``
for the command (another log's checkpoint then fails, as in the offline audit), the server's
own key for ``AuditRound`` (where a checkpoint of another name is a note: signed before the
key was renamed, or by a replica given another key, it is not this key's to verify).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from uuid import UUID

from domain.findings import Finding
from domain.tlog.chain import StoredRecord
from domain.tlog.checkpoint import Checkpoint, open_checkpoint
from domain.tlog.evidence import (
    LOG,
    LogEvidence,
    check_cosignatures,
    check_inclusion,
    leaf_data,
)
from domain.tlog.merkle import HASH_BYTES, Frontier, leaf_hash
from domain.tlog.note import NoteError, Verifier
from service.application import Thirteen
from service.evidence import Evidence, record_of
from service.transparency.reader import LogReader
from service.transparency.store import StoredCheckpoint

STORE = "the store"  # where the findings say the events and proofs come from
NAMED = 10  # events named when the store's leaves are not the log's; the rest are counted


class StoreLogAudit:
    """The ``LOG`` findings of rounds and of the tree, read from ``app``'s store (through
    ``reader``, a running server's log, when there is one); ``own_key``: ``key`` is the
    server's own, not one an auditor named."""

    def __init__(
        self,
        app: Thirteen,
        key: Verifier | None,
        reader: LogReader | None = None,
        *,
        own_key: bool = False,
    ) -> None:
        self.app = app
        self.key = key
        self.reader = reader or LogReader(app)
        self.own_key = own_key
        self._present: bool | None = None
        self._signature: tuple[StoredCheckpoint, Finding] | None = None  # the latest's, once
        self._leaves = bytearray()  # recomputed from the events handed over (``take``)
        self._positions = array("q")  # their positions
        self._taken = False
        # ``audit --all``: the latest checkpoint when the first event was handed over; every
        # event it covers is read after it, while one signed later (a server serving the store
        # meanwhile) may cover events the audit never read.
        self._reading: StoredCheckpoint | Finding | None = None

    def _latest(self) -> StoredCheckpoint | Finding:
        """The latest checkpoint, or the note saying why there is none to check against."""
        if self._present is None:
            self._present = self.reader.store.exists()
        if not self._present:
            return Finding(
                LOG,
                True,
                "not checked: this store holds no transparency log (never served with one)",
            )
        latest = self.reader.store.latest_checkpoint()
        if latest is None:
            return Finding(
                LOG,
                True,
                "not checked yet: the log has signed no checkpoint; audit again once it has",
            )
        return latest

    def signature(self, latest: StoredCheckpoint) -> Finding:
        """Whether ``latest`` is signed by the key (checked once per checkpoint)."""
        if self._signature is not None and self._signature[0] == latest:
            return self._signature[1]
        origin = latest.note.split("\n", 1)[0]
        where = f"the store's latest checkpoint ({latest.size} events)"
        if self.key is None:
            found = Finding(
                LOG,
                True,
                f"not verified: the signature of {where} was not checked; give the log's public "
                "key (--log-public-key) to check it",
            )
        elif self.own_key and origin != self.key.name:
            found = Finding(
                LOG,
                True,
                f"not verified: {where} is of the log {origin}, not of this server's key "
                f"{self.key.name} (renamed since, or another replica's key): its signature was "
                "not checked",
            )
        else:
            try:
                open_checkpoint(self.reader.text(latest), self.key)
                found = Finding(LOG, True, f"{where} is signed by the log key {self.key.name}")
            except NoteError as error:
                found = Finding(LOG, False, f"{where} is not trusted: {error}")
        self._signature = (latest, found)
        return found

    def round(self, evidence: Evidence) -> list[Finding]:
        """Each stored event of the round (with the table's opening and the wallet
        movements, as an export holds them) against the latest checkpoint."""
        latest = self._latest()
        if isinstance(latest, Finding):
            return [latest]
        records = evidence.records()
        known = {(r.stream, r.version): r.position for r in records if r.position > 0}
        missing = [(UUID(r.stream), r.version) for r in records if r.position <= 0]
        known |= {(str(s), v): p for (s, v), p in self.app.database.positions(missing).items()}
        covered, waiting = [], 0
        for record in records:
            position = known.get((record.stream, record.version))
            if position is None:
                continue  # not in the store any more: the chain's findings say so
            if self.reader.store.leaf_index(position, latest.size) is None:
                waiting += 1
            else:
                covered.append((record, position))
        findings = [self.signature(latest)]
        if covered:
            proven = self.reader.evidence(
                [(r.stream, r.version, position) for r, position in covered], latest
            )
            checkpoint = Checkpoint(latest.note.split("\n", 1)[0], latest.size, latest.root)
            findings += check_inclusion(
                [r for r, _ in covered], proven.proofs, checkpoint, source=STORE
            )
        if waiting:
            findings.append(
                Finding(
                    LOG,
                    True,
                    f"not checked yet: {waiting} of the round's {len(records)} events were "
                    f"stored after the latest checkpoint ({latest.size} events); audit again "
                    "after the next one",
                )
            )
        return findings

    def take(self, record: StoredRecord) -> None:
        """One stored event, handed over in log order (``audit --all``): its leaf, recomputed,
        for ``tree``."""
        if not self._taken:
            self._reading = self._latest()
        self._taken = True
        self._leaves += leaf_hash(leaf_data(record))
        self._positions.append(record.position)

    def tree(self) -> list[Finding]:
        """The stored tree against the latest checkpoint (when events were handed over, the
        latest when the first was): its root recomputed from the stored subtrees, the
        checkpoint's signature, and the events handed over (``take``)."""
        latest = self._reading if self._reading is not None else self._latest()
        if isinstance(latest, Finding):
            return [latest]
        findings = [self.signature(latest)]
        if self._taken:
            findings += self._recomputed(latest)
        root = self._stored_root(latest.size)
        if isinstance(root, Finding):
            return [*findings, root]
        if root != latest.root:
            findings.append(
                Finding(
                    LOG,
                    False,
                    f"the stored tree's root at {latest.size} events is not the latest "
                    "checkpoint's: the tree was changed after it was signed",
                )
            )
        else:
            findings.append(
                Finding(
                    LOG,
                    True,
                    f"the stored tree's root at {latest.size} events is the latest checkpoint's",
                )
            )
        return findings

    def extends(self, earlier: Checkpoint) -> Finding:
        """Whether the store's log extends ``earlier``, a checkpoint an auditor kept (its
        signature verified): the same log, at least as long, and the stored tree (checked
        against the events by ``tree``) has the earlier root at the earlier size. A store
        rewritten and its tree rebuilt since (issue 22) fails here, whatever it signed since."""
        latest = self._reading if self._reading is not None else self._latest()
        where = f"the earlier checkpoint ({earlier.size} events)"
        if isinstance(latest, Finding):
            return Finding(LOG, False, f"{where} cannot be checked: {latest.message}")
        origin = latest.note.split("\n", 1)[0]
        if origin != earlier.origin:
            return Finding(LOG, False, f"{where} is of the log {earlier.origin}, not {origin}")
        if earlier.size > latest.size:
            return Finding(
                LOG,
                False,
                f"the store's latest checkpoint ({latest.size} events) is older than {where}: "
                "the log was cut back",
            )
        root = self._stored_root(earlier.size)
        if isinstance(root, Finding):
            return root
        if root != earlier.root:
            return Finding(
                LOG,
                False,
                f"the store's log at {earlier.size} events is not {where}: the log's history "
                "was rewritten",
            )
        return Finding(LOG, True, f"the store's log extends {where}")

    def witnessed(self, witnesses: Sequence[Verifier], required: int) -> list[Finding]:
        """Whether the newest checkpoint the witnesses cosigned carries the cosignatures of at
        least ``required`` of ``witnesses`` (``domain.tlog.evidence.check_cosignatures``), and
        the stored tree (checked against the events by ``tree``) still has its root."""
        cosigned = self.reader.covering_position(1)  # the newest cosigned, of any size
        if cosigned is None:
            return [Finding(LOG, False, "the store's log has signed no checkpoint to cosign")]
        findings = check_cosignatures(
            LogEvidence(self.reader.text(cosigned), ()), witnesses, required
        )
        root = self._stored_root(cosigned.size)
        if isinstance(root, Finding):
            return [*findings, root]
        if root != cosigned.root:
            findings.append(
                Finding(
                    LOG,
                    False,
                    f"the stored tree at {cosigned.size} events is not the one the witnesses "
                    "cosigned: the log's history was rewritten",
                )
            )
        return findings

    def _stored_root(self, size: int) -> bytes | Finding:
        """The stored tree's root at ``size``, or the finding that the tree is incomplete."""
        try:
            return self.reader.root_at(size)
        except LookupError as error:
            return Finding(LOG, False, f"the stored tree is incomplete: {error}")

    def _leaf(self, index: int) -> bytes:
        return bytes(self._leaves[index * HASH_BYTES : (index + 1) * HASH_BYTES])

    def _recomputed(self, latest: StoredCheckpoint) -> list[Finding]:
        """The events handed over, their leaves recomputed, against the checkpoint's root;
        when they do not make it up, the events whose leaves are not the stored ones."""
        count, size = len(self._positions), latest.size
        if count < size:
            return [
                Finding(
                    LOG,
                    False,
                    f"the store holds {count} events, but the latest checkpoint was signed over "
                    f"{size}: logged events were deleted",
                )
            ]
        later = []
        if count > size:
            later.append(
                Finding(
                    LOG,
                    True,
                    f"not checked yet: the {count - size} events stored after the latest "
                    "checkpoint; audit again after the next one",
                )
            )
        frontier = Frontier()
        for index in range(size):
            frontier.append(self._leaf(index))
        if frontier.root() == latest.root:
            return [
                Finding(
                    LOG,
                    True,
                    f"the store's first {size} events, each leaf recomputed from the event, make "
                    "up the tree of the latest checkpoint: none was changed, added or removed "
                    "since it was logged",
                ),
                *later,
            ]
        stored = self.reader.store.leaves(size)
        differ = [i for i in range(size) if stored.get(i) != self._leaf(i)]
        if not differ:
            return [
                Finding(
                    LOG,
                    False,
                    f"the store's first {size} events make up the stored leaves, but not the "
                    "tree of the latest checkpoint: the tree above them was changed",
                ),
                *later,
            ]
        return [*self._not_as_logged(differ), *later]

    def _not_as_logged(self, differ: list[int]) -> list[Finding]:
        """A failure naming the event of each of the first ``NAMED`` leaves in ``differ`` (the
        leaves not as stored), and how many more there are."""
        found = [
            Finding(
                LOG,
                False,
                f"it is not what the log holds at leaf {i}: the event, or the log's copy of it, "
                "was changed after it was logged (or an event before it added or removed)",
                self._name(self._positions[i]),
            )
            for i in differ[:NAMED]
        ]
        if len(differ) > NAMED:
            found.append(
                Finding(LOG, False, f"and {len(differ) - NAMED} more events not as logged")
            )
        return found

    def _name(self, position: int) -> str:
        """How a finding names the event at ``position`` (read again: only failures ask)."""
        found = self.app.recorder.select_notifications(start=position, limit=1)
        return record_of(position, found[0]).name if found else f"event {position}"
