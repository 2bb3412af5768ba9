"""How commands reach a process's one writer thread and how each caller is answered: a queue of
jobs, the thread that takes them in batches (``Writer._batch`` runs one), answers handed back to
a waiting thread or event loop, a command that lost a race queued again after a pause, and every
job still queued answered UNAVAILABLE when the writer stops."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import copy
import functools
import queue
import random
import threading
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from service.errors import Conflict, Unavailable
from service.eventstore.answers import Answer, LoopAnswer, Present, ThreadAnswer, settle_all

log = structlog.get_logger("thirteen.writer")

RETRIES = 10
MAX_BATCH = 64  # commands per transaction: enough to share one commit among all callers


@dataclass
class Job:
    run: Callable[[], Any]
    present: Present | None
    answer: Answer
    attempt: int = 0
    trace: Any = None  # with a ``JobTracer``: what it marked when the job was queued


class JobTracer(Protocol):
    """Told where each job goes through the writer (``service.tracing``), when tracing is on:
    without one the writer does no tracing work at all."""

    def queued(self) -> Any:
        """On the caller's thread as it queues a job: a mark of the caller's trace (None when
        it has none), handed back below."""
        ...

    def taken(self, marks: Sequence[Any]) -> None:
        """On the writer's thread, as a batch of jobs with these marks begins."""
        ...

    def committed(self, marks: Sequence[tuple[Any, Sequence[int]]], started_ns: int) -> None:
        """The batch is durable: each job's mark with the log positions of its events; its
        transaction began at ``started_ns`` (``time.time_ns()``)."""
        ...


class CommandQueue:
    """The queue and the one thread; a subclass runs each batch of jobs (``_batch``)."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._ident = -1
        self._start = threading.Lock()
        self._stopped = False
        self.tracer: JobTracer | None = None  # tracing is off without one

    def is_current(self) -> bool:
        return threading.get_ident() == self._ident

    def submit(self, run: Callable[[], Any], present: Present | None = None) -> Future[Any]:
        """Queue a command; the future holds ``present(result)`` (or the result) once the
        command's events are durable, or its error."""
        answer = ThreadAnswer()
        self._enqueue(run, present, answer)
        return answer.future

    def perform(self, run: Callable[[], Any], present: Present | None = None) -> Awaitable[Any]:
        """``submit`` for a coroutine on the running loop: an asyncio future."""
        answer = LoopAnswer(asyncio.get_running_loop())
        self._enqueue(run, present, answer)
        return answer.future

    def _enqueue(self, run: Callable[[], Any], present: Present | None, answer: Answer) -> None:
        job = Job(functools.partial(contextvars.copy_context().run, run), present, answer)
        if self.tracer is not None:
            job.trace = self.tracer.queued()
        with self._start:
            if not self._stopped:
                if self._thread is None:
                    self._thread = self._started()
                self._queue.put(job)
                return
        _stopping([job])

    def call(self, run: Callable[[], Any]) -> Any:
        """Run a command and wait for it. The result is a copy: the writer goes on changing
        its own aggregates after it returns."""
        if self.is_current():
            return run()
        return self.submit(run, copy.deepcopy).result()

    def stop(self) -> None:
        """Finish the queued commands, then end the thread; a command queued after that (a
        retry's timer, a caller racing the stop) is answered UNAVAILABLE."""
        with self._start:
            self._stopped = True
            thread = self._thread
        if thread is not None:
            self._queue.put(None)
            thread.join(timeout=30)
        left = []
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                left.append(job)
        _stopping(left)

    def _requeue(self, job: Job) -> None:
        with self._start:
            if not self._stopped:
                self._queue.put(job)
                return
        _stopping([job])

    def _started(self) -> threading.Thread:
        ready = threading.Event()

        def main() -> None:
            self._ident = threading.get_ident()
            ready.set()
            self._run()

        thread = threading.Thread(target=main, name="writer", daemon=True)
        thread.start()
        ready.wait()
        return thread

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            jobs = [job]
            while len(jobs) < MAX_BATCH:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._queue.put(None)  # stop after this batch
                    break
                jobs.append(more)
            try:
                self._batch(jobs)
            except BaseException as error:  # never lose the thread, nor leave a caller waiting
                log.exception("writer_failed")
                for j in jobs:
                    if not j.answer.answered():
                        j.answer.give(None, error)
            self._hand_over(jobs)

    @staticmethod
    def _hand_over(jobs: list[Job]) -> None:
        """Settle the coroutines' answers, one call onto each loop for the whole batch."""
        waiting: dict[asyncio.AbstractEventLoop, list[LoopAnswer]] = {}
        for job in jobs:
            if isinstance(job.answer, LoopAnswer) and job.answer.outcome is not None:
                waiting.setdefault(job.answer.loop, []).append(job.answer)
        for loop, answers in waiting.items():
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting
                loop.call_soon_threadsafe(settle_all, answers)

    def _batch(self, jobs: list[Job]) -> None:
        """Run ``jobs`` and answer each of them."""
        raise NotImplementedError

    def _retry_later(self, job: Job) -> None:
        job.attempt += 1
        if job.attempt >= RETRIES:
            error = Conflict(
                f"gave up after {RETRIES} concurrent updates of the same records; retry the call"
            )
            job.answer.give(None, error)
            self._hand_over([job])
            return
        pause = random.uniform(0, min(0.05, 0.001 * 2**job.attempt))
        timer = threading.Timer(pause, self._requeue, (job,))
        timer.daemon = True
        timer.start()


def _stopping(jobs: list[Job]) -> None:
    for job in jobs:
        job.answer.give(None, Unavailable("the server is stopping; retry on another replica"))
    CommandQueue._hand_over(jobs)
