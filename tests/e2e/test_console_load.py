"""What the dispute console asks of the service at once (issue 13 review): the service's worker
threads are the game's too, so the console makes at most ``--max-service-calls`` calls at once
and answers a page that cannot start its call soon with 503 and Retry-After, rather than
queueing calls without bound; a round page's two calls, independent, go out together.

A ``Gate`` between the real console process and a real server holds the calls, so the test,
not a clock, decides how many are under way."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from service.web.backend import QUEUE_SECONDS, RETRY_AFTER
from service.web.markup import link
from tests.e2e.helpers import arrange_well, deal, reveal, seated_table
from tests.support.clock import ManualClock
from tests.support.console import SCRIPT, Console, Gate
from tests.support.server import ServerThread


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Gate, str]]:
    data = tmp_path_factory.mktemp("console-load") / "data"
    server = ServerThread(data, {"THIRTEEN_STORE": "sqlite"}, ManualClock())
    seated_table(server, "t", {"ann": 5000, "bo": 5000})
    dealt = deal(server, "t")
    arrange_well(server, dealt)
    reveal(server, dealt.round_id)
    gate = Gate(server.address)
    yield gate, dealt.round_id
    gate.stop()
    server.stop()


@pytest.fixture
def gate(served: tuple[Gate, str]) -> Iterator[Gate]:
    found, _ = served
    found.arrived.clear()
    yield found
    found.open()


def test_the_round_page_asks_for_the_export_and_the_audit_at_once(
    served: tuple[Gate, str], gate: Gate
) -> None:
    _, round_id = served
    console = Console(gate.address)
    try:
        gate.close()
        with ThreadPoolExecutor(1) as pool:
            asked = pool.submit(console.get, link("/rounds", round_id))
            # Both held at the gate together: neither call waited for the other's answer.
            gate.wait_for(
                lambda arrived: {"ExportRound", "AuditRound"} <= set(arrived),
                "the round page's ExportRound and AuditRound, both under way",
            )
            gate.open()
            page = asked.result(timeout=60)
        assert page.status == 200, page.text
        assert "passes" in page.text and 'class="card' in page.text
    finally:
        console.stop()


def test_a_page_that_cannot_start_its_call_is_503_with_retry_after_not_queued(
    served: tuple[Gate, str], gate: Gate
) -> None:
    _, round_id = served
    console = Console(gate.address, "--max-service-calls", "2")
    try:
        gate.close()
        with ThreadPoolExecutor(2) as pool:
            held = [pool.submit(console.get, link("/tables", "t")) for _ in range(2)]
            gate.wait_for(lambda arrived: len(arrived) == 2, "two calls under way")
            busy = console.get(link("/rounds", round_id))
            assert gate.arrived == ["ListRoundResults"] * 2  # the third never reached it
            gate.open()
            assert [f.result(timeout=60).status for f in held] == [200, 200]
        assert busy.status == 503, busy.text
        assert busy.headers["Retry-After"] == str(RETRY_AFTER)
        assert busy.headers["Content-Type"].startswith("text/html")
        assert (
            "the console is busy: 2 calls to the service are under way (--max-service-calls)"
            f" and ExportRound waited {QUEUE_SECONDS:g} s for one of them" in busy.text
        )
        assert console.lines("console_busy"), console.log
        assert console.get(link("/rounds", round_id)).status == 200  # the slots are free again
    finally:
        console.stop()


@pytest.mark.parametrize("given", ["1", "65", "four"])
def test_max_service_calls_must_allow_a_round_page_s_two_calls(given: str) -> None:
    done = subprocess.run(
        [str(SCRIPT), "console", "--max-service-calls", given],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "--max-service-calls: must be a whole number from 2 to 64" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
