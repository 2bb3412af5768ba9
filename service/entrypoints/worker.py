"""``thirteen worker``: keep a store's views and transparency log beside the serving processes
(``serve --background worker``) until SIGTERM or SIGINT (``service.bootstrap.working``). One
worker of a store leads each; the others stand by and take over when it dies."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from service.entrypoints.configuring import log_effective
from service.entrypoints.log_flags import register_transparency
from service.entrypoints.options import Commands, add_data, add_log_level
from service.entrypoints.starting import Refused, add_metrics, listening_metrics, say, say_metrics

if TYPE_CHECKING:
    from service.application import Thirteen
    from service.metrics import Metrics
    from service.transparency.options import LogOptions


def register(commands: Commands) -> None:
    """``worker``."""
    worker = commands.add_parser(
        "worker",
        help="keep the views and the transparency log for `serve --background worker` "
        "(one worker leads, the others stand by)",
    )
    add_data(worker)
    add_log_level(worker)
    add_metrics(worker, "this worker's ")
    register_transparency(worker)
    worker.set_defaults(run=work)


def work(args: argparse.Namespace) -> int:
    """Keep the views and the log until SIGTERM or SIGINT."""
    from service import logging as service_logging

    service_logging.configure(args.log_level)
    metrics = listening_metrics(args)
    if isinstance(metrics, int):
        return metrics
    try:
        return _work(args, metrics)
    finally:
        if metrics is not None:
            metrics.close()


def _work(args: argparse.Namespace, metrics: Metrics | None) -> int:
    from service.bootstrap.working import work_forever

    try:
        app, transparency = _opened(args)
    except Refused as refused:
        print(f"thirteen worker: {refused}", file=sys.stderr)
        return refused.status
    work_forever(
        app,
        transparency=transparency,
        metrics=metrics,
        on_started=lambda _: _banner(args, app, metrics),
    )
    return 0


def _opened(args: argparse.Namespace) -> tuple[Thirteen, LogOptions]:
    """The application on the store and the log's key, read (or created) and checked; or
    ``Refused``. A worker deals nothing: it needs no seed key."""
    from service.entrypoints.starting import checked_log, opened_store

    app = opened_store(Path(args.data))
    try:
        return app, checked_log(args, app, "worker")
    except BaseException:
        app.close()
        raise


def _banner(args: argparse.Namespace, app: Thirteen, metrics: Metrics | None) -> None:
    log_effective(args)
    say(
        f"thirteen: working on the views and the transparency log (store: {app.database.kind});"
        " serve them with `thirteen serve --background worker`"
    )
    say_metrics(metrics)
