"""The witness's side of C2SP ``tlog-witness`` (``thirteen witness --listen``): the logs it
witnesses, each named by its origin and trusted by one public key, each with a state directory
of its own under ``--state DIR`` (``DIR/logs/<SHA-256 of the origin, hex>/``, laid out as the
polling witness's ``--state``: ``checkpoint``, ``evidence/``, ``lock``; ``DIR/lock`` is held
too, so no other witness, polling or serving, uses ``DIR`` meanwhile), and ``add_checkpoint``,
which checks a request (``domain.tlog.add_checkpoint``), records the checkpoint and cosigns it.

Checking a request against the last checkpoint cosigned and recording the new one are one step
under the log's lock, so two requests for one log never both pass against the same record (the
race the specification describes, which would roll the record back). The record is written to
a new file, synced and renamed over the old one before the cosignature is answered; a restart
continues from it. It holds the log's signed checkpoint with this witness's cosignature after
the log's signature lines (the polling witness reads it the same way), and is what ``GET
/<origin hash>/checkpoint`` serves. A checkpoint the log signed that fails a consistency check
(422) is kept as evidence (``evidence/``) and logged: it may prove the log misbehaved.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog

from domain.tlog.add_checkpoint import (
    SIZE_CONTENT_TYPE,
    Conflict,
    Refusal,
    check,
    parse_request,
)
from domain.tlog.checkpoint import Checkpoint, cosign_text
from domain.tlog.note import Signer, Verifier, parse
from service.http_server import Tally
from service.witness.state import (
    LOGS_DIR,
    BadInput,
    State,
    describe,
    lock,
    origin_hash,
    refuse_a_second_record,
)

log = structlog.get_logger("thirteen.witness")

TEXT = "text/plain; charset=utf-8"


@dataclass(frozen=True)
class Answer:
    """An HTTP answer: its status, body and content type."""

    status: int
    body: bytes
    content_type: str = TEXT


class Witnessing:
    """The logs this witness cosigns (``logs``: each log's key, named as its origin), with
    their states under ``directory``; ``witness`` cosigns, at ``clock()`` (Unix seconds)."""

    def __init__(
        self,
        directory: Path,
        logs: Sequence[Verifier],
        witness: Signer,
        clock: Callable[[], float] = time.time,
    ) -> None:
        names = [key.name for key in logs]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise BadInput(f"two log keys for the log {twice[0]!r}: give one key per log")
        try:  # DIR itself too: a polling witness of DIR (``--log``) is kept out, and kept us out
            directory.mkdir(parents=True, exist_ok=True)
            self._lock = lock(directory)
        except OSError as error:
            raise BadInput(f"cannot use the state directory {directory}: {error}") from None
        for key in logs:
            refuse_a_second_record(directory, key.name, listening=True)
        self.witness = witness
        self.clock = clock
        self.keys = {key.name: key for key in logs}
        self.states = {
            key.name: State(directory / LOGS_DIR / origin_hash(key.name), key) for key in logs
        }
        self.by_hash = {origin_hash(name): name for name in self.keys}
        self._locks = {name: threading.Lock() for name in self.keys}
        # Anyone can send a refused request: a line now and then with the count, not one each.
        self._refusals = Tally("witness_refused")

    def add_checkpoint(self, body: bytes) -> Answer:
        """Answer one ``add-checkpoint`` request: the cosignature line (200), or the status the
        specification gives and one line saying why."""
        try:
            request = parse_request(body)
        except Refusal as refusal:
            return self._refused(refusal, None)
        origin = request.origin
        key = self.keys.get(origin)
        if key is None:
            return self._refused(Refusal(404, f"unknown log {origin[:200]!r}"), origin)
        with self._locks[origin]:
            state = self.states[origin]
            try:
                checkpoint = check(request, key, state.latest)
            except Conflict as conflict:
                self._refused(conflict, origin)
                return Answer(409, f"{conflict.size}\n".encode(), SIZE_CONTENT_TYPE)
            except Refusal as refusal:
                if refusal.status == 422:  # signed by the log, and inconsistent: evidence
                    shown = Checkpoint.parse(parse(request.note).text)
                    kept = state.keep(request.note, shown)
                    log.warning(
                        "witness_inconsistent_checkpoint",
                        origin=origin,
                        reason=refusal.reason,
                        accepted=describe(state.latest),
                        evidence=kept,
                    )
                return self._refused(refusal, origin)
            parsed = parse(request.note)
            line = cosign_text(parsed.text, int(self.clock()), self.witness)
            signed = "".join(s.line for s in parsed.signatures if s.by(key))
            state.save(parsed.text + "\n" + signed + line, checkpoint)  # before answering
        log.info("witness_cosigned", origin=origin, checkpoint=describe(checkpoint))
        return Answer(200, line.encode())

    def _refused(self, refusal: Refusal, origin: str | None) -> Answer:
        shown = origin[:200] if origin is not None else None
        self._refusals.add(status=refusal.status, origin=shown, reason=refusal.reason)
        return Answer(refusal.status, (refusal.reason + "\n").encode())

    def checkpoint(self, hashed: str) -> Answer:
        """``GET /<origin hash>/checkpoint``: the last checkpoint cosigned for that log, with
        the log's signature and this witness's cosignature; 404 when none."""
        origin = self.by_hash.get(hashed)
        note = self.states[origin].note if origin is not None else None
        if note is None:
            return Answer(404, b"this witness has cosigned no checkpoint of that log\n")
        return Answer(200, note.encode())
