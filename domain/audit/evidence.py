"""What an audit of a round is given (``RoundEvidence``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from domain.results import RoundResult
from domain.tlog.chain import StoredRecord


@dataclass(frozen=True)
class RoundEvidence:
    """Everything recorded about one round.

    ``events`` are the round stream's domain events in version order and ``records`` the same
    events as stored (for the hash chain). ``wallet_moves`` are the coins each player's wallet
    moved for this round (settlement, escape penalty and shares); ``view`` the results view's
    copy of the result; ``receipt`` a chain head handed out at the reveal, if one is known.
    """

    round_id: str
    records: Sequence[StoredRecord]
    events: Sequence[Any]
    table_ruleset: Mapping[str, Any]
    wallet_moves: Mapping[str, Sequence[tuple[str, int]]] = field(default_factory=dict)
    view: RoundResult | None = None
    receipt: str = ""
    table_ended: bool | None = None  # whether the table recorded this round's end, if known
