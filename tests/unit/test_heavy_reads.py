"""Heavy reads (issue 22, a cost bound per call): ``Runner.heavy`` runs them one at a time over
every caller, first come first served, and after each the next waits ``HEAVY_REST`` times the
CPU time it used, so that callers in a loop cannot take more than their share of the server."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from service.rpc import runner
from service.rpc.runner import Runner


def _busy(seconds: float) -> None:
    """CPU work for about ``seconds`` of this thread's time."""
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        pass


def test_heavy_reads_run_one_at_a_time_in_arrival_order_each_after_the_last_s_rest() -> None:
    spans: list[tuple[int, float, float, float]] = []  # (caller, start, end, CPU used)
    running = threading.Semaphore(1)

    def read(caller: int) -> int:
        assert running.acquire(blocking=False), "two heavy reads at once"
        try:
            started, cpu = time.monotonic(), time.thread_time()
            _busy(0.02)
            spans.append((caller, started, time.monotonic(), time.thread_time() - cpu))
        finally:
            running.release()
        return caller

    async def callers() -> list[int]:
        run = Runner(ThreadPoolExecutor(4))
        calls = []
        for caller in range(4):
            calls.append(asyncio.create_task(run.heavy(read, caller)))
            await asyncio.sleep(0)  # each queued before the next arrives
        return list(await asyncio.gather(*calls))

    assert asyncio.run(callers()) == [0, 1, 2, 3]
    assert [caller for caller, *_ in spans] == [0, 1, 2, 3]
    for (_, _, ended, used), (_, started, _, _) in itertools.pairwise(spans):
        assert started - ended >= used * runner.HEAVY_REST * 0.9  # the clocks differ a little


def test_a_heavy_read_whose_caller_left_keeps_its_turn_and_one_left_queued_never_runs() -> None:
    """A caller cancelled (its deadline passed) while its read runs: the next read starts only
    once that one's thread is done, after its rest. One cancelled while still queued: its read
    never starts (issue 22)."""
    order: list[str] = []
    release = threading.Event()
    first_started = threading.Event()

    def read(name: str) -> str:
        order.append(f"{name} starts")
        if name == "first":
            first_started.set()
            release.wait(30)
            _busy(0.02)
        order.append(f"{name} ends")
        return name

    async def callers() -> str:
        run = Runner(ThreadPoolExecutor(4))
        first = asyncio.create_task(run.heavy(read, "first"))
        await asyncio.to_thread(first_started.wait, 30)
        queued = asyncio.create_task(run.heavy(read, "queued"))
        last = asyncio.create_task(run.heavy(read, "last"))
        await asyncio.sleep(0.05)
        first.cancel()  # its read goes on in its thread
        queued.cancel()  # its read has not started
        await asyncio.sleep(0.05)
        assert order == ["first starts"], order  # nothing started beside the first
        release.set()
        answer = await last
        run.executor.shutdown(wait=True)
        return answer

    assert asyncio.run(callers()) == "last"
    assert order == ["first starts", "first ends", "last starts", "last ends"]
