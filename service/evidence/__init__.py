"""The evidence about a round: gathered from the store (``store``), exported as a canonical
document and read back (``document``), and judged (``checks``; the judging is
``domain.audit``'s). The names below are what the rest of the service uses."""

from service.evidence.checks import Decoder, audit, evidence_to_check
from service.evidence.document import FORMAT, FORMATS, Evidence, from_document, record_of
from service.evidence.store import StoreReader

__all__ = [
    "FORMAT",
    "FORMATS",
    "Decoder",
    "Evidence",
    "StoreReader",
    "audit",
    "evidence_to_check",
    "from_document",
    "record_of",
]
