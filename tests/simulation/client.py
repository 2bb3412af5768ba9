"""A client that finds out: a call whose outcome is unknown (a deadline fired, the server
went away, the answer was lost) is sent again with the same ids until the server gives a
definite answer, bounded by count and time.

Every command the service offers is safe to send again: transfers carry a ``transfer_id``,
deals and table openings a ``request_id``, arrangements and reveals are idempotent by nature.
Only StandUp is not; its caller interprets the answer of a repeat (``stand_up`` in driver).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any

import grpc

from tests.simulation.report import Failures, Figures

# Answers that settle the outcome: the command was refused and changed nothing.
DEFINITE = frozenset(
    {
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.ALREADY_EXISTS,
        grpc.StatusCode.OUT_OF_RANGE,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.UNIMPLEMENTED,
    }
)

NORMAL_DEADLINE = 5.0


@dataclass
class Answer:
    reply: Any
    code: grpc.StatusCode | None  # None: OK
    message: str
    attempts: int

    @property
    def ok(self) -> bool:
        return self.code is None

    @property
    def resolved(self) -> bool:
        """A definite answer: OK or a refusal (not: gave up)."""
        return self.code is None or self.code in DEFINITE

    def refused(self, *codes: grpc.StatusCode) -> bool:
        return self.code is not None and self.code in (codes or DEFINITE)


class Client:
    """Calls ``server.stubs()`` of the moment; one per thread (its ``rng`` is its own)."""

    def __init__(
        self,
        server: Any,
        rng: random.Random,
        figures: Figures,
        failures: Failures,
        *,
        short_deadline: float = 0.0,
        give_up_after: float = 30.0,
        max_attempts: int = 600,
        stop_at: float | None = None,
    ) -> None:
        self.server = server
        self.rng = rng
        self.figures = figures
        self.failures = failures
        self.short_deadline = short_deadline  # chance that a first attempt gets a tiny deadline
        self.give_up_after = give_up_after
        self.max_attempts = max_attempts
        self.stop_at = stop_at  # time.monotonic() after which no call waits any more

    def call(
        self,
        service: str,
        method: str,
        request: Any,
        *,
        what: str = "",
        hostile: bool = False,
        patience: float | None = None,
    ) -> Answer:
        """The definite answer to ``request``. A hostile call is not retried after INTERNAL:
        its caller judges that answer itself. With ``patience`` (for reads) the call gives up
        after that many seconds and leaves the judgement to its caller."""
        started = time.monotonic()
        attempts = 0
        last = ""
        uncertain = False
        while True:
            attempts += 1
            if self.server.broken:  # reported once by whoever restarted it
                return Answer(None, grpc.StatusCode.UNAVAILABLE, "no server", attempts)
            stub = getattr(self.server.stubs(), service)
            timeout = NORMAL_DEADLINE
            if attempts == 1 and self.rng.random() < self.short_deadline:
                timeout = self.rng.uniform(0.002, 0.05)  # short enough to fire sometimes
            try:
                reply = getattr(stub, method)(request, timeout=timeout)
            except grpc.RpcError as error:
                code, message = error.code(), error.details() or ""
            except ValueError as error:  # a channel closed by a restart under our feet
                code, message = grpc.StatusCode.UNAVAILABLE, str(error)
            else:
                if uncertain:
                    self.figures.add("outcomes unknown then resolved")
                return Answer(reply, None, "", attempts)
            if code in DEFINITE or (hostile and code == grpc.StatusCode.INTERNAL):
                if uncertain:
                    self.figures.add("outcomes unknown then resolved")
                return Answer(None, code, message, attempts)
            uncertain = True
            self.figures.add("retries")
            self._count(code)
            if code == grpc.StatusCode.INTERNAL:
                # The outcome is unknown (a failure after the save, or before it), so the same
                # call is sent again; but a refused command has a reason, and a database
                # session cut under a command is UNAVAILABLE, not a crash.
                self.failures.add(
                    "an honest command is never answered INTERNAL",
                    f"{method} {what}: {message}",
                )
            if code == grpc.StatusCode.ABORTED:
                # RULES.md has no conflict between honest callers: giving up under load is the
                # service's failure even though a retry succeeds.
                self.failures.add(
                    "liveness: an honest command gave up with ABORTED",
                    f"{method} {what}: {message}",
                )
            last = f"{code.name}: {message}"
            now = time.monotonic()
            if self.stop_at is not None and now > self.stop_at:
                self.failures.add(
                    "the run ends within its time budget",
                    f"{method} {what} abandoned at the run's deadline; last answer {code.name}: "
                    f"{message}",
                )
                return Answer(None, code, message, attempts)
            if patience is not None and now - started > patience:
                return Answer(None, code, message, attempts)
            if attempts >= self.max_attempts or time.monotonic() - started > self.give_up_after:
                self.failures.add(
                    "every unknown outcome is resolved by retrying with the same id",
                    f"{method} {what} still unresolved after {attempts} attempts in "
                    f"{time.monotonic() - started:.0f} s; last answer {last}",
                )
                return Answer(None, code, message, attempts)
            time.sleep(min(0.5, 0.01 * 2 ** min(attempts, 6)) * self.rng.uniform(0.5, 1.0))

    def _count(self, code: grpc.StatusCode) -> None:
        names = {
            grpc.StatusCode.DEADLINE_EXCEEDED: "deadlines fired",
            grpc.StatusCode.UNAVAILABLE: "answers UNAVAILABLE",
            grpc.StatusCode.ABORTED: "answers ABORTED",
            grpc.StatusCode.INTERNAL: "answers INTERNAL",
        }
        self.figures.add(names.get(code, f"answers {code.name}"))
