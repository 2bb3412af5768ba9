"""``thirteen witness``: an independent witness of the transparency log (issue 12, item 4).

It polls the log's latest checkpoint (``GetCheckpoint``), checks the log's signature on it with
the log's public key (C2SP signed-note), checks it extends the last checkpoint it accepted
(``GetConsistencyProof``, verified here with ``domain.merkle``: the server is never trusted),
records it in ``--state DIR`` (written to a new file, then renamed over the old one, so a
restart continues from it), cosigns it (C2SP tlog-cosignature, Ed25519) and hands the
cosignature back (``AddCosignature``).

A checkpoint that does not verify, a smaller tree, another root at the same size or a tree that
does not extend the accepted one is never cosigned: one ``ALARM`` line on stderr names both
checkpoints (sizes and roots) and the witness exits with status 3. The state keeps the last
accepted checkpoint, so the alarm is raised again on every later run against that log.

Exit status: 0 ``--once`` cosigned or found nothing new; 1 the log cannot be reached under
``--once``, or refuses the witness (its key not given to ``serve --witness-key``, a caller
without the ``witness`` role); 2 bad arguments or files; 3 alarm. Without ``--once`` a log that
cannot be reached is retried after ``--interval`` seconds.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import os
import secrets
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import grpc

from domain.checkpoint import Checkpoint, cosign, cosignatures, open_checkpoint
from domain.merkle import verify_consistency
from domain.signed_note import COSIGNATURE_V1, ED25519, NoteError, Signer, Verifier, parse
from service.tools.console import EXIT_BAD_INPUT

EXIT_FAILED = 1
EXIT_ALARM = 3
STATE_FILE = "checkpoint"
"""The last accepted checkpoint, as the log signed it, in ``--state DIR``."""
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
    """The last checkpoint the witness accepted, in ``DIR/checkpoint``."""

    def __init__(self, directory: Path, log_key: Verifier) -> None:
        self.path = directory / STATE_FILE
        self.directory = directory
        self.note: str | None = None
        self.latest: Checkpoint | None = None
        try:
            directory.mkdir(parents=True, exist_ok=True)
            if self.path.exists():
                note = self.path.read_text(encoding="utf-8")
                self.latest = open_checkpoint(note, log_key)
                self.note = note
        except OSError as error:
            raise BadInput(f"cannot use the state directory {directory}: {error}") from None
        except (NoteError, UnicodeDecodeError) as error:
            raise BadInput(
                f"the state {self.path} is not a checkpoint signed by the log key "
                f"{log_key.name!r} ({error}): another log's, or damaged"
            ) from None

    def save(self, note: str, checkpoint: Checkpoint) -> None:
        """Record ``note`` (the log-signed checkpoint): a new file, synced, renamed over."""
        draft = self.directory / f".{STATE_FILE}.{secrets.token_hex(4)}.new"
        try:
            with open(draft, "w", encoding="utf-8") as file:
                file.write(note)
                file.flush()
                os.fsync(file.fileno())
            os.replace(draft, self.path)
            handle = os.open(self.directory, os.O_RDONLY)
            try:
                os.fsync(handle)
            finally:
                os.close(handle)
        finally:
            with contextlib.suppress(OSError):
                draft.unlink()
        self.note, self.latest = note, checkpoint


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


def _extends(log: Log, old: Checkpoint, new: Checkpoint) -> None:
    """Nothing when ``new`` extends ``old`` (a proof verified here); ``Alarm`` otherwise."""
    both = f"last accepted {describe(old)}; the log now serves {describe(new)}"
    if new.size < old.size:
        raise Alarm(f"the log's tree shrank (a rollback): {both}")
    if new.size == old.size:
        if new.root != old.root:
            raise Alarm(f"another root at the same tree size (a fork): {both}")
        return
    if old.size == 0:
        return  # every tree extends the empty one
    try:
        sizes_old, sizes_new, proof = log.consistency(old.size, new.size)
    except grpc.RpcError as error:
        code = error.code()
        if code in RETRIED or code in REFUSALS:
            raise
        raise Alarm(
            f"the log refuses a consistency proof between checkpoints it signed "
            f"({code.name}: {error.details()}): {both}"
        ) from None
    if (sizes_old, sizes_new) != (old.size, new.size) or not verify_consistency(
        old.size, new.size, old.root, new.root, proof
    ):
        raise Alarm(
            f"the new checkpoint does not extend the last one (a rewritten history): {both}"
        )


def poll(log: Log, log_key: Verifier, witness: Signer, state: State) -> str:
    """One round: fetch, check, record, cosign, hand back. What happened, or ``Alarm``."""
    note = log.checkpoint()
    try:
        new = open_checkpoint(note, log_key)
    except NoteError as error:
        raise Alarm(
            f"the log's checkpoint does not verify with its key ({error}): last accepted "
            f"{describe(state.latest)}; the log now serves {_unverified(note)}"
        ) from None
    if state.latest is not None:
        _extends(log, state.latest, new)
    with contextlib.suppress(NoteError):  # a line in our name that does not verify is not ours
        if state.latest == new and cosignatures(note, [witness.verifier]):
            return f"nothing new: {describe(new)} is cosigned"
    parsed = parse(note)
    signed = parsed.text + "\n" + "".join(s.line for s in parsed.signatures if s.by(log_key))
    if state.latest != new:
        state.save(signed, new)
    log.add_cosignature(signed + cosign(new, int(time.time()), witness))
    return f"cosigned {describe(new)}"


def _arguments(args: argparse.Namespace) -> tuple[Verifier, Signer, State, grpc.Channel]:
    from service.security.tls import TlsConfigError, channel_credentials
    from service.transparency.keys import KeyFileError, read_signer, read_verifier

    if not 0 < args.interval <= 86400:
        raise BadInput("--interval must be a positive number of seconds, at most a day")
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
                outcome = poll(log, log_key, witness, state)
                if args.once or outcome.startswith("cosigned"):
                    print(f"thirteen witness: {outcome}", flush=True)
                if args.once:
                    return 0
            except Alarm as alarm:
                print(f"thirteen witness: ALARM: {alarm}; not cosigned", file=sys.stderr)
                return EXIT_ALARM
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
