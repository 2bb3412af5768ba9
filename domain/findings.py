"""What an audit says: one finding per check, naming the rule it enforces (a rule ID such as
``R6``, or ``CHAIN`` and ``LOG`` for the tamper evidence), whether the record passed, and a plain
sentence. The round's audit (``domain.audit``) and the log's (``domain.tlog.evidence``) both
speak it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    """One check: the rule it enforces, whether the record passed, and a plain sentence."""

    rule: str
    ok: bool
    message: str
    event: str = ""


def passed(findings: Sequence[Finding]) -> bool:
    """Whether every check passed."""
    return all(f.ok for f in findings)
