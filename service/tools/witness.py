"""``thirteen witness``: an independent witness of the transparency log (issue 12, item 4).

It polls the log's latest checkpoint (``GetCheckpoint``), checks the log's signature on it with
the log's public key (C2SP signed-note), checks it extends the last checkpoint it accepted
(``GetConsistencyProof``, verified here with ``domain.tlog.merkle``: the server is never trusted),
records it in ``--state DIR`` (written to a new file, then renamed over the old one, so a
restart continues from it), cosigns it (C2SP tlog-cosignature, Ed25519) and hands the
cosignature back (``AddCosignature``). While the log does not grow it cosigns the same
checkpoint again, with a new time, once its cosignature is ``REFRESH_AFTER`` (an hour) old.

A checkpoint that does not verify, a smaller tree, another root at the same size, a tree that
does not extend the accepted one (its proof does not verify, or is empty or malformed) or a
consistency proof refused outright is never cosigned: one ``ALARM`` line on stderr names both
checkpoints (sizes and roots) and where the note shown is kept as evidence
(``DIR/evidence/``), and the witness exits with status 3. A log that shows a newer signed
checkpoint but does not answer for its consistency proof with a code an outage could explain
(``RETRIED``, ``REFUSALS``) is not trusted either: the checkpoint is kept as evidence, the poll
counted in ``DIR/unproven``, and at the ``--alarm-after``-th such poll (default 3) it is an
alarm too. Every checkpoint so shown must later be proven consistent with the accepted one
(``_settle``): a second root for its size, or a proof that fails, is an alarm, and each poll at
which the log does not prove it counts; only when all are proven does the count reset. The
state keeps the last
accepted checkpoint, so an alarm is raised again on every later run against that log. One
witness at a time uses a state directory (a lock on ``DIR/lock``).

Exit status: 0 ``--once`` cosigned or found nothing new; 1 the log cannot be reached under
``--once``, leaves a checkpoint it showed unproven (fewer than ``--alarm-after`` times), or refuses
the witness (its key not given to ``serve --witness-key``, a caller without the ``witness``
role); 2 bad arguments or files, or a state directory in use by another witness; 3 alarm.
Without ``--once`` a log that cannot be reached is retried after ``--interval`` seconds.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import hashlib
import os
import re
import secrets
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import grpc

from domain.tlog.checkpoint import Checkpoint, cosign, cosignatures, open_checkpoint
from domain.tlog.merkle import verify_consistency
from domain.tlog.note import COSIGNATURE_V1, ED25519, NoteError, Signer, Verifier, parse
from service.entrypoints.terminal import EXIT_BAD_INPUT

EXIT_FAILED = 1
EXIT_ALARM = 3
STATE_FILE = "checkpoint"
"""The last accepted checkpoint, as the log signed it, in ``--state DIR``."""
UNPROVEN_FILE = "unproven"
"""One line per poll since the last accepted checkpoint at which the log showed a newer one
without proving it (size, root, the refusal), in ``--state DIR``."""
EVIDENCE_DIR = "evidence"
"""Checkpoints the log showed and the witness did not accept, as shown, in ``--state DIR``."""
LOCK_FILE = "lock"
_UNPROVEN_LINE = re.compile(r"\d+ size (?P<size>\d+) root (?P<root>\S+) ")
"""A line of ``UNPROVEN_FILE``: its time, then the checkpoint shown (``describe``)."""
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


class Alarm(Exception):
    """The log showed a checkpoint the witness must not cosign; the message names both."""


class BadInput(Exception):
    """An argument or file that cannot be used; the message is one line."""


class Unproven(Exception):
    """The log showed a newer checkpoint and did not prove it extends the accepted one, fewer
    than ``--alarm-after`` polls in a row; the message says so."""


def describe(checkpoint: Checkpoint | None) -> str:
    if checkpoint is None:
        return "none"
    return f"size {checkpoint.size} root {base64.b64encode(checkpoint.root).decode()}"


def _unverified(note: str) -> str:
    """What a checkpoint whose signature did not verify claims to be."""
    try:
        return describe(Checkpoint.parse(parse(note).text)) + " (unverified)"
    except NoteError:
        return "an unreadable checkpoint"


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
        """The lock file, held (by this process, until it ends)."""
        handle = open(self.directory / LOCK_FILE, "a+")  # noqa: SIM115 (held while running)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            raise BadInput(
                f"another witness is using the state directory {self.directory} (it holds "
                f"{self.directory / LOCK_FILE}): one witness per state directory"
            ) from None
        return handle

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
        sizes_old, sizes_new, proof = log.consistency(old.size, new.size)
    except grpc.RpcError as error:
        refusal, excusable = _refusal(error)
        if not excusable:
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
    if (sizes_old, sizes_new) != (old.size, new.size) or not verify_consistency(
        old.size, new.size, old.root, new.root, proof
    ):
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
            sizes_old, sizes_new, proof = log.consistency(older.size, newer.size)
        except grpc.RpcError as error:
            refusal, excusable = _refusal(error)
            if not excusable:
                raise Alarm(
                    "the log refuses a consistency proof between checkpoints it signed "
                    f"({refusal}): {both}"
                ) from None
            refused = refused or (shown, refusal)
            continue
        if (sizes_old, sizes_new) != (older.size, newer.size) or not verify_consistency(
            older.size, newer.size, older.root, newer.root, proof
        ):
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


def _arguments(args: argparse.Namespace) -> tuple[Verifier, Signer, State, grpc.Channel]:
    from service.security.tls import TlsConfigError, channel_credentials
    from service.transparency.keys import KeyFileError, read_signer, read_verifier

    if not 0 < args.interval <= 86400:
        raise BadInput("--interval must be a positive number of seconds, at most a day")
    if not 1 <= args.alarm_after <= 1000:
        raise BadInput("--alarm-after must be a number of polls from 1 to 1000")
    try:
        log_key = read_verifier(args.log_public_key, ED25519)
        witness = read_signer(args.key, COSIGNATURE_V1)
    except KeyFileError as error:
        raise BadInput(str(error)) from None
    state = State(args.state, log_key)
    if args.ca is None:
        if args.cert is not None or args.cert_key is not None:
            raise BadInput("--cert and --cert-key need --ca (the CA that signed the server's)")
        return log_key, witness, state, grpc.insecure_channel(args.log)
    try:
        credentials = channel_credentials(args.ca, args.cert, args.cert_key)
    except TlsConfigError as error:
        raise BadInput(str(error)) from None
    return log_key, witness, state, grpc.secure_channel(args.log, credentials)


def run(args: argparse.Namespace) -> int:
    """``thirteen witness``."""
    try:
        log_key, witness, state, channel = _arguments(args)
    except BadInput as error:
        print(f"thirteen witness: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    log = Log(channel)
    print(
        f"thirteen witness: {witness.name} watching {args.log} (log {log_key.name}); "
        f"last accepted {describe(state.latest)}",
        file=sys.stderr,
        flush=True,
    )
    try:
        while True:
            try:
                outcome = poll(log, log_key, witness, state, args.alarm_after)
                if args.once or outcome.startswith("cosigned"):
                    print(f"thirteen witness: {outcome}", flush=True)
                if args.once:
                    return 0
            except Alarm as alarm:
                print(f"thirteen witness: ALARM: {alarm}; not cosigned", file=sys.stderr)
                return EXIT_ALARM
            except Unproven as unproven:
                retry = "" if args.once else f"; asking again in {args.interval:g} s"
                print(f"thirteen witness: {unproven}{retry}", file=sys.stderr, flush=True)
                if args.once:
                    return EXIT_FAILED
            except OSError as error:
                print(f"thirteen witness: cannot record the state: {error}", file=sys.stderr)
                return EXIT_FAILED
            except grpc.RpcError as error:
                code = error.code()
                reason = f"{code.name}: {error.details()}"
                if code not in RETRIED:
                    print(f"thirteen witness: the log refuses ({reason})", file=sys.stderr)
                    return EXIT_FAILED
                if args.once:
                    print(f"thirteen witness: the log is out of reach ({reason})", file=sys.stderr)
                    return EXIT_FAILED
                print(
                    f"thirteen witness: the log is out of reach ({reason}); retrying in "
                    f"{args.interval:g} s",
                    file=sys.stderr,
                    flush=True,
                )
            time.sleep(args.interval)
    finally:
        channel.close()
