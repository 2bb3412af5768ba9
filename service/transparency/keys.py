"""The log's signing key and the witnesses' public keys, in files outside the database.

- The log key (``thirteen serve --log-key FILE``, default ``<data>/log.key``): one private key
  line ``PRIVATE+KEY+<name>+<key id>+<base64>`` (the form of golang.org/x/mod/sumdb/note), Ed25519,
  readable by its owner only; ``#`` at a line's start or after a space starts a comment. Its
  name is the log's origin. A missing file is created with a new key (``load_or_create``), as
  the seed key is.
- Public keys: a vkey, ``<name>+<key id>+<base64(type ‖ key)>`` (C2SP signed-note), given as the
  text itself or as a file holding it: the log's (type 0x01) for audits and witnesses, a
  witness's (type 0x04) for ``serve --witness-key``.
- ``thirteen keys init DIR`` writes a pair: ``log.key`` and ``log.pub`` (or, with ``--witness``,
  ``witness.key`` and ``witness.pub``).
"""

from __future__ import annotations

import re
import secrets
from pathlib import Path

import structlog

from domain.tlog.note import COSIGNATURE_V1, ED25519, NoteError, Signer, Verifier
from service.small_files import create_private, read_text, replace_private, warn_if_open

log = structlog.get_logger("thirteen.transparency")

MAX_FILE_BYTES = 64 * 1024  # a key file is one line and a few comments
LOG_KEY_FILE = "log.key"
"""The log key's file under the data directory when ``--log-key`` is not given."""

_HEADER = """\
# thirteen transparency log key (C2SP signed-note, Ed25519). It signs the log's checkpoints.
# Keep it secret and back it up: a log whose key is lost starts again under another name.
# Every replica of one store needs this same file. Its public key: thirteen keys show FILE.
"""
_WITNESS_HEADER = """\
# thirteen witness key (C2SP tlog-cosignature, Ed25519). It cosigns checkpoints it checked.
# Keep it secret; give the server its public key (serve --witness-key witness.pub).
"""


class KeyFileError(ValueError):
    """A key file that cannot be used; the one-line message says why (never a key)."""


def new_name() -> str:
    """A log name unlikely to be anyone else's (the key's name is the log's origin)."""
    return f"thirteen.invalid/log-{secrets.token_hex(4)}"


def _text(path: Path, what: str) -> str:
    return read_text(path, what, KeyFileError, limit=MAX_FILE_BYTES)


_COMMENT = re.compile(r"(?:^|\s)#.*")
"""A comment: ``#`` at a line's start or after a space (a key name may hold ``#``, and a key
line holds no space)."""


def _lines(text: str) -> list[str]:
    return [w for w in (_COMMENT.sub("", line).strip() for line in text.splitlines()) if w]


def read_signer(path: Path, kind: int | None = ED25519) -> Signer:
    """The private key in ``path`` (of ``kind``; None: either); warns when others than its
    owner may read it."""
    what = {ED25519: "log key file", COSIGNATURE_V1: "witness key file", None: "key file"}[kind]
    lines = _lines(_text(path, what))
    if len(lines) != 1:
        raise KeyFileError(f"{what} {path} must hold one private key line, it holds {len(lines)}")
    try:
        signer = Signer.parse(lines[0])
    except NoteError as error:
        raise KeyFileError(f"{what} {path}: {error}") from None
    if kind is not None and signer.kind != kind:
        raise KeyFileError(f"{what} {path} holds a key of type {signer.kind}, not {kind}")
    warn_if_open(path, "log_key_file_open_to_others")
    return signer


def write_signer(path: Path, signer: Signer) -> None:
    """A new private key file, mode 0600, appearing whole; ``FileExistsError`` if there is
    one already (another replica's, or one not to overwrite)."""
    header = _HEADER if signer.kind == ED25519 else _WITNESS_HEADER
    try:
        create_private(path, header + signer.skey + "\n")
    except FileExistsError:
        raise
    except OSError as error:
        raise KeyFileError(f"cannot create key file {path}: {error.strerror}") from None


def load_or_create(path: Path, name: str | None = None) -> tuple[Signer, bool]:
    """The log key in ``path`` and whether it was created now (with a new key named ``name``,
    default ``new_name()``)."""
    if not path.exists() and not path.is_symlink():
        signer = Signer.from_seed(name or new_name(), secrets.token_bytes(32))
        try:
            write_signer(path, signer)
            log.info("log_key_created", path=str(path), vkey=signer.verifier.vkey)
            return signer, True
        except FileExistsError:  # another replica created it meanwhile
            pass
    return read_signer(path), False


def write_public(key_file: Path, signer: Signer) -> Path:
    """The public key of ``signer`` beside its new key file: ``log.pub`` for ``log.key`` (as
    ``keys init`` writes), ``<key file>.pub`` for a name not ending in ``.key``; one there is
    replaced (it cannot be this new key's). Mode 0600 like every file ``serve`` makes (issue 22):
    copy it out to give it away. Where it was written."""
    suffixed = key_file.suffix == ".key"
    public = (
        key_file.with_suffix(".pub") if suffixed else key_file.with_name(key_file.name + ".pub")
    )
    replace_private(public, signer.verifier.vkey + "\n")  # owner-only, as all serve makes
    return public


def read_verifier(text_or_path: str, kind: int | None = None) -> Verifier:
    """A public key given as a vkey or as a file holding one (of ``kind``, when given)."""
    candidate = text_or_path.strip()
    try:
        verifier = Verifier.parse(candidate)
    except NoteError:
        path = Path(text_or_path)
        if not path.exists():
            raise KeyFileError(
                f"{text_or_path[:80]!r} is neither a public key (NAME+KEYID+KEY) nor a file"
            ) from None
        lines = _lines(_text(path, "public key file"))
        if len(lines) != 1:
            raise KeyFileError(f"public key file {path} must hold one key line") from None
        try:
            verifier = Verifier.parse(lines[0])
        except NoteError as error:
            raise KeyFileError(f"public key file {path}: {error}") from None
    if kind is not None and verifier.kind != kind:
        wanted = "a log key (type 0x01)" if kind == ED25519 else "a witness key (type 0x04)"
        raise KeyFileError(f"the public key {verifier.name!r} is not {wanted}")
    return verifier


MAX_NAME_BYTES = 255
"""The longest name ``keys init`` gives a new key (a DNS name's bound): the name is the log's
origin, the first line of every checkpoint, and every witness keeps it."""


def init(directory: Path, name: str | None, witness: bool) -> tuple[Path, Path, Signer]:
    """``thirteen keys init``: a new key pair in ``directory``; ``FileExistsError`` when the
    private key file is there already."""
    kind = COSIGNATURE_V1 if witness else ED25519
    stem = "witness" if witness else "log"
    default = f"thirteen.invalid/witness-{secrets.token_hex(4)}" if witness else new_name()
    chosen = default if name is None else name
    if len(chosen.encode()) > MAX_NAME_BYTES:
        raise KeyFileError(f"key name {chosen[:60]!r}… is over {MAX_NAME_BYTES} bytes")
    try:
        signer = Signer.from_seed(chosen, secrets.token_bytes(32), kind)
    except NoteError as error:
        raise KeyFileError(str(error)) from None
    private, public = directory / f"{stem}.key", directory / f"{stem}.pub"
    if public.exists():
        raise FileExistsError(public)
    write_signer(private, signer)
    public.write_text(signer.verifier.vkey + "\n", encoding="utf-8")
    return private, public, signer
