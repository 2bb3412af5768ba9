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
