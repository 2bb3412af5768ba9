"""The log's tiles and entry bundles (C2SP ``tlog-tiles``, ``domain.tlog.tiles``) read from the
stored tree, for ``service.tiles`` to serve over HTTP.

- **Tiles** are read as they are stored: a tile of level L holds subtrees of tree level 8 L, and
  the store keeps every complete subtree of the levels 0, 4, 8 … (``store.STRIDE``), so a tile is
  one indexed range read of at most 256 rows, never a fold.
- **Entry bundles** hold each leaf's data (``domain.tlog.evidence.leaf_data``: the event's
  canonical form, the bytes its chain link hashes), read from the event log from the position of
  the bundle's first leaf; each entry is checked to hash to its level-0 tile's hash before it is
  served (``TileMismatch`` otherwise: the store's events and tree disagree).
- **Only what a signed checkpoint covers** is served: a tile whose last hash lies beyond the
  latest checkpoint's tree is ``None`` (and nothing of it is read). Once served a tile never
  changes (a partial one of a width neither), so tiles are kept in a cache bounded by entries and
  bytes (``service.bounded``).
- **The checkpoint** is the latest signed one with the witnesses' cosignature lines, as
  ``GetCheckpoint`` serves it, read again at most every ``FRESH`` seconds.
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable

from domain.tlog.evidence import leaf_data
from domain.tlog.merkle import leaf_hash
from domain.tlog.tiles import ENTRIES, Tile, encode_bundle
from service.bounded import Bounded
from service.evidence import record_of
from service.transparency.reader import LogReader

CACHED_TILES = 4096  # tiles and bundles kept, at most
CACHED_TILE_BYTES = 8 * 2**20  # and what they weigh together (a full tile is 8 KiB)
TILE_OVERHEAD = 200  # bytes a cached tile holds beyond its bytes: its key and the entry
FRESH = 1.0  # seconds the latest checkpoint is served before it is read again


class TileMismatch(Exception):
    """An entry read from the event log does not hash to the tree's leaf: never served."""


class TileReader:
    """``log``'s tiles, entry bundles and latest checkpoint, read from its store."""

    def __init__(self, log: LogReader, clock: Callable[[], float] = time.monotonic) -> None:
        self.log = log
        self.clock = clock
        self._cache: Bounded[tuple[Tile, bool], bytes] = Bounded(
            CACHED_TILES, CACHED_TILE_BYTES, lambda data: len(data) + TILE_OVERHEAD
        )
        self._lock = threading.Lock()
        self._latest: tuple[float, int, str] | None = None  # read at, size, signed text

    def checkpoint(self) -> tuple[int, str] | None:
        """The latest checkpoint's tree size and signed text with its cosignatures, at most
        ``FRESH`` seconds old; None before the first is signed."""
        with self._lock:
            held = self._latest
        if held is not None and self.clock() - held[0] < FRESH:
            return held[1], held[2]
        return self._read_checkpoint()

    def _read_checkpoint(self) -> tuple[int, str] | None:
        now = self.clock()
        latest = self.log.store.latest_checkpoint()
        if latest is None:
            return None
        text = self.log.text(latest)
        with self._lock:
            if self._latest is None or self._latest[1] <= latest.size:
                self._latest = (now, latest.size, text)
        return latest.size, text

    def covered(self, size: int) -> int | None:
        """The latest checkpoint's size when it holds ``size`` leaves (read again from the
        store when the one held does not); None when it does not."""
        with self._lock:
            held = self._latest
        if held is not None and held[1] >= size:
            return held[1]
        found = self._read_checkpoint()
        return found[0] if found is not None and found[0] >= size else None

    def tile(self, tile: Tile, *, compressed: bool = False) -> bytes | None:
        """The tile's (or entry bundle's) bytes, gzip-compressed with ``compressed``; None
        when the latest checkpoint's tree does not hold all of it."""
        key = (tile, compressed)
        try:
            return self._cache.get(key)
        except KeyError:
            pass
        if self.covered(tile.needs()) is None:
            return None
        if compressed:
            data = self.tile(tile)
            assert data is not None  # covered, just now
            data = gzip.compress(data, compresslevel=6, mtime=0)
        elif tile.level == ENTRIES:
            data = self._bundle(tile)
        else:
            data = b"".join(self.log.store.run(*tile.nodes))
        self._cache.put(key, data)
        return data

    def _bundle(self, tile: Tile) -> bytes:
        """The leaves' data of ``tile``, each checked against its stored leaf hash."""
        _, first, count = tile.nodes
        store = self.log.store
        hashes = store.run(0, first, count)
        read = self.log.app.recorder.select_notifications(start=store.position(first), limit=count)
        entries = [leaf_data(record_of(n.id, n)) for n in read]
        if len(entries) != count:
            raise TileMismatch(f"{tile.path}: the event log holds {len(entries)} of its events")
        for offset, (entry, expected) in enumerate(zip(entries, hashes, strict=True)):
            if leaf_hash(entry) != expected:
                raise TileMismatch(
                    f"{tile.path}: the event of leaf {first + offset} does not hash to its leaf"
                )
        return encode_bundle(entries)
