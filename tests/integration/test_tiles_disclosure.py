"""What the log's entry bundles may publish (``service.transparency.disclosure``), on the store
the first release wrote (``tests/fixtures/v1_store``, copied, never changed): its tables' events
hold each next server seed in clear (class version 1), public only once the table has ended a
round after it (R12.1: that round's reveal published the seed); a round's events are public once
it is over (R10.4); wallet events as they are stored."""

from __future__ import annotations

import shutil
from pathlib import Path

from domain.tlog.chain import StoredRecord
from service.evidence import record_of
from service.opening import open_app
from service.transparency.disclosure import ROUND, ROUND_ENDED, TABLE, Disclosure

FIXTURE = Path(__file__).parent.parent / "fixtures" / "v1_store"


def test_r12_1_a_first_release_seed_in_clear_is_published_only_once_its_round_is_over(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    shutil.copytree(FIXTURE, data)
    app = open_app(data, environ={"THIRTEEN_STORE": "sqlite"})
    try:
        records = [
            record_of(n.id, n) for n in app.recorder.select_notifications(start=1, limit=10_000)
        ]
        disclosure = Disclosure(app)
        ended_after: dict[str, int] = {}  # each table stream: the version of its last RoundEnded
        for record in records:
            if record.topic == ROUND_ENDED:
                ended_after[record.stream] = record.version
        seeds = [r for r in records if r.topic.startswith(TABLE) and r.state.get("server_seed")]
        assert seeds, "the fixture's tables hold seeds in clear"
        verdicts = {(r.stream, r.version): disclosure.withheld([r]) is None for r in seeds}
        expected = {(r.stream, r.version): ended_after.get(r.stream, 0) > r.version for r in seeds}
        assert verdicts == expected
        assert True in verdicts.values() and False in verdicts.values()  # both kinds are there

        rounds = [r for r in records if r.topic.startswith(ROUND)]
        over = {r.stream for r in rounds if r.topic.endswith((".Revealed", ".Abandoned"))}
        for record in rounds:
            assert (disclosure.withheld([record]) is None) == (record.stream in over), record.name
        others: list[StoredRecord] = [r for r in records if not r.topic.startswith((ROUND, TABLE))]
        assert others and disclosure.withheld(others) is None
    finally:
        app.close()
