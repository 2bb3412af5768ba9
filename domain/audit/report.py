"""The audit's findings as it goes: one ``Finding`` per check, passing or failing."""

from __future__ import annotations

from domain.findings import Finding

CHAIN_RULE = "CHAIN"


class Report:
    """The findings so far, in the order the checks ran."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []

    def check(self, rule: str, ok: bool, good: str, bad: str, event: str = "") -> bool:
        self.findings.append(Finding(rule, ok, good if ok else bad, "" if ok else event))
        return ok
