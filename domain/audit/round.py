"""A round's audit from its first event to its last: the chain, the deal, every event in order,
and the result against the wallets and the views (``verify_round``)."""

from __future__ import annotations

from domain.audit.deal import Proofs, verify_deal
from domain.audit.events import verify_results, verify_reveal, verify_submission
from domain.audit.evidence import RoundEvidence
from domain.audit.report import CHAIN_RULE, Report
from domain.findings import Finding
from domain.recorded import Outcome
from domain.round import Round
from domain.tlog.chain import verify_chain


def verify_round(evidence: RoundEvidence) -> list[Finding]:
    """Every finding about the round, passing and failing, in the order of the rules."""
    report = Report()
    _verify_chain(evidence, report)
    events = list(evidence.events)
    if not events or not isinstance(events[0], Round.Dealt):
        report.check("R10.1", False, "", "the round's record does not start with its deal")
        return report.findings
    dealt: Round.Dealt = events[0]
    names = {id(e): r.name for e, r in zip(events, evidence.records, strict=False)}
    proofs = Proofs(dealt)
    verify_deal(dealt, evidence, proofs, report, names.get(id(dealt), ""))
    round_: Round | None = None
    outcome: Outcome | None = None  # scored once, at the reveal
    ended = False
    for version, event in enumerate(events, start=1):
        where = names.get(id(event), "")
        if event.originator_version != version:  # the chain finding says why
            report.check(
                CHAIN_RULE,
                False,
                "",
                "the round cannot be replayed past this event: its version is out of sequence",
                where,
            )
            return report.findings
        if round_ is not None:
            if ended:
                report.check("R10.4", False, "", "an event follows the end of the round", where)
            verify_submission(round_, event, where, report)
            if isinstance(event, Round.Revealed):
                outcome = verify_reveal(round_, event, where, report)
            if isinstance(event, Round.Revealed | Round.Abandoned):
                ended = True
                report.check(
                    "R12.6",
                    proofs.of(event.server_seed).seed_matches,
                    "the revealed server seed hashes to the commitment published before the deal",
                    "the revealed server seed does not hash to the commitment",
                    where,
                )
        round_ = event.mutate(round_)
    if round_ is not None:
        verify_results(round_, outcome, evidence, report)
    return report.findings


def _verify_chain(evidence: RoundEvidence, report: Report) -> None:
    broken = verify_chain(evidence.records)
    for finding in broken:
        report.check(CHAIN_RULE, False, "", finding.message, finding.event)
    if not broken:
        report.check(
            CHAIN_RULE,
            True,
            f"the hash chain of the round's {len(evidence.records)} events is intact",
            "",
        )
    if evidence.receipt and evidence.records:
        head = evidence.records[-1].chain
        report.check(
            CHAIN_RULE,
            head == evidence.receipt,
            "the chain head equals the receipt handed out at the reveal",
            "the chain head differs from the receipt handed out at the reveal: events "
            "were changed or removed since",
            evidence.records[-1].name,
        )
