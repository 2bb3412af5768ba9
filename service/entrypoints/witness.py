"""``thirteen witness``: watch a transparency log, check each checkpoint extends the last one
accepted, cosign it; exit 3 with an ALARM line when it does not (``service.witness``)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from service.entrypoints.configuring import log_effective
from service.entrypoints.options import Commands, add_client_tls, client_credentials, host_port
from service.tools.terminal import EXIT_BAD_INPUT

if TYPE_CHECKING:
    import grpc

    from domain.tlog.note import Signer, Verifier
    from service.witness.cosigning import Witnessing
    from service.witness.polling import Log
    from service.witness.state import State

EXIT_FAILED = 1
EXIT_ALARM = 3


def register(commands: Commands) -> None:
    """``witness``."""
    witness = commands.add_parser(
        "witness",
        help="watch a transparency log: check each checkpoint extends the last, cosign it; "
        "exit 3 with an ALARM line when it does not",
    )
    mode = witness.add_mutually_exclusive_group()
    mode.add_argument(
        "--log",
        type=host_port,
        metavar="HOST:PORT",
        help="poll this log over its gRPC API (GetCheckpoint, GetConsistencyProof, "
        "AddCosignature); one of --log or --listen",
    )
    mode.add_argument(
        "--listen",
        type=host_port,
        metavar="HOST:PORT",
        help="serve the C2SP tlog-witness HTTP API there instead (POST /add-checkpoint, GET "
        "/<origin hash>/checkpoint; port 0 picks one): logs submit their checkpoints; until "
        "SIGTERM",
    )
    witness.add_argument(
        "--log-public-key",
        action="append",
        default=[],
        metavar="KEY",
        help="the log's vkey or a file holding it (its name is the log's origin); with "
        "--listen repeatable, one per log witnessed",
    )
    witness.add_argument(
        "--key", type=Path, required=True, metavar="FILE", help="the witness's private key file"
    )
    witness.add_argument(
        "--state",
        type=Path,
        required=True,
        metavar="DIR",
        help="where the last accepted checkpoint is kept (a restart continues from it); with "
        "--listen, one directory per log under DIR/logs/",
    )
    witness.add_argument(
        "--interval", type=float, default=5.0, metavar="SECONDS", help="between polls (default 5)"
    )
    witness.add_argument(
        "--alarm-after",
        type=int,
        default=3,
        metavar="POLLS",
        help="alarm when the log shows a newer checkpoint without proving it extends the "
        "accepted one at this many polls in a row (default 3)",
    )
    witness.add_argument("--once", action="store_true", help="poll once and exit (for cron)")
    add_client_tls(witness, "client certificate (mTLS)", key_flag="--cert-key")
    witness.set_defaults(run=run)


def _keys(args: argparse.Namespace) -> tuple[list[Verifier], Signer]:
    """The logs' public keys and the witness's key, read; ``BadInput`` when one cannot be."""
    from domain.tlog.note import COSIGNATURE_V1, ED25519
    from service.transparency.keys import KeyFileError, read_signer, read_verifier
    from service.witness.state import BadInput

    if not args.log_public_key:
        raise BadInput("--log-public-key is required: the public key of the log witnessed")
    try:
        logs = [read_verifier(str(key), ED25519) for key in args.log_public_key]
        return logs, read_signer(args.key, COSIGNATURE_V1)
    except KeyFileError as error:
        raise BadInput(str(error)) from None


def _arguments(args: argparse.Namespace) -> tuple[Verifier, Signer, State, grpc.Channel]:
    import grpc

    from service.security.tls import TlsConfigError
    from service.witness.state import BadInput, State, refuse_a_second_record

    if not 0 < args.interval <= 86400:
        raise BadInput("--interval must be a positive number of seconds, at most a day")
    if not 1 <= args.alarm_after <= 1000:
        raise BadInput("--alarm-after must be a number of polls from 1 to 1000")
    logs, witness = _keys(args)
    if len(logs) != 1:
        raise BadInput("polling (--log) watches one log: give one --log-public-key")
    log_key = logs[0]
    try:
        credentials = client_credentials(args, "the server's", key_flag="--cert-key")
    except TlsConfigError as error:
        raise BadInput(str(error)) from None
    refuse_a_second_record(args.state, log_key.name, listening=False)
    state = State(args.state, log_key)
    if credentials is None:
        return log_key, witness, state, grpc.insecure_channel(args.log)
    return log_key, witness, state, grpc.secure_channel(args.log, credentials)


def run(args: argparse.Namespace) -> int:
    """``thirteen witness``: poll one log (``--log``) or serve tlog-witness (``--listen``)."""
    if args.listen is not None:
        return _listen(args)
    if args.log is None:
        print(
            "thirteen witness: give --log HOST:PORT (poll a log) or --listen HOST:PORT "
            "(serve tlog-witness)",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    return _poll(args)


def _listen(args: argparse.Namespace) -> int:
    """``thirteen witness --listen``: the C2SP tlog-witness HTTP API until SIGTERM or SIGINT."""
    import asyncio

    from service import logging as service_logging
    from service.metrics.endpoint import EndpointError, split_address
    from service.witness.cosigning import Witnessing
    from service.witness.http import serve
    from service.witness.state import BadInput

    try:
        if args.once:
            raise BadInput("--once polls a log (--log); --listen serves until stopped")
        logs, witness = _keys(args)
        witnessing = Witnessing(args.state, logs, witness)
        host, port = split_address(args.listen)
    except (BadInput, EndpointError) as error:
        print(f"thirteen witness: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    service_logging.configure()

    def started(bound: int) -> None:
        shown = f"[{host}]" if ":" in host else host
        names = ", ".join(f"{key.name} ({_last_cosigned(witnessing, key.name)})" for key in logs)
        print(
            f"thirteen witness: {witness.name} serving tlog-witness on http://{shown}:{bound} "
            f"for {names}",
            file=sys.stderr,
            flush=True,
        )
        log_effective(args)

    try:
        asyncio.run(serve(witnessing, host, port, started))
    except OSError as error:
        print(f"thirteen witness: cannot listen on {args.listen}: {error}", file=sys.stderr)
        return EXIT_FAILED
    return 0


def _last_cosigned(witnessing: Witnessing, origin: str) -> str:
    """What the witness last cosigned for ``origin``, for its first line."""
    from service.witness.state import describe

    return f"last cosigned {describe(witnessing.states[origin].latest)}"


def _poll(args: argparse.Namespace) -> int:
    """``thirteen witness --log``: poll the log's gRPC API."""
    from service import logging as service_logging
    from service.witness.polling import Log
    from service.witness.state import BadInput, describe

    try:
        log_key, witness, state, channel = _arguments(args)
    except BadInput as error:
        print(f"thirteen witness: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    service_logging.configure()  # JSON lines on stderr: stdout has the cosigned checkpoints
    log = Log(channel)
    print(
        f"thirteen witness: {witness.name} watching {args.log} (log {log_key.name}); "
        f"last accepted {describe(state.latest)}",
        file=sys.stderr,
        flush=True,
    )
    log_effective(args)
    try:
        while (status := _poll_once(args, log, log_key, witness, state)) is None:
            time.sleep(args.interval)
        return status
    finally:
        channel.close()


def _poll_once(
    args: argparse.Namespace, log: Log, log_key: Verifier, witness: Signer, state: State
) -> int | None:
    """One poll, said on stdout (a checkpoint cosigned) or stderr: the exit status, or None to
    poll again after ``--interval``."""
    import grpc

    from service.witness.polling import RETRIED, Alarm, AnotherLog, Unproven, poll

    try:
        outcome = poll(log, log_key, witness, state, args.alarm_after)
        if args.once or outcome.startswith("cosigned"):
            print(f"thirteen witness: {outcome}", flush=True)
        if args.once:
            return 0
    except Alarm as alarm:
        print(f"thirteen witness: ALARM: {alarm}; not cosigned", file=sys.stderr)
        return EXIT_ALARM
    except AnotherLog as other:
        print(f"thirteen witness: {other}", file=sys.stderr)
        return EXIT_FAILED
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
    return None
