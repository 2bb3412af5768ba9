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
    write_public,
)
from service.transparency.options import LogOptions
from service.transparency.remembered import beside

if TYPE_CHECKING:
    from service.application import Thirteen

BENCH_SWITCH = "THIRTEEN_TRANSPARENCY"
"""``THIRTEEN_TRANSPARENCY=off`` serves without the transparency log. Only for the benchmark
that measures what the log costs per command (``tests/bench/transparency.py``)."""


def log_key_unreadable(args: argparse.Namespace) -> str | None:
    """Why the log key file ``serve`` was given (or finds in its data directory) cannot be
    read, or None (no file yet, or the log is off): checked before the store or the seed key
    is made, so that a refused start writes nothing."""
    if os.environ.get(BENCH_SWITCH) == "off":
        return None
    path = args.log_key or Path(args.data) / LOG_KEY_FILE
    if not path.exists():
        return None
    try:
        read_signer(path)
    except KeyFileError as error:
        return str(error)
    return None


def log_options(
    args: argparse.Namespace, app: Thirteen, command: str = "serve"
) -> LogOptions | str:
    """``serve``'s transparency log from its flags (``--checkpoint-interval`` checked by the
    parser), or why they cannot be used (``log_key_refusal``). A missing log key file is created
    only for a new log on SQLite, with its public key beside it (``<log key>.pub``), and said so
    on stderr (by ``thirteen COMMAND``: ``serve`` or ``worker``)."""
    if os.environ.get(BENCH_SWITCH) == "off":
        return LogOptions(enabled=False)
    path = args.log_key or Path(args.data) / LOG_KEY_FILE
    new_log = bool(getattr(args, "new_log", False))
    urls = tuple(getattr(args, "witness_url", ()))
    if urls and not args.witness_key:
        return (
            "--witness-url needs --witness-key: the cosignatures a witness answers are kept "
            "only when made by a witness key this log is given"
        )
    try:
        witnesses = tuple(read_verifier(str(w), COSIGNATURE_V1) for w in args.witness_key)
        if not path.exists() and not path.is_symlink():
            missing = missing_key_refusal(app, path)
            if missing is not None:
                return missing
        signer, created = load_or_create(path)
    except KeyFileError as error:
        return str(error)
    refusal = log_key_refusal(app, signer, path, new_log=new_log)
    if refusal is not None:
        return refusal
    if created:
        public = write_public(path, signer)
        print(
            f"thirteen {command}: created the log key file {path} and its public key {public} "
            f"({signer.verifier.vkey}), for audits and witnesses; keep the key secret, back it "
            "up, and give every replica the same file",
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
    return LogOptions(
        signer,
        witnesses,
        args.checkpoint_interval,
        remembered=beside(path),
        new_log=new_log,
        witness_urls=urls,
    )


NEW_LOG = (
    "to start a new log on purpose: `thirteen keys init DIR --name NEW`, then serve every "
    "replica with --log-key DIR/log.key --new-log (docs/operating/keys.md)"
)


def missing_key_refusal(app: Thirteen, path: Path) -> str | None:
    """Why the log key file ``path``, missing, must not be made now (issue 23): on PostgreSQL
    (a replica's own new key would sign the log under another name), or when the store holds
    checkpoints already (the key that signed them is the log's); None for a new SQLite log."""
    from service.transparency.store import TreeStore

    store = TreeStore(app)
    last = store.latest_checkpoint() if store.exists() else None
    if last is not None:
        return (
            f"log key file {path} does not exist, but the store already holds checkpoints of "
            f"log {origin_of(last.note)} ({last.size} events): give the key file that signed "
            f"them (--log-key FILE), or, {NEW_LOG}"
        )
    if app.database.kind == "postgres":
        folder = path.parent if path.name == LOG_KEY_FILE else Path("DIR")
        return (
            f"log key file {path} does not exist: create it once with `thirteen keys init "
            f"{folder}` and give every server of the store that file (--log-key "
            f"{folder / LOG_KEY_FILE})"
        )
    return None


def log_key_refusal(app: Thirteen, signer: Signer, path: Path, *, new_log: bool) -> str | None:
    """Why ``signer`` (from ``path``) must not sign this store's log: another key of its name
    signed the store's last checkpoint of that name (``stored_key_conflict``); its name is not
    the log's (the store's last checkpoint's origin) and ``--new-log`` was not given; or, with
    it, its name is one the log had before (a name once left is not taken up again: witnesses
    would see two logs alternate). None when it may."""
    from service.transparency.store import TreeStore

    conflict = stored_key_conflict(app, signer)
    if conflict is not None:
        return (
            f"the log key {path} cannot sign this store's log: {conflict}; a restored or "
            "rotated log key needs a new name (thirteen keys init DIR --name NEW, then "
            "--log-key DIR/log.key --new-log), and witnesses and auditors told of it "
            "(docs/operating/keys.md)"
        )
    store = TreeStore(app)
    last = store.latest_checkpoint() if store.exists() else None
    if last is None or origin_of(last.note) == signer.name:
        return None
    if not new_log:
        return (
            f"the log key {path} is named {signer.name}, but this store's log is "
            f"{origin_of(last.note)} (last checkpoint: {last.size} events): give every replica "
            f"that log's key file, or, {NEW_LOG}"
        )
    if store.latest_of(signer.name) is not None:
        return (
            f"the log key {path} is named {signer.name}, a log this store left for "
            f"{origin_of(last.note)}: a new log needs a name never used (thirteen keys init DIR "
            "--name NEW)"
        )
    return None


def origin_of(note: str) -> str:
    """A checkpoint's origin: its note's first line."""
    return note.split("\n", 1)[0]


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
        # Raised by init with the key file's path, or by mkdir (errno, text, path) when DIR
        # is a file.
        if error.filename is not None:
            said = f"{error.filename} exists and is not a directory"
        else:
            said = (
                f"{error.args[0] if error.args else args.dir} exists: a key file is never replaced"
            )
        print(f"thirteen keys init: {said}", file=sys.stderr)
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
