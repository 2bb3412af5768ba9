"""What the commands that run a process of the store share while they start (``serve`` and
``worker``): the one-line refusal that stops them, the metrics endpoint they open before the
store, the store and the transparency log's options, and the line that tells a person where
the metrics are."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from service.entrypoints.options import host_port
from service.tools.terminal import EXIT_BAD_INPUT

if TYPE_CHECKING:
    from service.application import Thirteen
    from service.metrics import Metrics
    from service.transparency.options import LogOptions


class Refused(Exception):
    """The process cannot start: the message is its one line, ``status`` its exit status."""

    def __init__(self, message: str, status: int = EXIT_BAD_INPUT) -> None:
        super().__init__(message)
        self.status = status


def add_metrics(parser: argparse.ArgumentParser, whose: str = "") -> None:
    """``--metrics HOST:PORT``, where ``listening_metrics`` serves ``whose`` metrics."""
    parser.add_argument(
        "--metrics",
        type=host_port,
        metavar="HOST:PORT",
        help=f"serve {whose}Prometheus metrics over plain HTTP there, at /metrics "
        "(default: none; port 0 picks one)",
    )


def listening_metrics(args: argparse.Namespace) -> Metrics | int | None:
    """The metrics, listening on ``--metrics`` (None without it); or, after one line saying
    why they cannot, the exit status: 2 for an address that is not HOST:PORT, 1 for one that is
    taken or not this machine's (as for the gRPC port, and ``thirteen console``)."""
    if args.metrics is None:
        return None
    from service.metrics import EndpointError, Metrics

    metrics = Metrics()
    try:
        metrics.listen(args.metrics)
    except EndpointError as error:
        print(f"thirteen {args.command}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT if error.malformed else 1
    return metrics


def opened_store(data: Path, seed_key: Path | None = None) -> Thirteen:
    """The application on the configured store (``service.opening.open_app``); or ``Refused``:
    for a store configured wrongly, and with status 1 for one unreachable or unusable."""
    from service.eventstore.storage import StoreConfigError
    from service.opening import open_app

    try:
        return open_app(data, seed_key=seed_key)
    except StoreConfigError as error:
        raise Refused(str(error)) from None
    except Exception as error:  # the database is unreachable or unusable
        raise Refused(f"cannot open the event store: {error}", 1) from None


def checked_log(args: argparse.Namespace, app: Thirteen, command: str) -> LogOptions:
    """The transparency log's options from the flags of ``thirteen COMMAND``, its key read (or
    created) and checked now (``log_options``); or ``Refused`` saying why they cannot be used."""
    from service.tools.log_keys import log_options

    transparency = log_options(args, app, command)
    if isinstance(transparency, str):
        raise Refused(transparency)
    return transparency


def say(line: str) -> None:
    """One line on stderr in one write: the log lines other threads write there meanwhile (the
    transparency log's, the projector's) never land inside it, as they did between ``print``'s
    two writes (the text, then its end of line), breaking a line that people and scripts read."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def say_metrics(metrics: Metrics | None) -> None:
    """Where the metrics are served, on stderr (nothing without them)."""
    if metrics is not None:
        say(f"thirteen: serving metrics on http://{metrics.address}/metrics")
