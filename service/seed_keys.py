"""The seed keys (``domain.fairness.seeds``) from a file outside the event store: ``--seed-key
FILE``.

The file holds one key per line, 64 hex digits (32 bytes); ``#`` starts a comment. The first key
is the current one: every new commitment is derived under it. The others are kept so that the
commitments already published under them can still be dealt and revealed: to rotate, put a new
key on the first line and keep the old lines until every table has committed under the new
one (each table does at the end of its round in progress). A missing file is created with one
random key, readable by its owner only. Every replica of one store needs the same file.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import structlog

from domain.fairness.seeds import KEY_BYTES, KeyRing
from service.small_files import create_private, read_text, warn_if_open

log = structlog.get_logger("thirteen.seed_keys")

MAX_FILE_BYTES = 64 * 1024  # a thousand keys and their comments
SEED_KEY_FILE = "seed.key"
"""The file's name under the data directory when ``--seed-key`` is not given."""

_HEADER = """\
# thirteen seed key file. Every server seed is derived from the first key (docs/rules.md R12.1).
# Keep it secret and back it up: without it, rounds committed under it cannot be dealt.
# Every replica of one store needs this same file. To rotate, add a new key (64 hex digits)
# as the first line and keep the old lines until every table has moved on.
"""


class SeedKeyError(ValueError):
    """The seed key file cannot be used; the one-line message says why (never a key)."""


def parse(text: str, where: str) -> KeyRing:
    """The keys of a key file's ``text``; ``where`` names it in errors, which quote no key."""
    keys = []
    for number, line in enumerate(text.splitlines(), start=1):
        word = line.split("#", 1)[0].strip()
        if not word:
            continue
        try:
            key = bytes.fromhex(word)
        except ValueError:
            raise SeedKeyError(
                f"seed key file {where} line {number}: not hex; each key is "
                f"{2 * KEY_BYTES} hex digits"
            ) from None
        if len(key) != KEY_BYTES:
            raise SeedKeyError(
                f"seed key file {where} line {number}: {len(key)} bytes; each key is "
                f"{KEY_BYTES} bytes ({2 * KEY_BYTES} hex digits)"
            )
        keys.append(key)
    if not keys:
        raise SeedKeyError(f"seed key file {where} holds no key")
    return KeyRing.of(keys)


def read(path: Path) -> KeyRing:
    """The keys in ``path``; warns when others than its owner may read it."""
    what = "seed key file"
    hex_only = "is not text: each key is hex digits"
    text = read_text(
        path, what, SeedKeyError, encoding="ascii", not_text=hex_only, limit=MAX_FILE_BYTES
    )
    ring = parse(text, str(path))
    warn_if_open(path, "seed_key_file_open_to_others")
    log.info("seed_keys_loaded", path=str(path), current=ring.current, keys=len(ring.ids))
    return ring


def create(path: Path) -> KeyRing:
    """A new key file at ``path`` with one random key, mode 0600 (its directory created).
    ``FileExistsError`` when another process created it first. The file appears whole (written
    beside it, then linked in), so a replica starting at the same moment never reads it half
    written."""
    key = secrets.token_bytes(KEY_BYTES)
    try:
        create_private(path, _HEADER + key.hex() + "\n")
    except FileExistsError:
        raise
    except OSError as error:
        raise SeedKeyError(f"cannot create seed key file {path}: {error.strerror}") from None
    ring = KeyRing.of([key])
    log.info("seed_key_created", path=str(path), key_id=ring.current)
    return ring


def load_or_create(path: Path) -> KeyRing:
    """The keys in ``path``, creating the file with a new key when there is none."""
    if not path.exists() and not path.is_symlink():
        try:
            return create(path)
        except FileExistsError:  # another replica created it meanwhile
            pass
    return read(path)
