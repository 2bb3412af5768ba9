"""Game recall's reads on both view stores: a page is one backward range read of the
``player_rounds`` primary key with no sort, and the balances around a round are found from the
round's journal entries (their index), not by walking the players' whole ledgers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from projections.store import ViewStore
from service.opening import open_app
from tests.support.stores import store_environ


@pytest.fixture(params=["sqlite", "postgres"])
def views(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ViewStore]:
    with store_environ(request.param, tmp_path) as environ:
        app = open_app(tmp_path / "data", environ=environ)
        store, _ = app.database.views()
        store.create()
        try:
            yield store
        finally:
            store.close()
            app.close()


def plan(views: ViewStore, statement: str, params: tuple[Any, ...]) -> str:
    """The query plan as text. PostgreSQL would scan the tiny tables here whole; with
    sequential scans priced out it shows the plan it takes once they are large."""
    if views.postgres:
        with views.transaction() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute(views._sql("EXPLAIN " + statement), params)
            return "\n".join(str(r[0]) for r in cursor.fetchall())
    rows = views._query("EXPLAIN QUERY PLAN " + statement, params)
    return "\n".join(str(r[-1]) for r in rows)


def test_a_recall_page_reads_the_primary_key_backwards_without_sorting(views: ViewStore) -> None:
    found = plan(views, ViewStore.RECALL_PAGE, ("ann", 10**6, 51))
    if views.postgres:
        assert "Index Scan Backward using thirteen_view_player_rounds_pkey" in found, found
        assert "Sort" not in found, found
    else:
        assert "USING INDEX sqlite_autoindex_view_player_rounds_1" in found, found
        assert "(player_id=? AND position<?)" in found, found
        assert "TEMP B-TREE" not in found, found


def test_the_balances_around_a_round_are_read_through_the_round_s_journal_index(
    views: ViewStore,
) -> None:
    """One query a round (issue 10: not one a player): its journal entries by their round
    index, then their legs by the legs' transaction index."""
    found = plan(views, ViewStore.ROUND_LEGS, ("r1",))
    if views.postgres:
        assert "journal_by_round" in found, found
        assert "thirteen_view_legs_by_txn" in found, found
    else:
        assert "USING INDEX view_journal_by_round (round_id=?)" in found, found
        assert "USING INDEX view_legs_by_txn (txn_id=?)" in found, found
