"""One poll of the log (``poll``): its latest checkpoint verified, proven to extend the one
the witness accepted, recorded and cosigned; or an alarm (``Alarm``), or a proof still owed
(``Unproven``)."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

import grpc

from domain.tlog.checkpoint import Checkpoint, cosign, cosignatures, open_checkpoint
from domain.tlog.merkle import verify_consistency
from domain.tlog.note import NoteError, Signer, Verifier, parse
from service.witness.state import State, describe

REFRESH_AFTER = 60 * 60
"""Seconds after which the witness cosigns the accepted checkpoint again when the log has not
grown (same checkpoint, a new time): the log refuses cosignatures more than a day old
(``domain.tlog.checkpoint.COSIGNATURE_BEHIND``) and a client may want a recent one, so on an idle
log the newest cosignature is at most this old (plus ``--interval``)."""
ALARM_AFTER = 3
"""Polls at which a newer checkpoint goes unproven before the witness alarms (--alarm-after)."""
CALL_TIMEOUT = 10.0
RETRIED = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.ABORTED,
    grpc.StatusCode.CANCELLED,
    grpc.StatusCode.INTERNAL,
    grpc.StatusCode.UNKNOWN,
}
"""Codes that say the log is (for now) out of reach: the witness tries again later."""
REFUSALS = {
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.UNIMPLEMENTED,
}
"""Codes that say this witness is not let in: fix the configuration (exit 1)."""


def _unverified(note: str) -> str:
    """What a checkpoint whose signature did not verify claims to be."""
    try:
        return describe(Checkpoint.parse(parse(note).text)) + " (unverified)"
    except NoteError:
        return "an unreadable checkpoint"


class Alarm(Exception):
    """The log showed a checkpoint the witness must not cosign; the message names both."""


class AnotherLog(Exception):
    """The server now serves another log's checkpoints (another name: a new log, started on
    purpose over a restored store or with a rotated key, docs/operating/keys.md): not a fork of
    the log this witness watches, whose last accepted checkpoint stays its last."""


class Unproven(Exception):
    """The log showed a newer checkpoint and did not prove it extends the accepted one, fewer
    than ``--alarm-after`` polls in a row; the message says so."""


@dataclass
class Log:
    """The log's ``TransparencyService``."""

    channel: grpc.Channel

    def __post_init__(self) -> None:
        from service._generated.thirteen.v1 import transparency_pb2_grpc

        self.stub = transparency_pb2_grpc.TransparencyServiceStub(self.channel)

    def checkpoint(self) -> str:
        from service._generated.thirteen.v1 import transparency_pb2 as pb

        answer = self.stub.GetCheckpoint(pb.GetCheckpointRequest(), timeout=CALL_TIMEOUT)
        return str(answer.checkpoint)

    def consistency(self, old: int, new: int) -> tuple[int, int, list[bytes]]:
        from service._generated.thirteen.v1 import transparency_pb2 as pb

        request = pb.GetConsistencyProofRequest(old_size=old, new_size=new)
        answer = self.stub.GetConsistencyProof(request, timeout=CALL_TIMEOUT)
        return answer.old_size, answer.new_size, list(answer.hashes)

    def add_cosignature(self, note: str) -> None:
        from service._generated.thirteen.v1 import transparency_pb2 as pb

        request = pb.AddCosignatureRequest(checkpoint_cosignature=note)
        self.stub.AddCosignature(request, timeout=CALL_TIMEOUT)


def _refusal(error: grpc.RpcError) -> tuple[str, bool]:
    """The log's refusal of a proof (its words clipped), and whether an outage or a
    misconfiguration could explain it (``RETRIED``, ``REFUSALS``): otherwise the log says it
    cannot prove what it signed."""
    code = error.code()
    return f"{code.name}: {str(error.details())[:200]}", code in RETRIED or code in REFUSALS


class Refused(Exception):
    """The log answered no consistency proof: its refusal (``_refusal``), and whether an outage
    or a misconfiguration could explain it."""

    def __init__(self, refusal: str, excusable: bool) -> None:
        super().__init__(refusal)
        self.refusal = refusal
        self.excusable = excusable


def _consistent(log: Log, older: Checkpoint, newer: Checkpoint) -> bool:
    """Whether the log proves ``newer`` extends ``older`` (its proof verified here); ``Refused``
    when it gives no proof."""
    try:
        sizes_old, sizes_new, proof = log.consistency(older.size, newer.size)
    except grpc.RpcError as error:
        raise Refused(*_refusal(error)) from None
    return (sizes_old, sizes_new) == (older.size, newer.size) and verify_consistency(
        older.size, newer.size, older.root, newer.root, proof
    )


def _extends(
    log: Log, state: State, old: Checkpoint, note: str, new: Checkpoint, alarm_after: int
) -> None:
    """Nothing when ``new`` (``note``, signed by the log) extends ``old``, the accepted
    checkpoint (a proof verified here); ``Alarm`` or ``Unproven`` otherwise, the note kept as
    evidence."""
    both = f"last accepted {describe(old)}; the log now serves {describe(new)}"

    def alarm(what: str) -> Alarm:
        return Alarm(f"{what}: {both}; evidence {state.keep(note, new)}")

    if new.size < old.size:
        raise alarm("the log's tree shrank (a rollback)")
    if new.size == old.size:
        if new.root != old.root:
            raise alarm("another root at the same tree size (a fork)")
        return
    if old.size == 0:
        return  # every tree extends the empty one
    try:
        consistent = _consistent(log, old, new)
    except Refused as refused:
        refusal = refused.refusal
        if not refused.excusable:
            raise alarm(
                f"the log refuses a consistency proof between checkpoints it signed ({refusal})"
            ) from None
        # A log that shows a newer checkpoint and will not prove it may be hiding a fork:
        # given the benefit of the doubt only ``alarm_after`` - 1 times.
        evidence = state.keep(note, new)
        count = state.count_unproven(new, refusal)
        if count >= alarm_after:
            raise Alarm(
                f"the log showed a newer checkpoint without proving it extends the accepted "
                f"one at {count} polls in a row (last: {refusal}): {both}; evidence {evidence}"
            ) from None
        raise Unproven(
            f"the log shows {describe(new)} but does not prove it extends {describe(old)} "
            f"({refusal}); unproven {count} of {alarm_after} polls before an alarm"
        ) from None
    if not consistent:
        raise alarm("the new checkpoint does not extend the last one (a rewritten history)")


def _settle(log: Log, state: State, current: Checkpoint, alarm_after: int) -> None:
    """Nothing when every checkpoint the log showed at an unproven poll (``State.pending``) is
    proven consistent with ``current`` (the accepted one, or one proven to extend it): then
    the count starts again. A log that signed two roots for one size, or two trees one of
    which does not extend the other, is an ``Alarm``; one that will not prove it counts the
    poll as unproven (``Unproven``, an ``Alarm`` at ``alarm_after``). So showing a fork when it
    cannot be checked and an honest tree when it can does not reset the count."""
    refused: tuple[Checkpoint, str] | None = None
    for shown in state.pending():
        if shown == current:
            continue
        both = (
            f"it showed {describe(shown)} before, unproven, and now serves {describe(current)}; "
            f"last accepted {describe(state.latest)}; evidence {state.evidence(shown)}"
        )
        if shown.size == current.size:
            raise Alarm(f"the log signed two roots for one tree size (a fork): {both}")
        older, newer = sorted((shown, current), key=lambda c: c.size)
        try:
            consistent = _consistent(log, older, newer)
        except Refused as no_proof:
            if not no_proof.excusable:
                raise Alarm(
                    "the log refuses a consistency proof between checkpoints it signed "
                    f"({no_proof.refusal}): {both}"
                ) from None
            refused = refused or (shown, no_proof.refusal)
            continue
        if not consistent:
            raise Alarm(f"two checkpoints the log signed are inconsistent (a fork): {both}")
    if refused is not None:
        shown, refusal = refused
        count = state.count_unproven(shown, refusal)
        if count >= alarm_after:
            raise Alarm(
                f"the log showed a checkpoint without proving it consistent with the accepted "
                f"one at {count} polls in a row (last: {refusal}): it showed {describe(shown)}, "
                f"last accepted {describe(state.latest)}, now it serves {describe(current)}; "
                f"evidence {state.evidence(shown)}"
            )
        raise Unproven(
            f"the log does not prove {describe(shown)}, a checkpoint it showed before, "
            f"consistent with {describe(current)} ({refusal}); unproven {count} of "
            f"{alarm_after} polls before an alarm"
        )
    if state.unproven:
        state.settled()


def _signed_as(note: str, origin: str) -> bool:
    """Whether ``note`` is a checkpoint carrying a signature line in its own name, ``origin``
    (by a key this witness is not given, so not verified here: what a new log's checkpoint
    shows, and what no answer that is not a signed checkpoint does)."""
    try:
        parsed = parse(note)
        Checkpoint.parse(parsed.text)
    except NoteError:
        return False
    return any(s.name == origin for s in parsed.signatures)


def _another_log(note: str, origin: str, log_key: Verifier, state: State) -> None:
    """``AnotherLog`` for a checkpoint of another name signed in that name (a new log started
    on purpose); an ``Alarm``, the note kept as evidence, for one that is unsigned or not a
    checkpoint at all: whatever answers at the log's address does not silence its witnesses
    that way."""
    accepted = f"last accepted {describe(state.latest)}"
    if not _signed_as(note, origin):
        raise Alarm(
            f"the log serves a checkpoint of another name, {origin[:200]!r}, that is not "
            f"signed in that name (not a new log's checkpoint): {accepted}; the log now serves "
            f"{_unverified(note)}; evidence {state.keep(note, None)}"
        )
    raise AnotherLog(
        f"the server now serves checkpoints of another log, {origin[:200]!r}, not of "
        f"{log_key.name!r}, which this witness watches ({accepted}): a new log, not a fork of "
        "this one; to witness it, run a witness with its public key and a new --state"
    )


def poll(
    log: Log,
    log_key: Verifier,
    witness: Signer,
    state: State,
    alarm_after: int = ALARM_AFTER,
    now: int | None = None,
) -> str:
    """One round: fetch, check, record, cosign, hand back (the accepted checkpoint again when
    this witness's cosignature on it is ``REFRESH_AFTER`` old). What happened, or ``Alarm``
    (or ``Unproven``). ``now``: the time it cosigns with (Unix seconds; default the clock)."""
    now = int(time.time()) if now is None else now
    note = log.checkpoint()
    origin = note.split("\n", 1)[0]
    if origin != log_key.name:
        _another_log(note, origin, log_key, state)
    try:
        new = open_checkpoint(note, log_key)
    except NoteError as error:
        raise Alarm(
            f"the log's checkpoint does not verify with its key ({error}): last accepted "
            f"{describe(state.latest)}; the log now serves {_unverified(note)}; evidence "
            f"{state.keep(note, None)}"
        ) from None
    if state.latest is not None:
        _extends(log, state, state.latest, note, new, alarm_after)
        _settle(log, state, new, alarm_after)
    again = ""
    with contextlib.suppress(NoteError):  # a line in our name that does not verify is not ours
        ours = cosignatures(note, [witness.verifier]) if state.latest == new else []
        if ours:
            age = now - max(c.time for c in ours)
            if age < REFRESH_AFTER:
                return f"nothing new: {describe(new)} is cosigned"
            again = f" again (the log has not grown; its cosignature was {age} s old)"
    parsed = parse(note)
    signed = parsed.text + "\n" + "".join(s.line for s in parsed.signatures if s.by(log_key))
    if state.latest != new:
        state.save(signed, new)
    log.add_cosignature(signed + cosign(new, now, witness))
    return f"cosigned {describe(new)}{again}"
