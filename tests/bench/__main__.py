"""``python -m tests.bench``: every benchmark, figures beside their baselines."""

from tests.bench import audit, engine, projections, restart, service, watch


def main() -> None:
    for report in (
        engine.report,
        service.report,
        projections.report,
        audit.report,
        restart.report,
        watch.report,
    ):
        for line in report():
            print(line, flush=True)


if __name__ == "__main__":
    main()
