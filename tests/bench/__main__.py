"""``python -m tests.bench``: every benchmark, figures beside their baselines."""

from tests.bench import engine, service


def main() -> None:
    for line in engine.report():
        print(line, flush=True)
    for line in service.report():
        print(line, flush=True)


if __name__ == "__main__":
    main()
