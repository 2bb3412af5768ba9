"""``thirteen audit``: rounds verified against the rules, from the store or offline from an
export (with its events' place in the signed transparency log: ``domain.tlog.evidence``), and
``--all`` judged on several processes. Reading the evidence is
``service.evidence``'s; the judging is ``domain.audit``'s."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from domain.errors import RuleError
from service.tools.terminal import EXIT_BAD_INPUT, ProgressBar, read_store

if TYPE_CHECKING:  # the store's modules load only when a command reads a store
    from domain.findings import Finding
    from domain.tlog.checkpoint import Checkpoint
    from domain.tlog.note import Verifier
    from service.evidence import Evidence, StoreReader
    from service.transparency.audits import StoreLogAudit

Reports = list[tuple[str, list[Any]]]  # (round id, or what else was judged; its findings)


def _finding_line(finding: Any) -> str:
    mark = "ok  " if finding.ok else "FAIL"
    where = f"  [{finding.event}]" if finding.event else ""
    return f"  {mark} {finding.rule:<6} {finding.message}{where}"


def run(args: argparse.Namespace) -> int:
    """Verify rounds against the rules: from the store, or offline from an export."""
    from service.tools.log_keys import audit_keys

    if args.receipt and args.all:
        return _refuse("--receipt belongs to one round (--round or --file), not --all")
    if args.receipt and not re.fullmatch(r"[0-9a-f]{64}", args.receipt):
        # A mistyped receipt is bad input, not a chain that was tampered with.
        return _refuse(
            f"--receipt must be the receipt Reveal returned (64 hex digits), got "
            f"{args.receipt[:80]!r}"
        )
    if args.earlier_checkpoint and args.round:
        return _refuse("--earlier-checkpoint checks a whole log: give --all (or --file)")
    keys = audit_keys(args)
    if isinstance(keys, str):
        return _refuse(keys)
    witnesses = _witness_keys(args)
    if isinstance(witnesses, str):
        return _refuse(witnesses)
    if args.file:
        reports = _from_file(args, keys, witnesses)
    else:
        reports = _from_store(args, *keys, witnesses=witnesses)
    if isinstance(reports, int):
        return reports
    return _show(args, reports)


def _refuse(message: str) -> int:
    print(f"thirteen audit: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _from_file(
    args: argparse.Namespace,
    keys: tuple[Verifier | None, Checkpoint | None],
    witnesses: tuple[list[Verifier], int],
) -> Reports | int:
    """The export's round judged, with its events' place in the log and the witnesses'
    cosignatures (``domain.tlog.evidence``)."""
    from domain.tlog.evidence import check_cosignatures, check_log
    from service.evidence import Decoder, audit, from_document

    try:
        evidence: Evidence = from_document(Path(args.file).read_text())
    except OSError as error:
        return _refuse(f"cannot read {args.file}: {error.strerror}")
    except (ValueError, KeyError, TypeError) as error:
        return _refuse(f"{args.file} is not a round export: {error}")
    evidence.receipt = args.receipt or evidence.receipt
    logged = check_log(evidence.records(), evidence.log, *keys)
    logged += check_cosignatures(evidence.log, *witnesses)
    return [(evidence.round_id, audit(evidence, Decoder()) + logged)]


def _from_store(
    args: argparse.Namespace,
    key: Verifier | None,
    earlier: Checkpoint | None = None,
    *,
    witnesses: tuple[list[Verifier], int] = ([], 0),
) -> Reports | int:
    """``--round`` or every round of the store judged, each with its events against the log
    (and with ``--all``, the log against an ``earlier`` checkpoint the auditor kept)."""
    from service.evidence import Decoder, StoreReader, audit
    from service.rpc.audit import result_reader
    from service.transparency.audits import StoreLogAudit

    app = read_store("audit", args.data)
    if isinstance(app, int):
        return app
    views, _ = app.database.views()
    views_reader = result_reader(views)

    def result_of(round_id: str) -> Any:
        try:
            return views_reader(round_id)
        except Exception:  # no views yet: audit the events alone
            return None

    reader = StoreReader(app, result_of)
    in_log = StoreLogAudit(app, key)  # the events against the log (issue 12)
    try:
        if args.all:
            return _every_round(args, reader, in_log, earlier, witnesses)
        try:
            evidence = reader.evidence(args.round)
        except RuleError as error:
            return _refuse(error.message)
        evidence.receipt = args.receipt or ""
        return [(args.round, audit(evidence, Decoder()) + in_log.round(evidence))]
    finally:
        views.close()
        app.close()


def _every_round(
    args: argparse.Namespace,
    reader: StoreReader,
    in_log: StoreLogAudit,
    earlier: Checkpoint | None = None,
    witnesses: tuple[list[Verifier], int] = ([], 0),
) -> Reports:
    """Every round (on ``--workers`` processes), what is outside rounds, and the log's tree
    (against ``earlier`` too, a checkpoint the auditor kept)."""
    from domain.findings import passed

    reports: Reports = []
    bar = None if args.json else ProgressBar("reading the log")
    evidences = []
    for found, extra in reader.every_round(bar, in_log.take):
        if found is None:
            if extra:
                reports.append(("(streams outside rounds)", extra))
            continue
        evidences.append(found)
    reports += audit_many(evidences, args.workers)
    tree = in_log.tree()  # every event's leaf against the latest checkpoint
    if earlier is not None:
        tree.append(in_log.extends(earlier))
    if witnesses[0]:
        tree += in_log.witnessed(*witnesses)
    asked = earlier is not None or bool(witnesses[0])
    if not passed(tree) or asked:  # listed when it fails, or was asked for
        reports.append(("(transparency log)", tree))
    return reports


def _show(args: argparse.Namespace, reports: Reports) -> int:
    """The verdicts as JSON or for people: every check of one round, only the failed ones of
    many; exit status 1 when a round fails."""
    from domain.findings import passed

    failed = [(r, f) for r, f in reports if not passed(f)]
    if args.json:
        print(
            json.dumps(
                {
                    "ok": not failed,
                    "rounds": [
                        {"round_id": r, "ok": passed(f), "findings": [vars(x) for x in f]}
                        for r, f in reports
                    ],
                },
                ensure_ascii=False,
            )
        )
        return 1 if failed else 0
    for round_id, findings in reports:
        shown = findings if (args.round or args.file) else [x for x in findings if not x.ok]
        if shown or args.round or args.file:
            verdict = "passes" if passed(findings) else "FAILS"
            print(f"round {round_id} {verdict}")
            for finding in shown:
                print(_finding_line(finding))
    checks = sum(len(f) for _, f in reports)
    print(
        f"audited {len(reports)} round(s), {checks} checks: "
        f"{'all passed' if not failed else f'{len(failed)} round(s) FAILED'}"
    )
    return 1 if failed else 0


def _witness_keys(args: argparse.Namespace) -> tuple[list[Verifier], int] | str:
    """The witness keys of ``audit --file`` or ``--all`` (``--witness-key``, each a vkey or a
    file) and how many must have cosigned (``--witnesses-required``, default all), or why they
    cannot be used."""
    from domain.tlog.note import COSIGNATURE_V1
    from service.transparency.keys import KeyFileError, read_verifier

    given = args.witness_key or []
    if (given or args.witnesses_required is not None) and args.round:
        return "--witness-key and --witnesses-required check a whole log: give --all (or --file)"
    if args.witnesses_required is not None and not given:
        return "--witnesses-required needs --witness-key (the witnesses' public keys)"
    witnesses: list[Verifier] = []
    for value in given:
        try:
            witness = read_verifier(value, COSIGNATURE_V1)
        except KeyFileError as error:
            return f"--witness-key: {error}"
        if witness not in witnesses:
            witnesses.append(witness)
    required = len(witnesses) if args.witnesses_required is None else args.witnesses_required
    if given and not 1 <= required <= len(witnesses):
        return (
            f"--witnesses-required {required}: give a number from 1 to {len(witnesses)} "
            "(the distinct --witness-key keys)"
        )
    return witnesses, required


_SHARED: list[Evidence] = []  # handed to forked workers without pickling


def _audit_slice(bounds: tuple[int, int]) -> list[tuple[str, list[Finding]]]:
    from service.evidence import Decoder, audit

    decoder = Decoder()
    return [(e.round_id, audit(e, decoder)) for e in _SHARED[bounds[0] : bounds[1]]]


def audit_many(evidences: list[Evidence], workers: int = 1) -> list[tuple[str, list[Finding]]]:
    """Audit rounds in order, on ``workers`` processes when there are enough of them: each
    round is judged on its own evidence, so the work splits cleanly."""
    if workers <= 1 or len(evidences) < 100:
        global _SHARED
        _SHARED = evidences
        return _audit_slice((0, len(evidences)))
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    _SHARED = evidences
    step = max(1, len(evidences) // (workers * 4))
    bounds = [(i, min(i + step, len(evidences))) for i in range(0, len(evidences), step)]
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            return [r for part in pool.map(_audit_slice, bounds) for r in part]
    finally:
        _SHARED = []
