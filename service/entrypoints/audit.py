"""``thirteen audit``: rounds verified against the rules, from the store or offline from an
export (the audit itself is ``service.tools.audit``)."""

from __future__ import annotations

from service.entrypoints.options import Commands, add_data
from service.tools import audit


def register(commands: Commands) -> None:
    """``audit``."""
    auditor = commands.add_parser(
        "audit", help="verify rounds against the rules, from the store or from an export"
    )
    source = auditor.add_mutually_exclusive_group(required=True)
    source.add_argument("--round", help="the round to audit (with --data)")
    source.add_argument("--all", action="store_true", help="every round in the store")
    source.add_argument("--file", help="an ExportRound document: audit it offline")
    add_data(auditor)
    auditor.add_argument(
        "--receipt", help="the receipt Reveal returned, to check the chain still ends there"
    )
    auditor.add_argument("--json", action="store_true", help="machine-readable output")
    auditor.add_argument(
        "--log-public-key",
        metavar="KEY",
        help="with --file: the log's public key (a vkey or a file holding one): check the "
        "export's checkpoint signature and every event's inclusion proof",
    )
    auditor.add_argument(
        "--earlier-checkpoint",
        metavar="FILE",
        help="with --file or --all: a checkpoint (or an export holding one) kept from before: "
        "check the export's log (it must carry that consistency proof), or the store's, "
        "extends it",
    )
    auditor.add_argument(
        "--witness-key",
        action="append",
        default=[],
        metavar="KEY",
        help="with --file or --all, repeatable: a witness's public key (a vkey or a file holding "
        "one): the export's checkpoint, or the store's newest cosigned one, must carry its valid "
        "cosignature",
    )
    auditor.add_argument(
        "--witnesses-required",
        type=int,
        metavar="N",
        help="with --witness-key: how many of the given witnesses must have cosigned "
        "(default: all)",
    )
    auditor.add_argument(
        "--workers",
        type=int,
        default=1,
        help="processes for --all (default 1: on two cores more were slower, as the log is "
        "read in one pass first)",
    )
    auditor.set_defaults(run=audit.run)
