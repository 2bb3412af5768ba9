"""The one place that assembles thirteen's processes (after cosmicpython's ``bootstrap``).

- ``open_app`` (``service.opening``): the application on the configured store;
- ``service.bootstrap.serving``: a serving process (``thirteen serve``): ``start``,
  ``serve_forever``; with ``background="worker"`` it keeps neither the views nor the
  transparency log, and serves what a worker stores; ``service.bootstrap.assembly`` puts its
  parts together, and ``Running`` (``service.bootstrap.running``) is what it started;
  ``ServerOnThread`` (``service.bootstrap.on_thread``) starts one on a thread of its own;
- ``service.bootstrap.working``: a worker process (``thirteen worker``): the views' projector
  and the transparency log's appender and signer, one leader among the workers of a store.

``thirteen serve``, ``thirteen worker``, the demo's own server, the tests' servers and the
bench all start here. The serving names are imported when first used, so that a worker
(which serves no gRPC) does not import the gRPC adapter.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from service.bootstrap.backgrounds import BACKGROUNDS

if TYPE_CHECKING:
    from service.bootstrap.on_thread import ServerOnThread
    from service.bootstrap.running import Running
    from service.bootstrap.serving import serve_forever, start

__all__ = ["BACKGROUNDS", "Running", "ServerOnThread", "serve_forever", "start"]

_HOMES = {
    "Running": "running",
    "ServerOnThread": "on_thread",
    "serve_forever": "serving",
    "start": "serving",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(f"service.bootstrap.{_HOMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
