"""The pure verifier: given a round's stored events and its table's ruleset, re-derive
everything and say, rule by rule, whether the record agrees (issue: audit and disputes).

It trusts nothing it is given except the rules: the deal is recomputed from the seeds, every
arrangement and declaration is checked against the dealt cards, the showdown and settlement are
scored again and compared with what was recorded, with the wallet movements and with the
results view, and the hash chain of the round's events is recomputed.
"""

from domain.audit.evidence import RoundEvidence
from domain.audit.round import verify_round

__all__ = ["RoundEvidence", "verify_round"]
