"""Witnesses' cosignatures of the log's checkpoints (``AddCosignature``): which lines of a
cosigned checkpoint are kept, beside the checkpoint they are for. Any replica keeps them; the
appender is not needed."""

from __future__ import annotations

from collections.abc import Sequence

from domain.tlog.checkpoint import Checkpoint, cosignature_time_problem, verify_cosignature
from domain.tlog.note import Note, NoteError, Verifier, parse
from service.clock import Clock
from service.errors import CosignatureTimeRefused, InvalidCosignature, UnknownWitness
from service.transparency.store import StoredCheckpoint, TreeStore

FIELD = "checkpoint_cosignature"


def add_cosignature(
    store: TreeStore, witnesses: Sequence[Verifier], clock: Clock, cosigned: str
) -> StoredCheckpoint:
    """Keep every witness's cosignature in ``cosigned`` (a checkpoint this log signed, as a
    signed note carrying the witness's lines), all or none: each line by a known witness
    must verify and carry a time near the log's clock
    (``domain.tlog.checkpoint.cosignature_time_problem``); per witness the newest is kept. The
    checkpoint it is for."""
    note, stored = _signed_by_this_log(store, cosigned)
    kept = _cosignatures(note, witnesses, int(clock.now().timestamp()))
    if not kept:
        known = ", ".join(w.vkey for w in witnesses) or "none (serve --witness-key)"
        raise UnknownWitness(
            f"no line of it is a cosignature by a witness key this server knows: {known}"
        )
    store.add_cosignatures(stored.size, kept)
    return stored


def _signed_by_this_log(store: TreeStore, cosigned: str) -> tuple[Note, StoredCheckpoint]:
    """``cosigned`` parsed, and the stored checkpoint whose text it carries."""
    try:
        note = parse(cosigned)
        checkpoint = Checkpoint.parse(note.text)
    except NoteError as error:
        raise InvalidCosignature(f"not a cosigned checkpoint: {error}", field=FIELD) from None
    stored = store.checkpoint(checkpoint.size)
    if stored is None or parse(stored.note).text != note.text:
        raise InvalidCosignature(
            f"the log signed no such checkpoint (of {checkpoint.size} events with that "
            "root): cosign a checkpoint from GetCheckpoint",
            field=FIELD,
        )
    return note, stored


def _cosignatures(
    note: Note, witnesses: Sequence[Verifier], now: int
) -> list[tuple[str, str, int]]:
    """(witness, line, time) of each line of ``note`` a known witness signed, checked."""
    kept: list[tuple[str, str, int]] = []
    for signature in note.signatures:
        witness = next((w for w in witnesses if signature.by(w)), None)
        if witness is None:
            continue
        try:
            stamp = verify_cosignature(note.text, signature, witness)
        except NoteError as error:
            raise InvalidCosignature(str(error), field=FIELD) from None
        problem = cosignature_time_problem(stamp, now)
        if problem is not None:
            raise CosignatureTimeRefused(
                f"the cosignature of {witness.name!r} is refused: {problem}", field=FIELD
            )
        kept.append((f"{witness.name}+{witness.key_id.hex()}", signature.line, stamp))
    return kept
