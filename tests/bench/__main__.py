"""``python -m tests.bench [SECTION ...]``: every benchmark (or only the named sections),
figures beside their baselines."""

import sys
from collections.abc import Callable, Iterable

from tests.bench import (
    audit,
    encoding,
    engine,
    heavy,
    metrics,
    projections,
    restart,
    service,
    transparency,
    watch,
    worker,
)

SECTIONS: dict[str, Callable[[], Iterable[str]]] = {
    "engine": engine.report,
    "encoding": encoding.report,
    "service": service.report,
    "heavy": heavy.report,
    "projections": projections.report,
    "audit": audit.report,
    "restart": restart.report,
    "watch": watch.report,
    "transparency": transparency.report,
    "metrics": metrics.report,
    "worker": worker.report,
}


def main(names: list[str]) -> int:
    unknown = [name for name in names if name not in SECTIONS]
    if unknown:
        print(
            f"unknown section {', '.join(unknown)}; the sections are {', '.join(SECTIONS)}",
            file=sys.stderr,
        )
        return 2
    for name in names or SECTIONS:
        for line in SECTIONS[name]():
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
