"""ListRounds' read on both view stores (issue 22, a cost bound per call): a page is one forward
range read of the ``listed_rounds`` primary key ``(table_id, number)`` with no sort, so a page
token deep into a table of thousands of rounds costs what the first page costs."""

from __future__ import annotations

from projections.store import ViewStore
from tests.integration.test_player_rounds_queries import plan, views

__all__ = ["views"]  # the fixture, on SQLite and PostgreSQL


def test_a_list_rounds_page_reads_the_primary_key_forwards_without_sorting(
    views: ViewStore,
) -> None:
    found = plan(views, ViewStore.LISTED_PAGE, ("t", 10**6, 101))
    if views.postgres:
        assert "Index Scan using thirteen_view_listed_rounds_pkey" in found, found
        assert "Sort" not in found, found
    else:
        assert "USING INDEX sqlite_autoindex_view_listed_rounds_1" in found, found
        assert "(table_id=? AND number>?)" in found, found
        assert "TEMP B-TREE" not in found, found
