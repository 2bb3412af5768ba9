"""``thirteen restore``: a backup made by ``thirteen backup`` put back into a place that holds
no store, and what to do next about the keys and the transparency log (``service.tools.backup``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from service.entrypoints.backup import not_sqlite
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
    from service.tools.backup import BackupError, restore, restored_log_key

    refusal = not_sqlite("restore")
    if refusal is not None:
        return refuse("restore", refusal)
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
    log_key = restored_log_key(manifest) if args.include_keys else None
    if log_key is not None:
        print(
            f"the log key is back in {data / log_key} without its record of what it signed "
            f"since the backup: the log signs nothing under its name while {data / log_key}"
            ".restored is there; remove that file only if the key signed nothing after the "
            "backup's last checkpoint, else start a new log as above"
        )
    print(f"check it: thirteen audit --data {data} --all")
    return 0
