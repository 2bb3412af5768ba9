"""The two event stores the integration and e2e tests run on: a SQLite file in a temporary
directory, and PostgreSQL in a schema of its own that is dropped afterwards.

Outside CI, PostgreSQL tests skip with the reason when no server answers; with CI=true they
must run, so an unreachable server fails them.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import pytest

if TYPE_CHECKING:
    import psycopg


class ConnectParams(TypedDict):
    """psycopg.connect's keywords for the test server: a TypedDict, so each is checked."""

    host: str
    port: str
    user: str
    dbname: str


PG: ConnectParams = {
    "host": os.environ.get("POSTGRES_HOST", "127.0.0.1"),
    "port": os.environ.get("POSTGRES_PORT", "5432"),
    "user": os.environ.get("POSTGRES_USER", "postgres"),
    "dbname": os.environ.get("THIRTEEN_TEST_POSTGRES_DBNAME", "test"),
}


def _connect() -> psycopg.Connection[tuple[Any, ...]]:
    import psycopg

    return psycopg.connect(connect_timeout=3, autocommit=True, **PG)


def postgres_available() -> str | None:
    """None when PostgreSQL answers, else why not."""
    try:
        with _connect():
            return None
    except Exception as error:  # psycopg.OperationalError and friends
        return f"PostgreSQL at {PG['host']}:{PG['port']} is not reachable: {error}"


@contextmanager
def store_environ(kind: str, tmp_path: Path) -> Iterator[dict[str, str]]:
    """The environment that selects a fresh store of ``kind`` (``sqlite`` or ``postgres``)."""
    if kind == "sqlite":
        yield {"THIRTEEN_STORE": "sqlite"}
        return
    reason = postgres_available()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    schema = f"t_{uuid.uuid4().hex[:12]}"
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
        }
    finally:
        with _connect() as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
