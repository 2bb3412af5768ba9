"""The small files a server is given at start (keys, certificates, a policy): read with a
bound, so a wrong path to a device (``/dev/zero``) or a huge file is refused at once instead of
being read until memory runs out; a warning when a secret one is open to others; a new private
key file created whole, owner-only; and the store's files created owner-only whatever the umask
(issue 22), with what in a data directory others may read."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path

import structlog

log = structlog.get_logger("thirteen.files")

MAX_BYTES = 1 << 20  # far above any key, certificate chain or policy


class TooLarge(OSError):
    """The file holds more than a key, certificate or policy could, or is not a regular file
    (it could never end)."""


def read_small(path: Path, limit: int = MAX_BYTES) -> bytes:
    """The bytes of the regular file ``path`` (a symbolic link to one will do); ``TooLarge``
    beyond ``limit`` or for anything but a regular file (a pipe, a device), which could block
    or never end; other ``OSError`` as opening or reading raises them."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO does not block the open
    with os.fdopen(descriptor, "rb") as file:
        mode = os.fstat(file.fileno()).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            raise TooLarge("is not a regular file (a pipe or a device)")
        data = file.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(f"is larger than {limit:,} bytes, more than such a file holds")
    return data


def read_text(
    path: Path,
    what: str,
    refuse: Callable[[str], Exception],
    *,
    encoding: str = "utf-8",
    not_text: str = "is not text",
    limit: int = MAX_BYTES,
) -> str:
    """The text of the small file ``path`` (``read_small``); what cannot be read is raised as
    ``refuse(one line)``, naming the file as ``what`` (``"the policy"``, ``"seed key file"``)."""
    try:
        return read_small(path, limit).decode(encoding)
    except TooLarge as error:  # a device or a huge file: never read to its end
        raise refuse(f"{what} {path} {error}") from None
    except OSError as error:
        raise refuse(f"cannot read {what} {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise refuse(f"{what} {path} {not_text}") from None


def warn_if_open(path: Path, event: str) -> None:
    """Log ``event`` when others than its owner may read, write or run the secret ``path``."""
    mode = path.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        log.warning(event, path=str(path), mode=oct(stat.S_IMODE(mode)), hint=f"chmod 600 {path}")


def create_private(path: Path, text: str) -> None:
    """A new file at ``path`` holding ``text``, readable by its owner only (its directory
    created). It appears whole: written beside it, synced, then linked in, so a process starting
    at the same moment never reads it half written. ``FileExistsError`` when there is one
    already (another process was first); other ``OSError`` as creating raises them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _put_whole(path, text, os.link)


def replace_private(path: Path, text: str) -> None:
    """``text`` in ``path``, readable by its owner only, in place of what it held: written
    beside it, synced, then renamed over, so a reader sees the old file or the new one whole."""
    _put_whole(path, text, os.replace)


def _put_whole(path: Path, text: str, put: Callable[[Path, Path], None]) -> None:
    """``text`` written to a draft beside ``path`` (mode 0600) and synced, then ``put`` in place
    (``os.link``: only if there is none; ``os.replace``: over it); the draft never stays."""
    draft = path.with_name(f".{path.name}.{secrets.token_hex(4)}.new")
    try:
        handle = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        put(draft, path)
    finally:
        with contextlib.suppress(OSError):
            draft.unlink()


def create_owner_only(path: Path) -> None:
    """An empty file at ``path`` that only its owner may read or write, unless there is one
    already (left as it is). SQLite creates a database 0644 less the umask and gives its WAL and
    shared-memory files the database's mode, so a store file made here first keeps them all
    owner-only."""
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))


def open_to_others(directory: Path) -> dict[Path, int]:
    """``directory`` and the files in it that others than their owner may read, write or enter,
    with their permission bits (none: an empty dict; no such directory: empty too)."""
    found: dict[Path, int] = {}
    try:
        entries = [directory, *sorted(directory.iterdir())]
    except OSError:
        return found
    for path in entries:
        try:
            mode = path.lstat().st_mode
        except OSError:  # gone meanwhile
            continue
        if (path == directory or stat.S_ISREG(mode)) and mode & (stat.S_IRWXG | stat.S_IRWXO):
            found[path] = stat.S_IMODE(mode)
    return found
