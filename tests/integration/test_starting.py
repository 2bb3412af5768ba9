"""Start-up while PostgreSQL drops sessions (a restart, a fail-over, pg_terminate_backend): the
server waits for the database instead of exiting; anything else is reported at once."""

from __future__ import annotations

import psycopg
import pytest

from service.eventstore.storage import StoreConfigError, while_starting


def test_start_up_tries_again_while_the_database_cuts_its_sessions() -> None:
    attempts = []

    def attempt() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise psycopg.OperationalError("terminating connection due to administrator command")
        return "open"

    assert while_starting("open the event store", attempt, seconds=5) == "open"
    assert len(attempts) == 3


def test_start_up_gives_up_on_a_database_that_stays_away() -> None:
    def attempt() -> None:
        raise psycopg.OperationalError("connection refused")

    with pytest.raises(psycopg.OperationalError):
        while_starting("open the event store", attempt, seconds=0.3)


@pytest.mark.parametrize(
    "error",
    [
        StoreConfigError("THIRTEEN_STORE must be one of sqlite, postgres"),
        psycopg.OperationalError('password authentication failed for user "x"'),
    ],
)
def test_a_setting_or_login_that_is_wrong_is_reported_at_once(error: Exception) -> None:
    attempts = []

    def attempt() -> None:
        attempts.append(1)
        raise error

    with pytest.raises(type(error)):
        while_starting("open the event store", attempt, seconds=5)
    assert len(attempts) == 1
