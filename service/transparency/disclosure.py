"""Whether an event may be published to anyone now: the entry bundles of the log's tiles
(``service.transparency.tiles``) hold whole events, and are served over HTTP without asking who
reads, so a bundle is served only once none of its events tells what is still hidden.

- **A round's events** (its deal holds every hand, its submissions the arrangements) once the
  round is over (``domain.visibility.is_public``: R10.4, R12.6), as ``GetRound`` shows them to
  every role then.
- **A table's event that holds the next server seed in clear** (class version 1, written by the
  first release: ``domain.table``, issue 23) once the table has ended a round after it: the round
  dealt from that seed is over, and its ``Revealed`` published the seed (R12.1). Every other
  table event, and every wallet event, is public as it is stored.

The hashes (the tiles) are served whatever the events hold: a leaf hash tells nothing a
``GetInclusionProof`` by position does not (docs/concepts/transparency-log.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError

from domain.round import Round
from domain.tlog.chain import StoredRecord
from domain.visibility import is_public
from service.application import Thirteen
from service.bounded import Bounded

ROUND = "domain.round:Round."
TABLE = "domain.table:Table."
ROUND_ENDED = TABLE + "RoundEnded"
KNOWN_PUBLIC = 50_000  # streams remembered as public (once public, always)


class Disclosure:
    """Which stored events of ``app`` are public yet."""

    def __init__(self, app: Thirteen) -> None:
        self.app = app
        self._public: Bounded[tuple[str, int], bool] = Bounded(
            KNOWN_PUBLIC, 8 * 2**20, lambda _: 160
        )

    def withheld(self, records: Sequence[StoredRecord]) -> str | None:
        """Why some of ``records`` may not be published yet (naming the first), or None."""
        for record in records:
            if not self._is_public(record):
                what = "round" if record.topic.startswith(ROUND) else "table"
                return (
                    f"the event at position {record.position} ({what} {record.stream}) holds "
                    "what is hidden until its round is over"
                )
        return None

    def _is_public(self, record: StoredRecord) -> bool:
        if record.topic.startswith(ROUND):
            key = (record.stream, 0)  # every event of a round: public together
        elif record.topic.startswith(TABLE) and record.state.get("server_seed"):
            key = (record.stream, record.version)
        else:
            return True
        try:
            return self._public.get(key)
        except KeyError:
            pass
        public = (
            self._round_over(record.stream)
            if key[1] == 0
            else self._seed_used(record.stream, record.version)
        )
        if public:
            self._public.put(key, True)
        return public

    def _round_over(self, stream: str) -> bool:
        try:
            found: object = self.app.repository.get(UUID(stream))
        except AggregateNotFoundError:
            return False
        return isinstance(found, Round) and is_public(found)

    def _seed_used(self, stream: str, version: int) -> bool:
        later = self.app.recorder.select_events(UUID(stream), gt=version)
        return any(event.topic == ROUND_ENDED for event in later)
