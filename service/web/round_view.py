"""A round's dispute report (``service.report.explain``) from its export document.

The export holds the round's events and the table's opening, each as stored; they are decoded
as the offline audit decodes them and folded as the service folds them, and the report is the
one ``thirteen explain`` gives: nothing is scored again here.
"""

from __future__ import annotations

from typing import Any

from service.evidence import Decoder, from_document
from service.report.dispute import Report
from service.report.explain import build, published_in, with_callers
from service.report.replay import fold
from service.web.backend import ServiceError


def report_of(document: str) -> Report:
    """The report of the round the export holds; a document that cannot be read as one is the
    service's fault (502), never a crash of the page."""
    try:
        evidence = from_document(document)
        decoder = Decoder()
        events = [decoder.event(record) for record in evidence.round_records]
        round_ = fold(events)
        opened = [decoder.event(evidence.table_opened)] if evidence.table_opened else []
        return with_callers(build(round_, _published(opened, round_)), events)
    except Exception as error:  # whatever the document holds, the page says what went wrong
        raise ServiceError(
            502, f"the service's export cannot be read as a round: {type(error).__name__}: {error}"
        ) from None


def _published(opened: list[Any], round_: Any) -> str:
    """Where the commitment was published (R12.1). An export holds the table's opening only,
    so a later round's commitment, published when the round before it ended, is not in it."""
    found = published_in(opened, round_)
    if found is not None:
        return found
    if round_.number > 1:
        return (
            f"not in the export: a table publishes round {round_.number}'s commitment when its "
            f"round {round_.number - 1} ends (R12.1), and the export holds only the table's "
            "opening; `thirteen explain` on the store shows when"
        )
    return "NOT FOUND among the table's published commitments"
