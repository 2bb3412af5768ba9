"""The small files a server is given at start (keys, certificates, a policy): read with a
bound, so a wrong path to a device (``/dev/zero``) or a huge file is refused at once instead of
being read until memory runs out; and a new private key file created whole, owner-only."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path

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


def create_private(path: Path, text: str) -> None:
    """A new file at ``path`` holding ``text``, readable by its owner only (its directory
    created). It appears whole: written beside it, synced, then linked in, so a process starting
    at the same moment never reads it half written. ``FileExistsError`` when there is one
    already (another process was first); other ``OSError`` as creating raises them."""
    draft = path.with_name(f".{path.name}.{secrets.token_hex(4)}.new")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.link(draft, path)
    finally:
        with contextlib.suppress(OSError):
            draft.unlink()
