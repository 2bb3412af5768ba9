"""The log's side of C2SP ``tlog-witness`` (``service.transparency.submitting.Submitter``) with a
hand-written witness that answers from a script: what is sent, the 409 followed, the delays
between retries (doubling, jittered, bounded), and when nothing is sent."""

from __future__ import annotations

import http.client
import random
from collections.abc import Iterator

import pytest

from service.transparency.store import StoredCheckpoint
from service.transparency.submitting import (
    FIRST_DELAY,
    MAX_DELAY,
    REFRESH_AFTER,
    Submitter,
    Witness,
    check_url,
)

NOTE = "example.com/log\n8\n" + "A" * 43 + "=\n\n\u2014 example.com/log AAAA\n"
LATEST = StoredCheckpoint(8, bytes(32), NOTE)
LINE = "\u2014 witness.example/w1 AAAAAAAA\n"


class Script:
    """The witness's answers in order (an exception is raised), and the bodies it was sent."""

    def __init__(self, *answers: tuple[int, str, bytes] | Exception) -> None:
        self.answers: Iterator[tuple[int, str, bytes] | Exception] = iter(answers)
        self.sent: list[bytes] = []

    def __call__(self, body: bytes) -> tuple[int, str, bytes]:
        self.sent.append(body)
        answer = next(self.answers)
        if isinstance(answer, Exception):
            raise answer
        return answer


def submitter(
    script: Script, leading: bool = True
) -> tuple[Submitter, list[str], list[tuple[int, int]]]:
    kept: list[str] = []
    proofs: list[tuple[int, int]] = []

    def consistency(old: int, new: int) -> list[bytes]:
        proofs.append((old, new))
        return [bytes([old]) * 32]

    def add_cosignature(text: str) -> StoredCheckpoint:
        kept.append(text)
        return LATEST

    made = Submitter(
        ("http://witness.example",),
        latest=lambda: LATEST,
        consistency=consistency,
        add_cosignature=add_cosignature,
        leading=lambda: leading,
        rng=random.Random(7),
    )
    made.witnesses[0].post = script  # type: ignore[method-assign]
    return made, kept, proofs


def test_a_409_tells_the_size_and_the_proof_from_it_follows() -> None:
    script = Script((409, "text/x.tlog.size", b"5\n"), (200, "text/plain", LINE.encode()))
    made, kept, proofs = submitter(script)
    outcomes: list[str] = []
    made.on_outcome = lambda url, outcome: outcomes.append(outcome)
    made.submit_due(100.0)
    assert [body.split(b"\n", 1)[0] for body in script.sent] == [b"old 0", b"old 5"]
    assert script.sent[0].endswith(NOTE.encode()) and b"\n\n" in script.sent[0]
    assert proofs == [(5, 8)]
    assert kept == [NOTE + LINE]
    assert outcomes == ["size_conflict", "cosigned"]
    made.submit_due(100.0 + REFRESH_AFTER - 1)  # cosigned: nothing to send
    assert len(script.sent) == 2


def test_an_idle_logs_checkpoint_is_submitted_again_after_an_hour() -> None:
    script = Script((200, "", LINE.encode()), (200, "", LINE.encode()))
    made, kept, proofs = submitter(script)
    made.submit_due(0.0)
    made.submit_due(REFRESH_AFTER + 1)
    assert [body.split(b"\n", 1)[0] for body in script.sent] == [b"old 0", b"old 8"]
    assert proofs == [] and len(kept) == 2  # old equals the size: no proof


@pytest.mark.parametrize(
    "failure",
    [
        OSError("connection refused"),
        http.client.RemoteDisconnected("gone"),
        (503, "text/plain", b"busy\n"),
        (422, "text/plain", b"the proof does not hold\n"),
        (200, "text/plain", b"not a signature line\n"),
        (409, "text/plain", b"5\n"),  # not text/x.tlog.size
    ],
    ids=["refused", "disconnected", "503", "422", "200 garbage", "409 untyped"],
)
def test_failures_are_retried_after_doubling_jittered_bounded_delays(
    failure: tuple[int, str, bytes] | Exception,
) -> None:
    script = Script(*[failure] * 12)
    made, kept, _ = submitter(script)
    witness = made.witnesses[0]
    now, delays = 0.0, []
    for _ in range(12):
        made.submit_due(now)
        delays.append(witness.next_try - now)
        made.submit_due(now + delays[-1] / 2)  # too early: nothing sent
        now = witness.next_try
    assert len(script.sent) == 12 and not kept
    for attempt, delay in enumerate(delays):
        ceiling = min(MAX_DELAY, FIRST_DELAY * 2**attempt)
        assert ceiling / 2 <= delay <= ceiling, (attempt, delay)
    assert max(delays) <= MAX_DELAY and delays[-1] >= MAX_DELAY / 2


def test_a_refused_cosignature_is_retried_and_a_success_resets_the_delay() -> None:
    from service.errors import UnknownWitness

    script = Script((200, "", LINE.encode()), (200, "", LINE.encode()))
    made, kept, _ = submitter(script)
    calls = [0]

    def refuse_once(text: str) -> StoredCheckpoint:
        calls[0] += 1
        if calls[0] == 1:
            raise UnknownWitness("not a key this log knows")
        kept.append(text)
        return LATEST

    made.add_cosignature = refuse_once
    made.submit_due(0.0)
    witness: Witness = made.witnesses[0]
    assert witness.failures == 1 and witness.size == 0
    made.submit_due(witness.next_try)
    assert kept == [NOTE + LINE] and witness.failures == 0 and witness.size == 8


def test_nothing_is_sent_while_another_process_signs() -> None:
    script = Script()
    made, _, _ = submitter(script, leading=False)
    made.submit_due(0.0)
    assert script.sent == []


def test_witness_urls() -> None:
    assert check_url("https://w.example/prefix/") == "https://w.example/prefix"
    for bad in (
        "w.example",
        "http://",
        "http://u:p@w.example",
        "http://w.example?x=1",
        "http://w:99999",
    ):
        with pytest.raises(ValueError):
            check_url(bad)
