"""The log as C2SP ``tlog-tiles`` (https://c2sp.org/tlog-tiles): which tree hashes make a tile,
a tile's or an entry bundle's path, and an entry bundle's bytes.

A tile is a subtree of height 8 given by its 256 bottom hashes: tile ``N`` of level ``L`` holds
the hashes of the perfect subtrees ``(8 L, 256 N + i)`` of ``domain.tlog.merkle`` (level 0: leaf
hashes; level 1: the root of each full level-0 tile …), ``i`` from 0 to its width − 1. A tree
of ``size`` leaves is served as the full tiles below it and, at each level, one partial tile of
``size // 256**L % 256`` hashes when that is not 0. An entry bundle holds the leaves' data of the
level-0 tile of the same index, each as a big-endian uint16 length and the bytes, so that a
bundle's entry ``i`` hashes (``merkle.leaf_hash``) to hash ``i`` of that tile.

>>> Tile(0, 1234067).path
'tile/0/x001/x234/067'
>>> Tile(1, 3, 17).path, Tile(ENTRIES, 0, 5).path
('tile/1/003.p/17', 'tile/entries/000.p/5')
>>> parse_path("tile/1/x001/234.p/9") == Tile(1, 1234, 9)
True
>>> [tile.path for tile in tiles_of(70_000) if tile.width < WIDTH]
['tile/0/273.p/112', 'tile/1/001.p/17', 'tile/2/000.p/1']
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from domain.tlog.merkle import HASH_BYTES, Node, node_hash

HEIGHT = 8  # tree levels a tile spans
WIDTH = 1 << HEIGHT  # hashes in a full tile, entries in a full bundle
MAX_LEVEL = 63  # the highest tile level a path may name
ENTRIES = -1  # the "level" of an entry bundle (``tile/entries/…``)
MAX_ENTRY = 0xFFFF  # bytes an entry's uint16 length can say
MAX_INDEX = 1 << 63  # beyond any tree: tiles of larger indices are refused as malformed

_LEVEL = re.compile(r"0|[1-9][0-9]?")
_WIDTH = re.compile(r"[1-9][0-9]{0,2}")
_ELEMENT = re.compile(r"x[0-9]{3}")
_LAST = re.compile(r"[0-9]{3}")


class TilePathError(ValueError):
    """A path that names no tile or entry bundle; the message says what is wrong with it."""


@dataclass(frozen=True)
class Tile:
    """Tile ``index`` of ``level`` (``ENTRIES``: entry bundle ``index``), ``width`` hashes (or
    entries) wide: ``WIDTH`` for a full one, 1 to 255 for a partial one."""

    level: int
    index: int
    width: int = WIDTH

    def __post_init__(self) -> None:
        if not (self.level == ENTRIES or 0 <= self.level <= MAX_LEVEL):
            raise TilePathError(f"tile level {self.level} is not between 0 and {MAX_LEVEL}")
        if not 0 <= self.index < MAX_INDEX:
            raise TilePathError(f"tile index {self.index} is out of range")
        if not 1 <= self.width <= WIDTH:
            raise TilePathError(f"tile width {self.width} is not between 1 and {WIDTH}")

    @property
    def full(self) -> bool:
        return self.width == WIDTH

    @property
    def path(self) -> str:
        """Its path below the log's prefix, as the specification spells it."""
        level = "entries" if self.level == ENTRIES else str(self.level)
        partial = "" if self.full else f".p/{self.width}"
        return f"tile/{level}/{index_path(self.index)}{partial}"

    @property
    def nodes(self) -> tuple[int, int, int]:
        """The tree hashes it holds: ``(tree level, first index, count)`` of the perfect
        subtrees of ``domain.tlog.merkle`` (an entry bundle: the leaves it gives the data of).

        >>> Tile(2, 1, 3).nodes, Tile(ENTRIES, 2, 1).nodes
        ((16, 256, 3), (0, 512, 1))
        """
        level = 0 if self.level == ENTRIES else HEIGHT * self.level
        return level, self.index * WIDTH, self.width

    def needs(self) -> int:
        """The smallest tree size that holds every hash (or entry) of this tile.

        >>> Tile(0, 0).needs(), Tile(1, 0, 1).needs(), Tile(1, 2).needs()
        (256, 256, 196608)
        """
        level, first, count = self.nodes
        return (first + count) << level


def index_path(index: int) -> str:
    """A tile index as the specification's path elements: three digits each, all but the last
    beginning with ``x``.

    >>> index_path(1234067), index_path(5), index_path(1000)
    ('x001/x234/067', '005', 'x001/000')
    """
    if index < 0:
        raise TilePathError(f"tile index {index} is negative")
    elements = [f"{index % 1000:03d}"]
    index //= 1000
    while index:
        elements.append(f"x{index % 1000:03d}")
        index //= 1000
    return "/".join(reversed(elements))


def parse_path(path: str) -> Tile:
    """The tile or entry bundle ``path`` (below the prefix, without a leading ``/``) names;
    ``TilePathError`` unless it is spelt exactly as the specification says (no leading zeros
    in a level or a width, three digits an element, ``x`` before all but the last).

    >>> parse_path("tile/entries/x001/000") == Tile(ENTRIES, 1000)
    True
    >>> parse_path("tile/0/1.p/2")
    Traceback (most recent call last):
    ...
    domain.tlog.tiles.TilePathError: tile index element '1' is not three digits (…/x012/345)
    """
    parts = path.split("/")
    if len(parts) < 3 or parts[0] != "tile":
        raise TilePathError("a tile's path is tile/<L>/<N>[.p/<W>] or tile/entries/<N>[.p/<W>]")
    if parts[1] == "entries":
        level = ENTRIES
    elif _LEVEL.fullmatch(parts[1]):
        level = int(parts[1])
    else:
        raise TilePathError(f"tile level {parts[1]!r} is not a number from 0 to {MAX_LEVEL}")
    elements = parts[2:]
    width = WIDTH
    if len(elements) >= 2 and elements[-2].endswith(".p"):
        if not _WIDTH.fullmatch(elements[-1]) or int(elements[-1]) >= WIDTH:
            raise TilePathError(f"partial width {elements[-1]!r} is not a number from 1 to 255")
        width = int(elements[-1])
        elements = [*elements[:-2], elements[-2][:-2]]
    for element in elements[:-1]:
        if not _ELEMENT.fullmatch(element):
            raise TilePathError(f"tile index element {element!r} is not x and three digits")
    if not _LAST.fullmatch(elements[-1]):
        raise TilePathError(f"tile index element {elements[-1]!r} is not three digits (…/x012/345)")
    if len(elements) > 1 and elements[0] == "x000":
        raise TilePathError("a tile index has no leading x000 element")
    if len(elements) > 7:  # past 10**21: no tree of this log is so large
        raise TilePathError("tile index out of range")
    index = 0
    for element in elements:
        index = index * 1000 + int(element.lstrip("x"))
    return Tile(level, index, width)


def width_at(level: int, size: int) -> int:
    """Hashes in the rightmost (partial) tile of ``level`` for a tree of ``size`` leaves; 0
    when there is none.

    >>> width_at(0, 70_000), width_at(1, 70_000), width_at(2, 70_000), width_at(0, 256)
    (112, 17, 1, 0)
    """
    return (size >> (HEIGHT * level)) % WIDTH


def tiles_of(size: int, *, entries: bool = False) -> Iterator[Tile]:
    """Every tile (or, with ``entries``, entry bundle) of the tree of ``size`` leaves, level by
    level from 0, the full ones then the partial one.

    >>> [t.path for t in tiles_of(257)]
    ['tile/0/000', 'tile/0/001.p/1', 'tile/1/000.p/1']
    >>> [t.path for t in tiles_of(256, entries=True)]
    ['tile/entries/000']
    """
    level = 0
    while size >> (HEIGHT * level):
        below = size >> (HEIGHT * level)
        kind = ENTRIES if entries else level
        for index in range(below // WIDTH):
            yield Tile(kind, index)
        if below % WIDTH:
            yield Tile(kind, below // WIDTH, below % WIDTH)
        if entries:
            return
        level += 1


def hashes_of(data: bytes, tile: Tile) -> list[bytes]:
    """A tile's bytes as its hashes; ``ValueError`` unless there are exactly ``width``."""
    if len(data) != tile.width * HASH_BYTES:
        raise ValueError(
            f"{tile.path} is {len(data)} bytes, not {tile.width} hashes of {HASH_BYTES} bytes"
        )
    return [data[i : i + HASH_BYTES] for i in range(0, len(data), HASH_BYTES)]


def encode_bundle(entries: Sequence[bytes]) -> bytes:
    """Entries as a bundle: each a big-endian uint16 length, then its bytes.

    >>> encode_bundle([b"ab", b""]).hex()
    '000261620000'
    """
    parts = []
    for entry in entries:
        if len(entry) > MAX_ENTRY:
            raise ValueError(f"an entry of {len(entry)} bytes is longer than a bundle can hold")
        parts += [len(entry).to_bytes(2, "big"), entry]
    return b"".join(parts)


def decode_bundle(data: bytes) -> list[bytes]:
    """A bundle's entries; ``ValueError`` when its lengths do not add up to its bytes.

    >>> decode_bundle(bytes.fromhex("000261620000"))
    [b'ab', b'']
    """
    entries: list[bytes] = []
    at = 0
    while at < len(data):
        if at + 2 > len(data):
            raise ValueError(f"a bundle ends inside the length of entry {len(entries)}")
        length = int.from_bytes(data[at : at + 2], "big")
        if at + 2 + length > len(data):
            raise ValueError(f"entry {len(entries)} of a bundle runs past its end")
        entries.append(data[at + 2 : at + 2 + length])
        at += 2 + length
    return entries


def node_from_tiles(node: Node, hashes: Callable[[Tile], Sequence[bytes]]) -> bytes:
    """The hash of a perfect subtree ``node`` (``domain.tlog.merkle``) from the one tile that
    holds it or the hashes it is folded from: ``hashes(tile)`` gives a full tile's hashes (or
    a partial one's, wide enough). A mirror answers proofs from tiles this way.

    >>> from domain.tlog.merkle import leaf_hash, subtree_root
    >>> leaves = [leaf_hash(bytes([i])) for i in range(20)]
    >>> def tile(t): return leaves[t.index * WIDTH:][: t.width]
    >>> node_from_tiles((2, 3), tile) == subtree_root(leaves, (2, 3))
    True
    """
    level, index = node
    base = level - level % HEIGHT  # the tree level the tile's hashes are at
    span = 1 << (level - base)  # how many of them the node is folded from
    first = index * span  # the first of them, at level ``base``
    width = first % WIDTH + span
    found = hashes(Tile(base // HEIGHT, first // WIDTH, width))
    layer = list(found[first % WIDTH : first % WIDTH + span])
    if len(layer) != span:
        raise ValueError(f"tile gave {len(found)} hashes; node {node} needs {width}")
    while len(layer) > 1:
        layer = [node_hash(layer[k], layer[k + 1]) for k in range(0, len(layer), 2)]
    return layer[0]
