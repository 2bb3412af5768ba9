"""The log's tree beside the events, in the event store's own database (the SQLite file or the
PostgreSQL schema), through the event store's connections:

- ``tlog_nodes``: the hash of every perfect subtree of levels 0, 4, 8 … once complete
  (``domain.tlog.merkle``; level 0 are the leaves): about 1.07 rows per event. They never change;
  a proof reads only the O(log² n) subtrees (at most) it needs, each folded from at most 8
  stored ones.
- ``tlog_gaps``: the leaves whose event position does not follow the previous leaf's (leaf 0,
  and any number the event store skipped): position ↔ leaf index without a row per event.
- ``tlog_state``: the tree's size and the position of its last leaf, advanced by
  compare-and-set with the nodes of each append, in one transaction.
- ``tlog_checkpoints``: every signed checkpoint (size, root, note), and
  ``tlog_cosignatures``: the witnesses' cosignature lines, per checkpoint and witness key, the
  newest (by the time it carries, ``cosigned_at``) kept. Stores from before ``cosigned_at``
  get the column at start; their lines count as older than any new one.

Nodes, gaps and checkpoints refuse UPDATE and DELETE, as the events do.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from domain.tlog.merkle import Node, node_hash
from service.application import Thirteen
from service.bounded import Bounded

CACHED_NODES = 200_000  # node hashes kept in memory, at most: the upper levels stay hot
CACHED_NODE_BYTES = 4 * 2**20  # and what they weigh together (about 13,000 nodes)
NODE_WEIGHT = 320  # bytes a cached node holds: its key, its hash and the cache's entry
STRIDE = 4
"""Only the perfect subtrees of every STRIDE-th level are stored (the leaves, 16 leaves, 256 …):
about 1.07 rows per event instead of 2; any other is folded from at most 8 stored ones."""

_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS {p}nodes (level INTEGER NOT NULL, idx BIGINT NOT NULL, "
    "hash {blob} NOT NULL, PRIMARY KEY (level, idx)){without_rowid}",
    "CREATE TABLE IF NOT EXISTS {p}gaps (idx BIGINT PRIMARY KEY, position BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {p}state (name TEXT PRIMARY KEY, value BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {p}checkpoints (size BIGINT PRIMARY KEY, root {blob} NOT NULL, "
    "note TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {p}cosignatures (size BIGINT NOT NULL, witness TEXT NOT NULL, "
    "line TEXT NOT NULL, cosigned_at BIGINT, PRIMARY KEY (size, witness))",
]
_APPEND_ONLY = ("nodes", "gaps", "checkpoints")
_SQLITE_GUARD = (
    "CREATE TRIGGER IF NOT EXISTS {p}{table}_no_{what} BEFORE {what} ON {p}{table} "
    "BEGIN SELECT RAISE(ABORT, 'the log''s tree is append-only'); END"
)


def _node_cache() -> Bounded[Node, bytes]:
    return Bounded(CACHED_NODES, CACHED_NODE_BYTES, lambda _: NODE_WEIGHT)


class StaleTree(Exception):
    """Another appender moved the tree first; reload and carry on from there."""


@dataclass(frozen=True)
class TreeState:
    size: int  # leaves
    position: int  # the event position of the last leaf (0 for an empty tree)


@dataclass(frozen=True)
class StoredCheckpoint:
    size: int
    root: bytes
    note: str  # the log's signed note, without cosignatures


class TreeStore:
    """The tree's tables, on the application's event store."""

    def __init__(self, app: Thirteen) -> None:
        self.app = app
        self.database = app.database
        self.postgres = app.database.kind == "postgres"
        self.prefix = app.database.table_prefix + "tlog_"
        self._nodes: Bounded[Node, bytes] = _node_cache()
        self._gaps: tuple[tuple[int, int], ...] = ()  # (leaf index, position), both ascending
        self._gaps_cover = 0  # the gaps of the first this many leaves are all in ``_gaps``
        self._gaps_lock = threading.Lock()

    def forget(self) -> None:
        """Drop the cached node hashes (the next reads go to the store)."""
        self._nodes = _node_cache()

    def _sql(self, statement: str) -> str:
        statement = statement.replace("{p}", self.prefix)
        statement = statement.replace("{blob}", "BYTEA" if self.postgres else "BLOB")
        statement = statement.replace("{without_rowid}", "" if self.postgres else " WITHOUT ROWID")
        return statement.replace("?", "%s") if self.postgres else statement

    @contextmanager
    def _transaction(self, *, commit: bool) -> Iterator[Any]:
        with self.database.transaction(commit=commit) as cursor:
            yield cursor

    def _rows(self, statement: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._transaction(commit=False) as cursor:
            cursor.execute(self._sql(statement), params)
            return list(cursor.fetchall())

    def create(self) -> None:
        """Create what is missing (on PostgreSQL, under the start-up lock)."""
        with self._transaction(commit=True) as cursor:
            for statement in _SCHEMA:
                cursor.execute(self._sql(statement))
            self._add_cosigned_at(cursor)
            for table in _APPEND_ONLY:
                if self.postgres:
                    name = f"tlog_{table}_append_only"
                    cursor.execute(f'DROP TRIGGER IF EXISTS "{name}" ON {self.prefix}{table}')
                    schema = self.prefix.rsplit(".", 1)[0]
                    cursor.execute(
                        f'CREATE TRIGGER "{name}" BEFORE UPDATE OR DELETE ON '
                        f"{self.prefix}{table} FOR EACH ROW EXECUTE FUNCTION "
                        f"{schema}.thirteen_refuse_change()"
                    )
                else:
                    for what in ("UPDATE", "DELETE"):
                        cursor.execute(_SQLITE_GUARD.format(p=self.prefix, table=table, what=what))

    def _add_cosigned_at(self, cursor: Any) -> None:
        """The cosignatures' time column, on a store created before it (issue 12's first
        version); earlier lines keep NULL, older than any time."""
        if self.postgres:
            cursor.execute(
                self._sql("ALTER TABLE {p}cosignatures ADD COLUMN IF NOT EXISTS cosigned_at BIGINT")
            )
            return
        cursor.execute(self._sql("PRAGMA table_info({p}cosignatures)"))
        if "cosigned_at" not in {row["name"] for row in cursor.fetchall()}:
            cursor.execute(self._sql("ALTER TABLE {p}cosignatures ADD COLUMN cosigned_at BIGINT"))

    def exists(self) -> bool:
        """Whether the store holds the log's tables (a store never served with a log, such as
        one written before issue 12, holds none)."""
        if self.postgres:
            table = self.prefix + "checkpoints"
            rows = self._rows("SELECT to_regclass(?) IS NOT NULL AS found", (table,))
        else:
            rows = self._rows(
                "SELECT COUNT(*) > 0 AS found FROM sqlite_master WHERE type = 'table' AND name = ?",
                (self.prefix + "checkpoints",),
            )
        return bool(rows[0]["found"])

    # The tree ----------------------------------------------------------------------------

    def state(self) -> TreeState:
        rows = self._rows("SELECT name, value FROM {p}state")
        values = {r["name"]: int(r["value"]) for r in rows}
        return TreeState(values.get("size", 0), values.get("position", 0))

    def append(
        self,
        before: TreeState,
        after: TreeState,
        nodes: Sequence[tuple[Node, bytes]],
        gaps: Sequence[tuple[int, int]],
    ) -> None:
        """Store the nodes and gaps of the leaves from ``before.size`` to ``after.size`` and
        move the state there, in one transaction; ``StaleTree`` if the tree is not at
        ``before`` any more."""
        with self._transaction(commit=True) as cursor:
            if before.size == 0:
                cursor.execute(
                    self._sql(
                        "INSERT INTO {p}state (name, value) VALUES ('size', 0), ('position', 0) "
                        "ON CONFLICT (name) DO NOTHING"
                    )
                )
            cursor.execute(
                self._sql(
                    "UPDATE {p}state SET value = CASE name WHEN 'size' THEN ? ELSE ? END "
                    "WHERE (name = 'size' AND value = ?) OR (name = 'position' AND value = ?)"
                ),
                (after.size, after.position, before.size, before.position),
            )
            if _rowcount(cursor) != 2:
                raise StaleTree(f"the tree is no longer at {before.size} leaves")
            cursor.executemany(
                self._sql("INSERT INTO {p}nodes (level, idx, hash) VALUES (?, ?, ?)"),
                [(level, index, digest) for (level, index), digest in nodes if level % STRIDE == 0],
            )
            if gaps:
                cursor.executemany(
                    self._sql("INSERT INTO {p}gaps (idx, position) VALUES (?, ?)"), list(gaps)
                )

    def nodes(self, wanted: Iterable[Node]) -> dict[Node, bytes]:
        """The hashes of these perfect subtrees (each must be complete)."""
        found: dict[Node, bytes] = {}
        missing = []
        for node in wanted:
            try:
                cached = self._nodes.get(node)
            except KeyError:
                cached = None
            if cached is None:
                missing.append(node)
            else:
                found[node] = cached
        if missing:
            found.update(self._computed(missing))
        absent = [node for node in missing if node not in found]
        if absent:
            raise LookupError(f"the tree has no node {absent[0]}: it is behind the request")
        return found

    def _computed(self, wanted: list[Node]) -> dict[Node, bytes]:
        """Perfect subtrees from the stored nodes below them, in one query: a subtree of level
        L is folded from the (at most 2**(STRIDE-1)) stored ones of the level L - L % STRIDE."""
        parts, params = [], []
        for level, index in wanted:
            base = level - level % STRIDE
            span = 1 << (level - base)
            parts.append(
                "SELECT level, idx, hash FROM {p}nodes WHERE level = ? AND idx BETWEEN ? AND ?"
            )
            params += [base, index * span, (index + 1) * span - 1]
        stored: dict[Node, bytes] = {}
        for chunk in range(0, len(parts), 200):
            query = " UNION ALL ".join(parts[chunk : chunk + 200])
            for row in self._rows(query, params[3 * chunk : 3 * (chunk + 200)]):
                stored[(int(row["level"]), int(row["idx"]))] = bytes(row["hash"])
        found = {}
        for level, index in wanted:
            base = level - level % STRIDE
            span = 1 << (level - base)
            layer = [stored.get((base, j)) for j in range(index * span, (index + 1) * span)]
            if any(h is None for h in layer):
                continue  # not complete yet: the caller says so
            hashes = [h for h in layer if h is not None]
            while len(hashes) > 1:
                hashes = [node_hash(hashes[k], hashes[k + 1]) for k in range(0, len(hashes), 2)]
            found[(level, index)] = hashes[0]
            self._nodes.put((level, index), hashes[0])
        return found

    def run(self, level: int, first: int, count: int) -> list[bytes]:
        """The stored hashes of the perfect subtrees ``(level, first)`` on, ``count`` of them
        in order (``level`` a multiple of ``STRIDE``: a tile's, ``domain.tlog.tiles``)."""
        rows = self._rows(
            "SELECT hash FROM {p}nodes WHERE level = ? AND idx >= ? AND idx < ? ORDER BY idx",
            (level, first, first + count),
        )
        if len(rows) != count:
            raise LookupError(f"the tree has {len(rows)} of nodes {first}+{count} of level {level}")
        return [bytes(row["hash"]) for row in rows]

    def leaves(self, size: int) -> dict[int, bytes]:
        """The stored hashes of the first ``size`` leaves, by index (one read: the audit of a
        whole store compares them with the leaves it recomputed)."""
        rows = self._rows("SELECT idx, hash FROM {p}nodes WHERE level = 0 AND idx < ?", (size,))
        return {int(r["idx"]): bytes(r["hash"]) for r in rows}

    def _load_gaps(self, size: int) -> tuple[tuple[int, int], ...]:
        """The gaps, read from the store only when those of the first ``size`` leaves may not
        all be known yet (an audit asks about one tree size many times)."""
        with self._gaps_lock:
            if size <= self._gaps_cover:
                return self._gaps
            cover = self.state().size  # first: an append stores its gaps with its size
            last = self._gaps[-1][0] if self._gaps else -1
            rows = self._rows(
                "SELECT idx, position FROM {p}gaps WHERE idx > ? ORDER BY idx", (last,)
            )
            self._gaps += tuple((int(r["idx"]), int(r["position"])) for r in rows)
            self._gaps_cover = max(self._gaps_cover, cover)
            return self._gaps

    def leaf_index(self, position: int, size: int) -> int | None:
        """The leaf of the event at ``position`` among the first ``size`` leaves; None when
        none holds it (a number the event store skipped, or not yet in the tree)."""
        gaps = self._load_gaps(size)
        at = bisect.bisect_right(gaps, position, key=lambda gap: gap[1]) - 1
        if at < 0:
            return None
        index = gaps[at][0] + position - gaps[at][1]
        limit = gaps[at + 1][0] if at + 1 < len(gaps) else size
        return index if index < min(limit, size) else None

    def position(self, index: int) -> int:
        """The event position of leaf ``index``."""
        gaps = self._load_gaps(index + 1)
        at = bisect.bisect_right(gaps, index, key=lambda gap: gap[0]) - 1
        if at < 0:
            raise LookupError(f"the tree has no leaf {index}")
        return gaps[at][1] + index - gaps[at][0]

    # Checkpoints --------------------------------------------------------------------------

    def latest_checkpoint(self) -> StoredCheckpoint | None:
        rows = self._rows("SELECT size, root, note FROM {p}checkpoints ORDER BY size DESC LIMIT 1")
        return _checkpoint(rows[0]) if rows else None

    def latest_of(self, origin: str) -> StoredCheckpoint | None:
        """The largest checkpoint of the log named ``origin`` (its note's first line): the one
        a key of that name must have signed to sign more (``domain.tlog.checkpoint.key_conflict``),
        even when the log was renamed since."""
        head = origin + "\n"
        rows = self._rows(
            "SELECT size, root, note FROM {p}checkpoints WHERE substr(note, 1, ?) = ? "
            "ORDER BY size DESC LIMIT 1",
            (len(head), head),
        )
        return _checkpoint(rows[0]) if rows else None

    def origins(self) -> list[tuple[str, int, int]]:
        """Every log name the store's checkpoints carry, with the smallest and largest tree
        size signed under it, oldest first (``thirteen status``)."""
        first_line = (
            "split_part(note, chr(10), 1)"
            if self.postgres
            else "substr(note, 1, instr(note, char(10)) - 1)"
        )
        rows = self._rows(
            f"SELECT {first_line} AS origin, MIN(size) AS low, MAX(size) AS high "
            "FROM {p}checkpoints GROUP BY 1 ORDER BY 2"
        )
        return [(str(r["origin"]), int(r["low"]), int(r["high"])) for r in rows]

    def checkpoint(self, size: int) -> StoredCheckpoint | None:
        rows = self._rows("SELECT size, root, note FROM {p}checkpoints WHERE size = ?", (size,))
        return _checkpoint(rows[0]) if rows else None

    def covering(self, size: int) -> StoredCheckpoint | None:
        """The smallest checkpoint of at least ``size`` leaves."""
        rows = self._rows(
            "SELECT size, root, note FROM {p}checkpoints WHERE size >= ? ORDER BY size LIMIT 1",
            (size,),
        )
        return _checkpoint(rows[0]) if rows else None

    def newest_cosigned(self, size: int) -> StoredCheckpoint | None:
        """The largest checkpoint of at least ``size`` leaves that a witness has cosigned."""
        rows = self._rows(
            "SELECT size, root, note FROM {p}checkpoints c WHERE size >= ? AND EXISTS "
            "(SELECT 1 FROM {p}cosignatures s WHERE s.size = c.size) ORDER BY size DESC LIMIT 1",
            (size,),
        )
        return _checkpoint(rows[0]) if rows else None

    def add_checkpoint(self, checkpoint: StoredCheckpoint) -> None:
        with self._transaction(commit=True) as cursor:
            cursor.execute(
                self._sql("INSERT INTO {p}checkpoints (size, root, note) VALUES (?, ?, ?)"),
                (checkpoint.size, checkpoint.root, checkpoint.note),
            )

    def cosignatures(self, size: int) -> list[str]:
        rows = self._rows(
            "SELECT line FROM {p}cosignatures WHERE size = ? ORDER BY witness", (size,)
        )
        return [str(r["line"]) for r in rows]

    def add_cosignatures(self, size: int, lines: Sequence[tuple[str, str, int]]) -> None:
        """Keep witnesses' lines (witness, line, its time) for a checkpoint, all in one
        transaction: per witness the line of the latest time, so an older one never replaces
        a newer (nor does one of the same time)."""
        with self._transaction(commit=True) as cursor:
            cursor.executemany(
                self._sql(
                    "INSERT INTO {p}cosignatures (size, witness, line, cosigned_at) "
                    "VALUES (?, ?, ?, ?) ON CONFLICT (size, witness) DO UPDATE SET "
                    "line = excluded.line, cosigned_at = excluded.cosigned_at "
                    "WHERE COALESCE({p}cosignatures.cosigned_at, -1) < excluded.cosigned_at"
                ),
                [(size, witness, line, time) for witness, line, time in lines],
            )


def _rowcount(cursor: Any) -> int:
    """Rows the last statement changed (the library wraps SQLite's cursor)."""
    return int(getattr(cursor, "sqlite_cursor", cursor).rowcount)


def _checkpoint(row: Any) -> StoredCheckpoint:
    return StoredCheckpoint(int(row["size"]), bytes(row["root"]), str(row["note"]))
