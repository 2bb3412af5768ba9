"""The last checkpoint a log key signed, kept beside the key (``<log key>.signed``), where a
rewrite of the store does not reach it (issue 22): before signing, the log checks that the tree
it is about to sign extends that checkpoint as well as the store's own last one, so a store
whose events were edited, chains recomputed and the log's tables emptied is not given a fresh
signature of its new history. The file holds the signed note, so it is verified with the key
when read; a file that does not verify is not trusted (and said so). Keep the log key, and so
this file, outside the data directory."""

from __future__ import annotations

from pathlib import Path

import structlog

from domain.tlog.checkpoint import Checkpoint, open_checkpoint
from domain.tlog.note import NoteError, Verifier
from service.small_files import read_text, replace_private

log = structlog.get_logger("thirteen.transparency")

SUFFIX = ".signed"
RESTORED = ".restored"
"""``<log key>.restored``, written by ``thirteen restore --include-keys`` beside the log key it
puts back: the key comes without its ``.signed`` record (what it signed after the backup is not
known), so the log signs nothing under its name while this file is there (``log_key_conflict``):
a new log, or the operator removes the file, knowing the key signed nothing after the backup."""


def beside(key_file: Path) -> Path:
    """Where the last checkpoint signed by the key in ``key_file`` is kept."""
    return key_file.with_name(key_file.name + SUFFIX)


def restored_beside(key_file: Path) -> Path:
    """Where ``thirteen restore`` marks the key in ``key_file`` as put back from a backup."""
    return key_file.with_name(key_file.name + RESTORED)


class Remembered:
    """The checkpoint in ``path``, signed by ``verifier``'s key (read once, then kept)."""

    def __init__(self, path: Path, verifier: Verifier) -> None:
        self.path = path
        self.verifier = verifier
        self._read = False
        self._kept: Checkpoint | None = None
        self._warned = False

    def last(self) -> Checkpoint | None:
        """The checkpoint last signed with this key, as far as this file knows."""
        if not self._read:
            self._read = True
            self._kept = self._load()
        return self._kept

    def restored(self) -> Path | None:
        """The mark of a key put back from a backup (``RESTORED``) beside the key, if there."""
        mark = self.path.with_name(self.path.name.removesuffix(SUFFIX) + RESTORED)
        return mark if mark.exists() or mark.is_symlink() else None

    def missing(self, stored_size: int) -> None:
        """Say once that the store holds checkpoints but nothing beside the key remembers them
        (the file was removed, or never written: a first start with this file's place): the
        log then trusts the store's own checkpoints only, until it signs again."""
        if self._warned:
            return
        self._warned = True
        log.warning(
            "signed_checkpoint_missing",
            path=str(self.path),
            stored_checkpoint_size=stored_size,
            reason="the store holds checkpoints but nothing beside the log key remembers what it "
            "signed: a rewritten store would not be noticed here (keep the key's directory "
            "where the store's writers cannot reach)",
        )

    def keep(self, note: str, checkpoint: Checkpoint) -> None:
        """Remember ``checkpoint`` (signed: ``note``), unless a larger one is kept already."""
        kept = self.last()
        if kept is not None and kept.origin == checkpoint.origin and kept.size >= checkpoint.size:
            return
        try:
            replace_private(self.path, note)
        except OSError as error:  # the log goes on; the next start checks less far back
            log.warning("signed_checkpoint_not_kept", path=str(self.path), cause=error.strerror)
            return
        self._kept = checkpoint

    def _load(self) -> Checkpoint | None:
        if not self.path.exists():
            return None
        try:
            text = read_text(self.path, "the kept checkpoint", OSError)
            return open_checkpoint(text, self.verifier)
        except (OSError, NoteError, ValueError) as error:
            log.warning(
                "signed_checkpoint_unreadable",
                path=str(self.path),
                cause=str(error),
                reason="not trusted: the log checks the store's own checkpoints only",
            )
            return None
