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
    witness.add_argument(
        "--log", type=host_port, required=True, metavar="HOST:PORT", help="the log's address"
    )
    witness.add_argument(
        "--log-public-key", required=True, metavar="KEY", help="the log's vkey or a file holding it"
    )
    witness.add_argument(
        "--key", type=Path, required=True, metavar="FILE", help="the witness's private key file"
    )
    witness.add_argument(
        "--state",
        type=Path,
        required=True,
        metavar="DIR",
        help="where the last accepted checkpoint is kept (a restart continues from it)",
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


def _arguments(args: argparse.Namespace) -> tuple[Verifier, Signer, State, grpc.Channel]:
    import grpc

    from domain.tlog.note import COSIGNATURE_V1, ED25519
    from service.security.tls import TlsConfigError
    from service.transparency.keys import KeyFileError, read_signer, read_verifier
    from service.witness.state import BadInput, State

    if not 0 < args.interval <= 86400:
        raise BadInput("--interval must be a positive number of seconds, at most a day")
    if not 1 <= args.alarm_after <= 1000:
        raise BadInput("--alarm-after must be a number of polls from 1 to 1000")
    try:
        log_key = read_verifier(args.log_public_key, ED25519)
        witness = read_signer(args.key, COSIGNATURE_V1)
    except KeyFileError as error:
        raise BadInput(str(error)) from None
    try:
        credentials = client_credentials(args, "the server's", key_flag="--cert-key")
    except TlsConfigError as error:
        raise BadInput(str(error)) from None
    state = State(args.state, log_key)
    if credentials is None:
        return log_key, witness, state, grpc.insecure_channel(args.log)
    return log_key, witness, state, grpc.secure_channel(args.log, credentials)


def run(args: argparse.Namespace) -> int:
    """``thirteen witness``."""
    import grpc

    from service import logging as service_logging
    from service.witness.polling import RETRIED, Alarm, AnotherLog, Log, Unproven, poll
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
            time.sleep(args.interval)
    finally:
        channel.close()
