"""The transparency log's flags, which ``serve`` and ``worker`` share (whichever process signs
checkpoints uses them): the log key, a new log, the witnesses' keys and addresses, how often a
checkpoint is signed."""

from __future__ import annotations

import argparse
from pathlib import Path

from service.entrypoints.options import seconds

CHECKPOINT_INTERVALS = (0.1, 60.0)
"""``--checkpoint-interval``, in seconds: from a tenth of a second (each checkpoint is a
signature and a row) to a minute (an export waits for a checkpoint covering its round)."""


def _witness_url(text: str) -> str:
    from service.transparency.submitting import BadWitnessUrl, check_url

    try:
        return check_url(text)
    except BadWitnessUrl as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def register_transparency(serve_parser: argparse.ArgumentParser) -> None:
    """The transparency log's flags (``serve`` and ``worker``)."""
    transparency = serve_parser.add_argument_group(
        "transparency log", "signed checkpoints (issue 12)"
    )
    transparency.add_argument(
        "--log-key",
        type=Path,
        metavar="FILE",
        help="the key that signs the log's checkpoints (default <data>/log.key, with log.pub "
        "beside it, created on the first start with SQLite; on PostgreSQL, or once the store "
        "holds checkpoints, it must exist: `thirteen keys init DIR`; every replica needs the "
        "same file)",
    )
    transparency.add_argument(
        "--new-log",
        action="store_true",
        help="let a log key whose name the store's log never had start a new log over it (a "
        "rotated key, or a restored store: docs/operating/keys.md); without it a key of "
        "another name than the log's is refused",
    )
    transparency.add_argument(
        "--witness-key",
        action="append",
        default=[],
        metavar="KEY",
        help="a witness's public key (a vkey or a file holding one) whose cosignatures "
        "AddCosignature keeps; repeatable",
    )
    transparency.add_argument(
        "--witness-url",
        action="append",
        default=[],
        type=_witness_url,
        metavar="URL",
        help="a C2SP tlog-witness witness (http(s)://HOST:PORT[/PREFIX]) each new checkpoint is "
        "submitted to (POST URL/add-checkpoint), its cosignatures kept when by a --witness-key; "
        "repeatable",
    )
    transparency.add_argument(
        "--checkpoint-interval",
        type=seconds(*CHECKPOINT_INTERVALS, "checkpoint interval"),
        default=2.0,
        metavar="SECONDS",
        help="sign a checkpoint at most this often while the log grows (default 2; from 0.1 to 60)",
    )
