"""Replicas for the simulation (issue 21): three ``thirteen serve`` on one PostgreSQL schema that
route each table's commands to its owner, listing each other in a peers file rewritten at every
restart. To the driver they are one server: each call goes to the next replica in turn (as a
round-robin balancer sends it, so most land on a replica that passes them on), and a restart
stops one replica (each in its turn, SIGTERM or ``kill -9``) and starts it again on a new port,
while the others serve its tables."""

from __future__ import annotations

import itertools
import threading
from pathlib import Path
from typing import Any

from tests.simulation.servers import ServeProcess, Stubs

REPLICAS = 3


class ReplicaSet:
    """``count`` routing replicas behind one ``stubs()``, restarted one at a time."""

    kinds = ServeProcess.kinds
    clock = None

    def __init__(
        self, data: Path, environ: dict[str, str], *, app_name: str = "", count: int = REPLICAS
    ) -> None:
        self.listing = data.parent / f"{data.name}-peers"
        self.listing.write_text("")
        flags = ("--peers-file", str(self.listing))
        self.replicas: list[ServeProcess] = []
        try:
            for _ in range(count):
                # One data directory for the key files every replica shares (PostgreSQL keeps
                # nothing else under --data).
                replica = ServeProcess(data, environ, app_name=app_name, extra=flags)
                self.replicas.append(replica)
        except BaseException:
            self.abort()
            raise
        self._publish()
        self._turn = itertools.count()
        self._next_restart = itertools.count()
        self._lock = threading.Lock()

    @property
    def broken(self) -> str | None:
        return next((r.broken for r in self.replicas if r.broken), None)

    @property
    def exit_codes(self) -> list[tuple[str, int]]:
        return [code for replica in self.replicas for code in replica.exit_codes]

    def _publish(self) -> None:
        """List every replica's address in the peers file (read again each second)."""
        self.listing.write_text("".join(f"{r.address}\n" for r in self.replicas if r.address))

    def stubs(self) -> Stubs:
        return self.replicas[next(self._turn) % len(self.replicas)].stubs()

    def restart(self, kind: str) -> float:
        """Stop and start the next replica in turn; the others keep serving meanwhile."""
        with self._lock:
            replica = self.replicas[next(self._next_restart) % len(self.replicas)]
        took = replica.restart(kind)
        self._publish()
        return took

    def records(self) -> list[dict[str, Any]]:
        return [record for replica in self.replicas for record in replica.records()]

    def stop(self) -> None:
        for replica in self.replicas:
            replica.stop()

    def abort(self) -> None:
        for replica in self.replicas:
            replica.abort()
