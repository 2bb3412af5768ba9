"""``start`` on a thread of its own (``service.bootstrap.serving``), for a process that does
something else on its main thread: the demo's bots, a test's client."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from service.application import Thirteen
from service.bootstrap.running import Running
from service.bootstrap.serving import start

T = TypeVar("T")


class ServerOnThread:
    """``start`` on an event loop of a thread of its own, for a process whose main thread does
    something else (the demo's bots, a test's client): ``running`` once started, ``stop()``
    shuts it down gracefully."""

    def __init__(self, app: Thirteen, address: str = "127.0.0.1:0", **options: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="server", daemon=True)
        self.thread.start()
        try:
            self.running: Running = self.call(start(app, address, **options))
        except BaseException:
            self.end_loop()
            raise

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        """Run ``coroutine`` on the server's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=timeout)

    def stop(self, grace: float = 1.0) -> None:
        """Stop the server (calls in flight get ``grace`` seconds), then its loop."""
        if self.thread.is_alive():
            self.call(self.running.stop(grace=grace))
            self.end_loop()

    def end_loop(self) -> None:
        """Stop the loop and its thread (the server, if any, must be stopped first)."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        if not self.thread.is_alive():
            self.loop.close()
