"""What the commands share at the terminal: the exit status for bad input and, for those that
read a store, the store opened with a one-line error instead of a traceback and a progress bar
on stderr."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

EXIT_BAD_INPUT = 2


class ProgressBar:
    """A one-line progress bar on stderr (a terminal redraws it; a log gets a few lines)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.tty = sys.stderr.isatty()
        self.shown = -1

    def __call__(self, position: int, last: int) -> None:
        share = 1.0 if last <= 0 else min(position / last, 1.0)
        percent = int(share * 100)
        if percent == self.shown or (not self.tty and percent % 10 and percent != 100):
            return
        self.shown = percent
        bar = "#" * (percent // 4) + "." * (25 - percent // 4)
        end = "\r" if self.tty and percent < 100 else "\n"
        print(
            f"{self.label} [{bar}] {percent:3d}% ({position}/{last})",
            end=end,
            file=sys.stderr,
            flush=True,
        )


def open_store(command: str, data: str) -> Any:
    """The application on the configured store, or a one-line error and an exit status."""
    from service.eventstore.storage import StoreConfigError
    from service.opening import open_app

    try:
        return open_app(Path(data))
    except StoreConfigError as error:
        print(f"thirteen {command}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as error:
        print(f"thirteen {command}: cannot open the event store: {error}", file=sys.stderr)
        return 1


def read_store(command: str, data: str) -> Any:
    """``open_store`` for commands that only read: a missing SQLite store is an error here,
    not a new empty one."""
    store = Path(data) / "thirteen.sqlite"
    if os.environ.get("THIRTEEN_STORE", "sqlite") == "sqlite" and not store.is_file():
        print(f"thirteen {command}: no event store in {data} (expected {store})", file=sys.stderr)
        return EXIT_BAD_INPUT
    return open_store(command, data)
