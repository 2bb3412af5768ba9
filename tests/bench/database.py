"""PostgreSQL for the service benchmark: a fresh schema per configuration (dropped afterwards),
and a thread that samples what the schema's backends are waiting on.

The servers are started with ``PGAPPNAME`` set to a name of the run's own, so their sessions
(events, views, the projector's advisory lock) are told apart in ``pg_stat_activity`` from
any other client of the same database (a test run beside the benchmark).
"""

from __future__ import annotations

import os
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

PG = {
    "host": os.environ.get("POSTGRES_HOST", "127.0.0.1"),
    "port": os.environ.get("POSTGRES_PORT", "5432"),
    "user": os.environ.get("POSTGRES_USER", "postgres"),
    "dbname": os.environ.get("THIRTEEN_TEST_POSTGRES_DBNAME", "test"),
}
SAMPLE_INTERVAL = 0.1  # pg_stat_activity ten times a second


def _connect() -> Any:
    import psycopg
    from psycopg.conninfo import make_conninfo

    password = os.environ.get("POSTGRES_PASSWORD")
    extra = {"password": password} if password else {}
    return psycopg.connect(make_conninfo("", **PG, **extra), connect_timeout=3, autocommit=True)


def unreachable() -> str | None:
    """None when PostgreSQL answers, else why not (one line)."""
    try:
        with _connect():
            return None
    except Exception as error:  # psycopg.OperationalError, a missing driver …
        reason = " ".join(str(error).split()) or type(error).__name__
        return f"PostgreSQL at {PG['host']}:{PG['port']} (database {PG['dbname']}): {reason}"


@contextmanager
def fresh_schema() -> Iterator[dict[str, str]]:
    """A new schema ``bench_<random>``, dropped afterwards, as the servers' environment."""
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    with _connect() as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield {
            "THIRTEEN_STORE": "postgres",
            "POSTGRES_HOST": PG["host"],
            "POSTGRES_PORT": str(PG["port"]),
            "POSTGRES_USER": PG["user"],
            "POSTGRES_DBNAME": PG["dbname"],
            "POSTGRES_SCHEMA": schema,
            "PGAPPNAME": f"thirteen-{schema}",
        }
    finally:
        with _connect() as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@dataclass
class Waits:
    """What the schema's backends were doing, sample after sample."""

    samples: int = 0
    busy: int = 0  # backend samples in a query or a transaction (not idle in the pool)
    sessions: int = 0  # backend samples, idle ones too
    locked: int = 0  # busy backend samples waiting on a heavyweight Lock
    any_locked: int = 0  # samples with at least one backend waiting on a Lock
    on: Counter[str] = field(default_factory=Counter)  # what the Lock waits were for
    doing: Counter[str] = field(default_factory=Counter)  # every busy backend sample
    pids: set[int] = field(default_factory=set)  # every backend seen

    def share(self, count: int) -> float:
        return count / self.busy if self.busy else 0.0


_QUERY = """
SELECT a.pid, a.state, a.wait_event_type, a.wait_event, l.locktype, l.mode, c.relname,
       l.objid
FROM pg_stat_activity a
LEFT JOIN pg_locks l ON l.pid = a.pid AND NOT l.granted
LEFT JOIN pg_class c ON c.oid = l.relation
WHERE a.application_name = %s AND a.pid <> pg_backend_pid()
"""


class WaitSampler:
    """Samples ``pg_stat_activity`` (and the ungranted ``pg_locks``) of the sessions named
    ``application`` every ``SAMPLE_INTERVAL`` seconds in a thread, from ``start`` to ``stop``."""

    def __init__(self, application: str) -> None:
        self.application = application
        self.waits = Waits()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> Waits:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        return self.waits

    def backends(self) -> set[int]:
        return set(self.waits.pids)

    def _run(self) -> None:
        try:
            with _connect() as conn:
                while not self._stop.wait(SAMPLE_INTERVAL):
                    self._sample(conn.execute(_QUERY, (self.application,)).fetchall())
        except Exception as error:
            self.error = error

    def _sample(self, rows: list[tuple[Any, ...]]) -> None:
        waits = self.waits
        waits.samples += 1
        seen: set[int] = set()
        locked = False
        for pid, state, kind, event, locktype, mode, relation, objid in rows:
            if pid in seen:  # a second ungranted lock of the same backend
                continue
            seen.add(pid)
            waits.pids.add(pid)
            waits.sessions += 1
            if state == "idle" or state is None:
                continue
            waits.busy += 1
            if kind == "Lock":
                locked = True
                waits.locked += 1
                what = relation or (f"key {objid}" if locktype == "advisory" else "")
                waits.on[" ".join(x for x in (event, what, mode) if x)] += 1
            elif state.startswith("idle in transaction"):
                waits.doing["idle in transaction (the server process's turn)"] += 1
            elif kind is None:
                waits.doing["running (CPU)"] += 1
            else:
                waits.doing[f"{kind}:{event}"] += 1
        waits.any_locked += locked
