"""``thirteen worker`` in a process of its own, beside ``thirteen serve --background worker``
(``tests.support.serve_process``): for tests that kill it (SIGKILL) and start a standby."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from pathlib import Path

from tests.e2e.helpers import wait_until
from tests.support.seed_key import ensure_log_key
from tests.support.serve_process import SCRIPT, SQLITE


class WorkerProcess:
    """``thirteen worker --data DATA *extra`` on the store ``environ`` selects (SQLite when
    None); its JSON log lines are collected."""

    def __init__(self, data: Path, *extra: str, environ: dict[str, str] | None = None) -> None:
        ensure_log_key(data, extra, environ or SQLITE)
        self.process = subprocess.Popen(
            [str(SCRIPT), "worker", "--data", str(data), *extra],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(environ or SQLITE)},
        )
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        wait_until(
            lambda: self.said("working") or self.process.poll() is not None,
            "thirteen worker to start",
            60,
        )
        assert self.process.poll() is None, "".join(self.lines[-20:])

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)

    def logged(self, event: str) -> list[dict[str, object]]:
        """Its log lines of ``event``, oldest first."""
        found = []
        for line in list(self.lines):
            if line.startswith("{"):
                record = json.loads(line)
                if record.get("event") == event:
                    found.append(record)
        return found

    def said(self, event: str) -> bool:
        return bool(self.logged(event))

    def leads(self) -> bool:
        """Whether it last said it leads both the views and the log."""
        said = self.logged("worker_leading")
        return bool(said) and said[-1]["views"] is True and said[-1]["log"] is True

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> int:
        """SIGTERM, and its exit status."""
        if self.process.poll() is None:
            self.process.terminate()
        return self.process.wait(timeout=30)
