"""``thirteen backup``: a consistent copy of a live SQLite store, without its key files unless
asked (``service.tools.backup``); ``thirteen restore`` puts one back (``restore``)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from service.entrypoints.options import Commands, add_data, refuse


def register(commands: Commands) -> None:
    """``backup``."""
    parser = commands.add_parser(
        "backup",
        help="copy a SQLite store (events and views) consistently, even while it is served; "
        "key files only with --include-keys",
    )
    add_data(parser)
    parser.add_argument("target", type=Path, metavar="DIR", help="a new (or empty) directory")
    parser.add_argument(
        "--include-keys",
        action="store_true",
        help="also copy the seed key and the log key files (whoever holds the backup can then "
        "predict every table's next deal and sign as the log)",
    )
    parser.add_argument(
        "--seed-key",
        type=Path,
        metavar="FILE",
        help="with --include-keys (default <data>/seed.key)",
    )
    parser.add_argument(
        "--log-key", type=Path, metavar="FILE", help="with --include-keys (default <data>/log.key)"
    )
    parser.set_defaults(run=run)


def not_sqlite(command: str) -> str | None:
    """Why ``backup``/``restore`` cannot copy the store ``THIRTEEN_STORE`` names, in one line:
    an unknown store is named as the server names it, PostgreSQL gets its own procedure."""
    from service.eventstore.storage import STORES  # not at the CLI's start: it loads the store

    store = os.environ.get("THIRTEEN_STORE", "sqlite")
    if store == "sqlite":
        return None
    if store not in STORES:
        return f"THIRTEEN_STORE must be one of {', '.join(STORES)}, got {store!r}"
    return postgres_procedure(command)


def postgres_procedure(command: str) -> str:
    """What to run instead of ``backup``/``restore`` on PostgreSQL, in one line."""
    schema = os.environ.get("POSTGRES_SCHEMA") or "public"
    return (
        f"thirteen {command} copies a SQLite store; a PostgreSQL store is copied with "
        f"`pg_dump --format=custom --schema={schema} --file=FILE DBNAME` and put back with "
        "`pg_restore --dbname=DBNAME FILE` (docs/operating/backup.md)"
    )


def run(args: argparse.Namespace) -> int:
    from service.tools.backup import BackupError, BackupFailed, backup

    refusal = not_sqlite("backup")
    if refusal is not None:
        return refuse("backup", refusal)
    data = Path(args.data)
    keys: list[Path] = []
    for named in (args.seed_key, args.log_key):
        if named is not None and not named.is_file():
            return refuse("backup", f"{named} is not a key file (named by --seed-key/--log-key)")
    if args.include_keys:
        log_key = args.log_key or data / "log.key"
        keys = [args.seed_key or data / "seed.key", log_key]
        # Not <log key>.signed: what the key signed goes on growing after the backup, and a
        # stale record put back would let the log sign a restored, older history again.
        keys.append(log_key.with_suffix(".pub"))
        print(
            "thirteen backup: --include-keys: the backup holds the seed key and the log key; "
            "whoever reads it can predict every table's next deal and sign as the log: keep it "
            "as secret as the keys",
            file=sys.stderr,
            flush=True,
        )
    elif args.seed_key is not None or args.log_key is not None:
        return refuse("backup", "--seed-key and --log-key name key files for --include-keys")
    try:
        backup(data, args.target, keys, print, log_key=keys[1] if keys else None)
    except BackupError as error:
        return refuse("backup", str(error))
    except BackupFailed as error:
        print(f"thirteen backup: {error}", file=sys.stderr)
        return 1
    except OSError as error:  # sqlite3.Error is not one: see below
        return refuse("backup", f"cannot copy into {args.target}: {error}")
    except Exception as error:  # sqlite3.Error: a locked or broken database
        print(f"thirteen backup: {error}", file=sys.stderr)
        return 1
    return 0
