"""A round as the caller may see it, from the RPCs that show one (``GetRound``,
``GetRoundResult``, ``AuditRound``, ``ExportRound``, a round's proofs): permission before
existence (AIP-211), so that a caller who may not read rounds in progress cannot tell from the
answer whether a round exists."""

from __future__ import annotations

from domain import visibility
from domain.round import Round
from service import caller
from service.application import Thirteen, check_id
from service.errors import NotFound
from service.security.access import check_round_known


def known_round(app: Thirteen, round_id: str) -> Round:
    """The round, to a caller who may read it (``check_round_known``): a reader or an auditor
    is refused alike, PERMISSION_DENIED with one message, for a round in progress and for a
    round that does not exist; a dealer or an admin hears NOT_FOUND for the latter."""
    check_id(round_id, "round_id")
    try:
        round_ = app.round(round_id)
    except NotFound:
        check_round_known(caller.current(), round_id, None)
        raise
    check_round_known(caller.current(), round_id, visibility.is_public(round_))
    return round_
