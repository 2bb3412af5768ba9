"""``thirteen keys`` (the transparency log's and the witnesses' key pairs) and what ``serve`` and
``audit`` read of them (``service.transparency.keys`` holds the file formats)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from domain.tlog.checkpoint import Checkpoint, key_conflict, open_checkpoint
from domain.tlog.note import COSIGNATURE_V1, ED25519, Signer, Verifier
from service.tools.terminal import EXIT_BAD_INPUT
from service.transparency.keys import (
    LOG_KEY_FILE,
    KeyFileError,
    init,
    load_or_create,
    read_signer,
    read_verifier,
)
from service.transparency.options import LogOptions
from service.transparency.remembered import beside

if TYPE_CHECKING:
    from service.application import Thirteen

BENCH_SWITCH = "THIRTEEN_TRANSPARENCY"
"""``THIRTEEN_TRANSPARENCY=off`` serves without the transparency log. Only for the benchmark
that measures what the log costs per command (``tests/bench/transparency.py``)."""


def log_options(
    args: argparse.Namespace, app: Thirteen, command: str = "serve"
) -> LogOptions | str:
    """``serve``'s transparency log from its flags (``--checkpoint-interval`` checked by the
    parser), or why they cannot be used: a key file that cannot be read, or a log key that did
    not sign the store's last checkpoint of its name (``stored_key_conflict``). A missing log
    key file is created, and said so on stderr (by ``thirteen COMMAND``: ``serve`` or
    ``worker``)."""
    if os.environ.get(BENCH_SWITCH) == "off":
        return LogOptions(enabled=False)
    path = args.log_key or Path(args.data) / LOG_KEY_FILE
    try:
        witnesses = tuple(read_verifier(str(w), COSIGNATURE_V1) for w in args.witness_key)
        signer, created = load_or_create(path)
    except KeyFileError as error:
        return str(error)
    conflict = stored_key_conflict(app, signer)
    if conflict is not None:
        return (
            f"the log key {path} cannot sign this store's log: {conflict}; a restored or "
            "rotated log key needs a new name (thirteen keys init DIR --name NEW, then "
            "--log-key DIR/log.key), and witnesses and auditors told of it (README, "
            "Transparency log)"
        )
    if created:
        print(
            f"thirteen {command}: created the log key file {path}; its public key, for audits and "
            f"witnesses: {signer.verifier.vkey} (keep the file secret, back it up, and give "
            "every replica the same file)",
            file=sys.stderr,
            flush=True,
        )
    if path.resolve().is_relative_to(Path(args.data).resolve()):
        structlog.get_logger("thirteen.transparency").warning(
            "log_key_in_data_directory",
            path=str(path),
            reason="whoever can rewrite the store can also remove what the key remembers "
            "signing (log.key.signed beside it): keep --log-key outside the data directory",
        )
    return LogOptions(signer, witnesses, args.checkpoint_interval, remembered=beside(path))


def stored_key_conflict(app: Thirteen, signer: Signer) -> str | None:
    """Why ``signer`` must not sign over the store's last checkpoint of its name (another key
    of that name signed it: ``domain.tlog.checkpoint.key_conflict``), even when the log was renamed
    since; None when it may, or the store holds no checkpoint of that name."""
    from service.transparency.store import TreeStore

    store = TreeStore(app)
    last = store.latest_of(signer.name) if store.exists() else None
    return None if last is None else key_conflict(last.note, signer.verifier)


def keys_init(args: argparse.Namespace) -> int:
    """A new key pair: the log's (``log.key``, ``log.pub``) or a witness's."""
    try:
        private, public, signer = init(args.dir, args.name, args.witness)
    except FileExistsError as error:
        print(
            f"thirteen keys init: {error.args[0] if error.args else args.dir} exists: a key "
            "file is never replaced",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    except KeyFileError as error:
        print(f"thirteen keys init: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    use = f"serve --witness-key {public}" if args.witness else f"serve --log-key {private}"
    print(f"wrote {private} (private, mode 0600) and {public} (public: {signer.verifier.vkey})")
    print(f"use: thirteen {use}")
    return 0


def keys_show(args: argparse.Namespace) -> int:
    """The public key (vkey) of a private key file (a log's or a witness's)."""
    try:
        print(read_signer(args.file, None).verifier.vkey)
    except KeyFileError as error:
        print(f"thirteen keys show: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0


def audit_keys(args: argparse.Namespace) -> tuple[Verifier | None, Checkpoint | None] | str:
    """``audit --file``'s log public key and earlier checkpoint (verified), or why not."""
    key = earlier = None
    if args.log_public_key is not None:
        try:
            key = read_verifier(args.log_public_key, ED25519)
        except KeyFileError as error:
            return str(error)
    if args.earlier_checkpoint is not None:
        if key is None:
            return "--earlier-checkpoint needs --log-public-key, to check its signature"
        try:
            text = Path(args.earlier_checkpoint).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            return f"cannot read {args.earlier_checkpoint}: {error}"
        try:
            if text.lstrip().startswith("{"):  # an earlier export: its checkpoint
                text = str(json.loads(text)["log"]["checkpoint"])
            earlier = open_checkpoint(text, key)
        except (ValueError, KeyError, TypeError) as error:
            return f"{args.earlier_checkpoint} is not a checkpoint signed by the log key: {error}"
    return key, earlier
