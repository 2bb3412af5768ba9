"""``thirteen restore``: a backup made by ``thirteen backup`` put back into a place that holds
no store, and what to do next about the keys and the transparency log (``service.tools.backup``)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from service.entrypoints.backup import postgres_procedure
from service.entrypoints.options import Commands, add_data, refuse


def register(commands: Commands) -> None:
    """``restore``."""
    parser = commands.add_parser(
        "restore", help="put a backup made by `thirteen backup` into a directory with no store"
    )
    parser.add_argument("source", type=Path, metavar="BACKUP", help="the backup's directory")
    add_data(parser)
    parser.add_argument(
        "--include-keys",
        action="store_true",
        help="also put back the key files the backup holds, into the data directory",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from service.tools.backup import BackupError, restore

    if os.environ.get("THIRTEEN_STORE", "sqlite") != "sqlite":
        return refuse("restore", postgres_procedure("restore"))
    data = Path(args.data)
    try:
        manifest = restore(args.source, data, args.include_keys)
    except BackupError as error:
        return refuse("restore", str(error))
    except OSError as error:
        return refuse("restore", f"cannot restore into {data}: {error}")
    checkpoint = manifest.get("checkpoint")
    print(f"restored {manifest['events']} events from {args.source} (made {manifest['made_at']})")
    if checkpoint is not None:
        origin = str(checkpoint["note"]).split("\n", 1)[0]
        print(
            f"its transparency log: {origin}, last checkpoint of {checkpoint['size']} events. If "
            "the log signed more since this backup, start a new log: `thirteen keys init DIR "
            "--name NEW`, then `thirteen serve --data "
            f"{data} --log-key DIR/log.key --new-log`, and give witnesses and auditors its public "
            "key (docs/operating/backup.md)"
        )
    if args.include_keys and "log.key" in manifest.get("keys", []):
        print(
            f"the log key is back in {data} without its record of what it signed since the "
            "backup (log.key.signed): serve it under its name only if it signed nothing after "
            "the backup's last checkpoint; else start a new log as above"
        )
    print(f"check it: thirteen audit --data {data} --all")
    return 0
