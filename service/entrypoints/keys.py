"""``thirteen keys`` (the transparency log's and the witnesses' key pairs), ``seed-key`` (the
keys server seeds are derived from) and ``dev-certs`` (certificates for mutual TLS on this
machine): the files a server is given at start."""

from __future__ import annotations

import argparse
from pathlib import Path

from service.entrypoints.options import Commands, Parser, refuse


def register(commands: Commands) -> None:
    """``dev-certs``, ``keys init``, ``keys show`` and ``seed-key init``."""
    certs = commands.add_parser(
        "dev-certs",
        help="write a development CA, server and per-role client certificates and a policy",
    )
    certs.add_argument("dir", type=Path, metavar="DIR", help="where to write them")
    certs.add_argument("--force", action="store_true", help="overwrite files already there")
    certs.set_defaults(run=dev_certs)
    keys = commands.add_parser("keys", help="the transparency log's and witnesses' key pairs")
    key_tasks = keys.add_subparsers(dest="task", required=True, parser_class=Parser)
    keys_init = key_tasks.add_parser(
        "init", help="write log.key (mode 0600) and log.pub, or a witness's pair"
    )
    keys_init.add_argument("dir", type=Path, metavar="DIR", help="where to write them")
    keys_init.add_argument("--name", help="the key's name: the log's origin (default random)")
    keys_init.add_argument(
        "--witness", action="store_true", help="a witness's cosigning key (C2SP tlog-cosignature)"
    )
    keys_init.set_defaults(run=keys_init_command)
    keys_show = key_tasks.add_parser("show", help="print the public key of a private key file")
    keys_show.add_argument("file", type=Path, metavar="FILE")
    keys_show.set_defaults(run=keys_show_command)
    seed_key = commands.add_parser("seed-key", help="the seed key file (`serve --seed-key`)")
    seed_key_tasks = seed_key.add_subparsers(dest="task", required=True, parser_class=Parser)
    seed_key_init = seed_key_tasks.add_parser(
        "init", help="write a new seed key file with one random key (mode 0600)"
    )
    seed_key_init.add_argument("file", type=Path, metavar="FILE")
    seed_key_init.set_defaults(run=seed_key_create)


def keys_init_command(args: argparse.Namespace) -> int:
    from service.tools.log_keys import keys_init

    return keys_init(args)


def keys_show_command(args: argparse.Namespace) -> int:
    from service.tools.log_keys import keys_show

    return keys_show(args)


def dev_certs(args: argparse.Namespace) -> int:
    """Development certificates and a policy for mutual TLS on this machine."""
    from service.tools.dev_certs import write

    return write(args.dir, force=args.force)


def seed_key_create(args: argparse.Namespace) -> int:
    """A new seed key file, never over an existing one."""
    from service import logging as service_logging
    from service.seed_keys import SeedKeyError, create

    # Logs to stderr, warnings only: stdout has the one line below (the key's creation is logged
    # as seed_key_created where a server creates it).
    service_logging.configure("warning")
    exists = f"{args.file} exists: a seed key file is never replaced"
    if args.file.exists() or args.file.is_symlink():
        return refuse("seed-key init", exists)
    try:
        ring = create(args.file)
    except FileExistsError:
        return refuse("seed-key init", exists)
    except SeedKeyError as error:
        return refuse("seed-key init", str(error))
    print(
        f"wrote {args.file} (key id {ring.current}); give every server of the store this file "
        "with --seed-key, keep it secret and back it up"
    )
    return 0
