"""The log as a C2SP ``tlog-witness`` client (``serve --witness-url URL``): each checkpoint the
log signs is submitted to each witness (``POST <URL>/add-checkpoint``) and the cosignatures
answered are kept as ``AddCosignature`` keeps them (``service.transparency.cosignatures``), so
``GetCheckpoint`` serves them after the log's signature.

One thread per process, submitting only while this process signs the log (it leads its
appender: one replica, or the ``thirteen worker``), never on a serving thread. For each witness
it keeps the size that witness last cosigned, starting at 0 (the specification's way to learn
it): a ``409 Conflict`` answers that size, and the request is made again with the proof from
it. A network error, a timeout, a 5xx or any other refusal is tried again after a delay that
doubles from ``FIRST_DELAY`` to at most ``MAX_DELAY`` seconds, each drawn from its upper half
(jitter); the newest checkpoint is what is tried. An idle log's checkpoint is submitted again
``REFRESH_AFTER`` after its last cosignature, for a fresh one (the log keeps cosignatures up to
a day old). The answer's lines by keys not given to ``--witness-key`` are ignored; an answer
with none is an error, logged. Each outcome is one log line (``witness_cosigned``,
``witness_size_conflict``, ``witness_unreachable``, ``witness_refused``).
"""

from __future__ import annotations

import contextlib
import http.client
import random
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

import structlog

from domain.errors import RuleError
from domain.tlog.add_checkpoint import cosignature_lines, format_request, parse_size
from service.errors import AccessRefused
from service.transparency.store import StoredCheckpoint

log = structlog.get_logger("thirteen.transparency")

TIMEOUT = 10.0  # seconds a witness has to answer one request
FIRST_DELAY = 0.5  # seconds before the first retry
MAX_DELAY = 60.0  # seconds between retries, at most
REFRESH_AFTER = 60 * 60  # seconds after a cosignature before an idle log asks for a new one
MAX_ANSWER = 64 * 1024  # bytes of a witness's answer read
OUTCOMES = (
    "cosigned",
    "size_conflict",
    "unreachable",
    "refused",
    "cosignature_refused",
    "ahead",
)
"""What a submission comes to (``Submitter.on_outcome``, the metrics' ``outcome`` label)."""
CONFLICTS = 3  # 409s followed in a row within one attempt
IDLE = 1.0  # seconds between looks at the latest checkpoint when not poked
STOP_WAIT = 2.0  # seconds a stop waits for a submission under way (then left to end alone)


class BadWitnessUrl(ValueError):
    """A ``--witness-url`` that is not ``http(s)://HOST[:PORT][/PREFIX]``."""


def check_url(text: str) -> str:
    """A witness's submission prefix: ``http://`` or ``https://``, a host, an optional port
    and path; no query, no fragment, no credentials; printable ASCII without spaces (what a
    request line carries: a name or path beyond it is given percent-encoded or as punycode).
    Given back without a final ``/``.

    >>> check_url("http://127.0.0.1:8380/")
    'http://127.0.0.1:8380'
    >>> check_url("ftp://x")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    service.transparency.submitting.BadWitnessUrl: a witness URL is http(s)://HOST..., got 'ftp://x'
    """
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        parts, port = None, None
    if (
        parts is None
        or not all(" " < character < "\x7f" for character in text)
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.query
        or parts.fragment
        or parts.username is not None
        or (port is not None and not 0 < port < 65536)
    ):
        raise BadWitnessUrl(
            f"a witness URL is http(s)://HOST[:PORT][/PREFIX] in printable ASCII without spaces, "
            f"got {text[:80]!r}"
        )
    return text.rstrip("/")


@dataclass
class Witness:
    """What the log knows of one witness: its URL, the size it last cosigned (as far as the
    log knows), when, and its failures in a row."""

    url: str
    size: int = 0
    cosigned_at: float = float("-inf")
    failures: int = 0
    next_try: float = 0.0
    connection: http.client.HTTPConnection | None = None

    def post(self, body: bytes) -> tuple[int, str, bytes]:
        """POST ``body`` to ``<url>/add-checkpoint`` on a kept-alive connection; the status,
        content type and (bounded) body. ``OSError`` or ``http.client.HTTPException`` when
        there is no answer (the connection is then dropped); ``TimeoutError`` when the whole
        exchange takes more than ``TIMEOUT`` seconds, however the witness trickles it (the
        connection is cut then: a slow witness never holds up the others)."""
        parts = urlsplit(self.url)
        if self.connection is None:
            kind = (
                http.client.HTTPSConnection
                if parts.scheme == "https"
                else http.client.HTTPConnection
            )
            self.connection = kind(parts.hostname or "", parts.port, timeout=TIMEOUT)
        connection = self.connection
        late = threading.Event()
        cut = threading.Timer(TIMEOUT, _cut, args=(connection, late))
        cut.daemon = True
        cut.start()
        try:
            connection.request(
                "POST",
                parts.path + "/add-checkpoint",
                body=body,
                headers={"Content-Type": "text/plain; charset=utf-8"},
            )
            answer = connection.getresponse()
            data = answer.read(MAX_ANSWER)
            if not answer.isclosed():  # longer than we read: the connection is not reusable
                self.drop()
        except (OSError, http.client.HTTPException):
            self.drop()
            if late.is_set():
                raise TimeoutError(f"no whole answer within {TIMEOUT:g} s") from None
            raise
        finally:
            cut.cancel()
        if late.is_set():  # cut while reading: what was read is not the whole answer
            self.drop()
            raise TimeoutError(f"no whole answer within {TIMEOUT:g} s")
        return answer.status, answer.getheader("Content-Type", ""), data

    def drop(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None


class Submitter:
    """Submits the newest checkpoint (``latest()``) to each witness of ``urls`` while
    ``leading()``, with the consistency proof ``consistency(old, new)``, and keeps what they
    answer through ``add_cosignature``."""

    def __init__(
        self,
        urls: tuple[str, ...],
        *,
        latest: Callable[[], StoredCheckpoint | None],
        consistency: Callable[[int, int], list[bytes]],
        add_cosignature: Callable[[str], StoredCheckpoint],
        leading: Callable[[], bool],
        rng: random.Random | None = None,
    ) -> None:
        self.witnesses = [Witness(url) for url in urls]
        self.latest = latest
        self.consistency = consistency
        self.add_cosignature = add_cosignature
        self.leading = leading
        self.rng = rng or random.Random()
        # Told each outcome (the witness's URL, ``OUTCOMES``): the metrics count them.
        self.on_outcome: Callable[[str, str], None] | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="witness-submitter", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=STOP_WAIT)
        for witness in self.witnesses:
            witness.drop()

    def poke(self) -> None:
        """A new checkpoint is signed: submit it now (to the witnesses not waiting to retry)."""
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.submit_due(time.monotonic())
            except Exception as error:  # the store, for now: the next look tries again
                log.warning("witness_submission_failed", cause=repr(error))
            self._wake.wait(IDLE)
            self._wake.clear()

    def submit_due(self, now: float) -> None:
        """Submit the latest checkpoint to each witness that has not cosigned it (or whose
        cosignature is ``REFRESH_AFTER`` old) and is not waiting to retry."""
        if not self.leading():
            return
        latest = self.latest()
        if latest is None:
            return
        for witness in self.witnesses:
            if self._stop.is_set():
                return
            fresh = now - witness.cosigned_at < REFRESH_AFTER
            if (witness.size == latest.size and fresh) or now < witness.next_try:
                continue
            self.submit(witness, latest, now)

    def _outcome(self, witness: Witness, outcome: str) -> None:
        if self.on_outcome is not None:
            self.on_outcome(witness.url, outcome)

    def _retry(self, witness: Witness, now: float, event: str, **details: object) -> None:
        """Try ``witness`` again after the next delay; one log line, one outcome counted."""
        self._outcome(witness, event.removeprefix("witness_"))
        witness.failures += 1
        delay = min(MAX_DELAY, FIRST_DELAY * 2 ** (witness.failures - 1))
        delay *= self.rng.uniform(0.5, 1.0)
        witness.next_try = now + delay
        log.warning(
            event,
            witness=witness.url,
            attempt=witness.failures,
            retry_in=round(delay, 2),
            **details,
        )

    def submit(self, witness: Witness, checkpoint: StoredCheckpoint, now: float) -> bool:
        """One submission of ``checkpoint`` to ``witness`` (following its 409s); whether it
        was cosigned and the cosignature kept."""
        for _ in range(CONFLICTS):
            if witness.size > checkpoint.size:  # it saw a newer one than this process has
                self._retry(witness, now, "witness_ahead", size=witness.size, ours=checkpoint.size)
                return False
            old = witness.size
            proof = self.consistency(old, checkpoint.size) if 0 < old < checkpoint.size else []
            body = format_request(old, proof, checkpoint.note)
            try:
                status, content_type, answer = witness.post(body)
            except (OSError, http.client.HTTPException) as error:
                self._retry(witness, now, "witness_unreachable", cause=repr(error))
                return False
            if status == 409:
                size = parse_size(answer)
                if size is None or not content_type.startswith("text/x.tlog.size"):
                    self._retry(witness, now, "witness_refused", status=409, answer=_shown(answer))
                    return False
                log.info("witness_size_conflict", witness=witness.url, old=old, size=size)
                self._outcome(witness, "size_conflict")
                witness.size = size
                continue
            if status != 200:
                self._retry(witness, now, "witness_refused", status=status, answer=_shown(answer))
                return False
            return self._keep(witness, checkpoint, answer, now)
        self._retry(witness, now, "witness_refused", status=409, answer="conflicts in a row")
        return False

    def _keep(
        self, witness: Witness, checkpoint: StoredCheckpoint, answer: bytes, now: float
    ) -> bool:
        lines = cosignature_lines(answer)
        if lines is None:
            self._retry(witness, now, "witness_refused", status=200, answer=_shown(answer))
            return False
        try:
            self.add_cosignature(checkpoint.note + lines)
        except (RuleError, AccessRefused) as error:  # unknown key, bad signature, bad time
            self._retry(witness, now, "witness_cosignature_refused", cause=str(error))
            return False
        witness.size, witness.cosigned_at = checkpoint.size, now
        witness.failures, witness.next_try = 0, 0.0
        log.info("witness_cosigned", witness=witness.url, size=checkpoint.size)
        self._outcome(witness, "cosigned")
        return True


def _cut(connection: http.client.HTTPConnection, late: threading.Event) -> None:
    """Cut ``connection`` whose exchange has taken too long: its blocked read ends."""
    late.set()
    sock = connection.sock
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _shown(answer: bytes) -> str:
    """A witness's answer in a log line: its first line, clipped."""
    return answer.decode("utf-8", "replace").split("\n", 1)[0][:200]
