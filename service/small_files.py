"""Reading the small files a server is given at start (keys, certificates, a policy) with a
bound: a wrong path to a device (``/dev/zero``) or a huge file is refused at once instead of
being read until memory runs out."""

from __future__ import annotations

import errno
import os
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
