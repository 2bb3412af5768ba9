"""Issue 10: what a reader of the log may take from a process's memory of its latest commits
(``service.eventstore.eventlog.from_memory``): only positions that continue the reader's own
without a gap, and "that is all" only where nothing else can have been committed. The stores
themselves are in ``tests/integration/test_log_feed.py``."""

from __future__ import annotations

from service.eventstore.eventlog import from_memory


def entries(*positions: int) -> list[tuple[int, str]]:
    return [(p, f"e{p}") for p in positions]


def test_memory_gives_the_run_right_after_the_position_up_to_a_gap() -> None:
    recent = entries(4, 5, 6, 9, 10)
    assert from_memory(recent, 3, 10, only_writer=False) == (entries(4, 5, 6), False)
    assert from_memory(recent, 5, 10, only_writer=True) == (entries(6), False)  # 7, 8: the log
    assert from_memory(recent, 3, 2, only_writer=False) == (entries(4, 5), True)  # the limit


def test_memory_is_all_a_reader_needs_only_up_to_a_sole_writers_latest_commit() -> None:
    recent = entries(4, 5, 6, 9, 10)
    assert from_memory(recent, 8, 10, only_writer=True) == (entries(9, 10), True)
    assert from_memory(recent, 10, 10, only_writer=True) == ([], True)  # caught up
    assert from_memory(recent, 8, 10, only_writer=False) == (entries(9, 10), False)  # a replica
    assert from_memory(recent, 10, 10, only_writer=False) == ([], False)  # may have committed


def test_memory_sends_a_reader_to_the_log_where_it_cannot_prove_nothing_lies_between() -> None:
    recent = entries(4, 5, 6, 9, 10)
    assert from_memory(recent, 2, 10, only_writer=True) == ([], False)  # 3 is not this process's
    assert from_memory(recent, 6, 10, only_writer=True) == ([], False)  # 7 and 8 are another's
    assert from_memory(recent, 11, 10, only_writer=True) == ([], False)  # ahead of memory
    assert from_memory([], 0, 10, only_writer=True) == ([], False)


def test_a_limit_of_one_gives_one_entry_and_a_limit_of_zero_none_and_no_log_read() -> None:
    recent = entries(4, 5, 6)
    assert from_memory(recent, 3, 1, only_writer=False) == (entries(4), True)
    assert from_memory(recent, 3, 0, only_writer=False) == ([], True)
    assert from_memory([], 3, 0, only_writer=False) == ([], True)
