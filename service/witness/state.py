"""What a witness keeps in its ``--state DIR``: the last checkpoint it accepted, the polls at
which a newer one went unproven, the checkpoints it did not accept (as evidence), and the lock
that keeps a second witness out."""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import os
import re
import secrets
import time
from pathlib import Path
from typing import IO

from domain.tlog.checkpoint import Checkpoint, open_checkpoint
from domain.tlog.note import NoteError, Verifier

STATE_FILE = "checkpoint"
"""The last accepted checkpoint, as the log signed it, in ``--state DIR``."""
UNPROVEN_FILE = "unproven"
"""One line per poll since the last accepted checkpoint at which the log showed a newer one
without proving it (size, root, the refusal), in ``--state DIR``."""
EVIDENCE_DIR = "evidence"
MAX_EVIDENCE = 1_000
"""Checkpoints kept as evidence per log, at most: one already proves the log misbehaved, and a
log that holds its key could otherwise fill the witness's disk with inconsistent checkpoints
(each is still refused, and logged)."""
"""Checkpoints the log showed and the witness did not accept, as shown, in ``--state DIR``."""
LOCK_FILE = "lock"
_UNPROVEN_LINE = re.compile(r"\d+ size (?P<size>\d+) root (?P<root>\S+) ")
"""A line of ``UNPROVEN_FILE``: its time, then the checkpoint shown (``describe``)."""


class BadInput(Exception):
    """An argument or file that cannot be used; the message is one line."""


def describe(checkpoint: Checkpoint | None) -> str:
    if checkpoint is None:
        return "none"
    return f"size {checkpoint.size} root {base64.b64encode(checkpoint.root).decode()}"


LOGS_DIR = "logs"
"""Under ``--state DIR`` of a serving witness (``--listen``): one directory per log, named by
the SHA-256 of its origin (hex)."""


def origin_hash(origin: str) -> str:
    """The lowercase hex SHA-256 of an origin: its directory, and its monitoring path."""
    return hashlib.sha256(origin.encode()).hexdigest()


def record_of_the_other_way(directory: Path, origin: str, listening: bool) -> Path | None:
    """The record of log ``origin`` that the other way of witnessing keeps in ``directory``
    (a polling witness's ``DIR/checkpoint``, a serving one's ``DIR/logs/<hash>/checkpoint``),
    when there is one: the same key must never keep two records of one log, or it could cosign
    two forks of one size."""
    if listening:
        polled = directory / STATE_FILE
        with contextlib.suppress(OSError, UnicodeDecodeError):
            if polled.read_text(encoding="utf-8").split("\n", 1)[0] == origin:
                return polled
        return None
    served = directory / LOGS_DIR / origin_hash(origin) / STATE_FILE
    return served if served.exists() else None


def refuse_a_second_record(directory: Path, origin: str, listening: bool) -> None:
    """``BadInput`` when ``directory`` holds a record of ``origin`` kept the other way."""
    found = record_of_the_other_way(directory, origin, listening)
    if found is not None:
        way = "polling (--log)" if listening else "serving (--listen)"
        raise BadInput(
            f"{found} is the record of the log {origin[:200]!r} a witness keeps {way}: one "
            "record per log and key (two could cosign two forks); witness it that way, or "
            "move the record to where this way keeps it"
        )


def lock(directory: Path) -> IO[str]:
    """``directory``'s lock file, held (by this process, until it ends); ``BadInput`` when
    another witness holds it. ``OSError`` when it cannot be opened."""
    handle = open(directory / LOCK_FILE, "a+")  # noqa: SIM115 (held while running)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise BadInput(
            f"another witness is using the state directory {directory} (it holds "
            f"{directory / LOCK_FILE}): one witness per state directory"
        ) from None
    return handle


class State:
    """What the witness keeps in ``DIR``: the last checkpoint it accepted (``checkpoint``), the
    polls since at which a newer one went unproven (``unproven``) and the checkpoints it did
    not accept (``evidence/``). A lock on ``DIR/lock`` keeps a second witness out."""

    def __init__(self, directory: Path, log_key: Verifier) -> None:
        self.path = directory / STATE_FILE
        self.directory = directory
        self.origin = log_key.name
        self.note: str | None = None
        self.latest: Checkpoint | None = None
        self.unproven: list[str] = []
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self._lock = self._locked()
            if self.path.exists():
                note = self.path.read_text(encoding="utf-8")
                self.latest = open_checkpoint(note, log_key)
                self.note = note
            unproven = directory / UNPROVEN_FILE
            if unproven.exists():
                self.unproven = unproven.read_text(encoding="utf-8").splitlines()
        except OSError as error:
            raise BadInput(f"cannot use the state directory {directory}: {error}") from None
        except (NoteError, UnicodeDecodeError) as error:
            raise BadInput(
                f"the state {self.path} is not a checkpoint signed by the log key "
                f"{log_key.name!r} ({error}): another log's, or damaged"
            ) from None

    def _locked(self) -> IO[str]:
        return lock(self.directory)

    def _write(self, path: Path, text: str) -> None:
        """``text`` in ``path``: a new file, synced, renamed over, the directory synced."""
        draft = path.parent / f".{path.name}.{secrets.token_hex(4)}.new"
        try:
            with open(draft, "w", encoding="utf-8") as file:
                file.write(text)
                file.flush()
                os.fsync(file.fileno())
            os.replace(draft, path)
            handle = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(handle)
            finally:
                os.close(handle)
        finally:
            with contextlib.suppress(OSError):
                draft.unlink()

    def save(self, note: str, checkpoint: Checkpoint) -> None:
        """Record ``note`` (the log-signed checkpoint) as accepted; the unproven polls are
        forgotten (the evidence they kept is not)."""
        self._write(self.path, note)
        self.note, self.latest = note, checkpoint
        if self.unproven:
            (self.directory / UNPROVEN_FILE).unlink(missing_ok=True)
            self.unproven = []

    def evidence(self, checkpoint: Checkpoint) -> Path:
        """Where a checkpoint the log showed and the witness did not accept is kept."""
        name = f"{checkpoint.size}-{checkpoint.root.hex()[:16]}.checkpoint"
        return self.directory / EVIDENCE_DIR / name

    def keep(self, note: str, checkpoint: Checkpoint | None) -> str:
        """Keep ``note``, a checkpoint the log showed and the witness did not accept, as
        evidence (once per checkpoint); where it is (or why it could not be kept: an alarm is
        raised all the same)."""
        evidence = self.directory / EVIDENCE_DIR
        if checkpoint is None:  # it did not verify: named by its content
            path = evidence / f"unverified-{hashlib.sha256(note.encode()).hexdigest()[:16]}.note"
        else:
            path = self.evidence(checkpoint)
        try:
            evidence.mkdir(exist_ok=True)
            if not path.exists():
                if sum(1 for _ in evidence.iterdir()) >= MAX_EVIDENCE:
                    return f"not kept ({MAX_EVIDENCE} pieces of evidence are kept already)"
                self._write(path, note)
        except OSError as error:
            return f"not kept ({error})"
        return str(path)

    def pending(self) -> list[Checkpoint]:
        """The checkpoints the log showed (signed) at the unproven polls, each once, oldest
        first: each must be proven consistent with the accepted one before the count resets."""
        found: dict[tuple[int, bytes], Checkpoint] = {}
        for line in self.unproven:
            shown = _UNPROVEN_LINE.match(line)
            if shown is None:
                continue  # not written by this version: it still counts
            with contextlib.suppress(ValueError):
                root = base64.b64decode(shown["root"], validate=True)
                checkpoint = Checkpoint(self.origin, int(shown["size"]), root)
                found.setdefault((checkpoint.size, root), checkpoint)
        return list(found.values())

    def settled(self) -> None:
        """Every checkpoint shown at an unproven poll is proven consistent with the accepted
        one: the count starts again (the evidence stays)."""
        (self.directory / UNPROVEN_FILE).unlink(missing_ok=True)
        self.unproven = []

    def count_unproven(self, checkpoint: Checkpoint, refusal: str) -> int:
        """Record a poll at which ``checkpoint`` went unproven; how many in a row now."""
        line = f"{int(time.time())} {describe(checkpoint)} {refusal}".replace("\n", " ")
        self._write(self.directory / UNPROVEN_FILE, "\n".join([*self.unproven, line]) + "\n")
        self.unproven.append(line)
        return len(self.unproven)
