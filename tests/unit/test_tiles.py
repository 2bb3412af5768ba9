"""The tile math of C2SP ``tlog-tiles`` (``domain.tlog.tiles``): paths spelt as the specification
spells them (its own examples), which tiles make a tree at the sizes where tiles turn over, and
tiles, folded, giving every root and proof the tree gives."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.tlog.merkle import (
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    root,
    subtree_root,
    subtrees,
    verify_consistency,
    verify_inclusion,
)
from domain.tlog.tiles import (
    ENTRIES,
    WIDTH,
    Tile,
    TilePathError,
    decode_bundle,
    encode_bundle,
    hashes_of,
    index_path,
    node_from_tiles,
    parse_path,
    tiles_of,
    width_at,
)


def test_the_specifications_index_example_is_spelt_x001_x234_067() -> None:
    assert index_path(1234067) == "x001/x234/067"
    assert parse_path("tile/0/x001/x234/067") == Tile(0, 1234067)


def test_the_specifications_tree_of_70000_is_its_tiles() -> None:
    """273 full level-0 tiles, a partial of 112, one full level-1 tile, a partial of 17 and a
    partial level-2 tile of 1."""
    tiles = list(tiles_of(70_000))
    level0 = [t for t in tiles if t.level == 0]
    assert len([t for t in level0 if t.full]) == 273
    assert [t.width for t in level0 if not t.full] == [112]
    assert [(t.index, t.width) for t in tiles if t.level == 1] == [(0, WIDTH), (1, 17)]
    assert [(t.index, t.width) for t in tiles if t.level == 2] == [(0, 1)]
    assert len(tiles) == 273 + 1 + 2 + 1


@pytest.mark.parametrize(
    ("size", "paths"),
    [
        (0, []),
        (1, ["tile/0/000.p/1"]),
        (255, ["tile/0/000.p/255"]),
        (256, ["tile/0/000", "tile/1/000.p/1"]),  # the specification's own example
        (257, ["tile/0/000", "tile/0/001.p/1", "tile/1/000.p/1"]),
        (512, ["tile/0/000", "tile/0/001", "tile/1/000.p/2"]),
    ],
)
def test_tiles_turn_over_at_256(size: int, paths: list[str]) -> None:
    assert [t.path for t in tiles_of(size)] == paths


def test_a_tree_of_65536_leaves_has_full_tiles_on_two_levels_and_one_hash_on_the_third() -> None:
    tiles = list(tiles_of(65536))
    assert all(t.full for t in tiles if t.level == 0) and len(tiles) == 256 + 1 + 1
    assert [t.path for t in tiles if t.level > 0] == ["tile/1/000", "tile/2/000.p/1"]
    assert [width_at(level, 65536) for level in range(3)] == [0, 0, 1]
    assert [t.path for t in tiles_of(65535) if not t.full] == [
        "tile/0/255.p/255",
        "tile/1/000.p/255",
    ]


def test_entry_bundles_follow_the_level_0_tiles() -> None:
    assert [t.path for t in tiles_of(513, entries=True)] == [
        "tile/entries/000",
        "tile/entries/001",
        "tile/entries/002.p/1",
    ]
    assert Tile(ENTRIES, 2, 1).nodes == Tile(0, 2, 1).nodes == (0, 512, 1)


@given(st.integers(0, 2**63 - 1), st.integers(-1, 63), st.integers(1, WIDTH))
def test_every_tile_path_reads_back_as_its_tile(index: int, level: int, width: int) -> None:
    tile = Tile(level, index, width)
    assert parse_path(tile.path) == tile


@pytest.mark.parametrize(
    "path",
    [
        "tile/0/../000",
        "tile/../../etc/passwd",
        "tile/0/abc",
        "tile/0/1",  # not three digits
        "tile/0/0000",
        "tile/0/001/002",  # all but the last begin with x
        "tile/0/x001",  # the last does not
        "tile/0/x000/001",  # no leading x000: one path a tile
        "tile/00/000",  # no leading zero in a level
        "tile/64/000",
        "tile/-1/000",
        "tile/0/000.p/0",
        "tile/0/000.p/256",
        "tile/0/000.p/01",
        "tile/0/000.p/",
        "tile/0/000.p/1/2",
        "tile/entries/000.p/999",
        "tile/data/000",
        "tile/0",
        "tile/0/",
        "checkpoint",
        "tile/0/x999/x999/x999/x999/x999/x999/x999/999",  # past any tree
        "tile/0/x9223/372/036/854/775/808",
    ],
)
def test_a_path_not_spelt_as_the_specification_says_is_refused(path: str) -> None:
    with pytest.raises(TilePathError):
        parse_path(path)


def test_a_tile_of_the_largest_index_is_still_a_tile() -> None:
    largest = Tile(0, 2**63 - 1)
    assert parse_path(largest.path) == largest
    with pytest.raises(TilePathError):
        parse_path(Tile(0, 2**63 - 1).path.replace("807", "808"))


def test_a_tile_needs_the_tree_that_holds_its_last_hash() -> None:
    assert Tile(0, 0, 1).needs() == 1
    assert Tile(0, 1).needs() == 512
    assert Tile(1, 0, 1).needs() == 256
    assert Tile(1, 0).needs() == 65536
    assert Tile(2, 0, 1).needs() == 65536


def test_bundles_round_trip_and_a_bad_one_is_refused() -> None:
    entries = [b"", b"x" * 300, bytes(range(256)), b"\x00" * 65535]
    assert decode_bundle(encode_bundle(entries)) == entries
    with pytest.raises(ValueError, match="longer"):
        encode_bundle([b"x" * 65536])
    for bad in (b"\x00", b"\x00\x03ab", b"\x00\x01a\x00"):
        with pytest.raises(ValueError):
            decode_bundle(bad)


def test_a_tile_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(ValueError, match="not 2 hashes"):
        hashes_of(b"\x00" * 65, Tile(0, 0, 2))


def tiles_over(leaves: list[bytes]) -> dict[Tile, bytes]:
    """Every tile of a tree, computed from its leaf hashes as the specification defines them:
    the n-th tile of level l holds MTH(D[(n·256 + i)·256**l : (n·256 + i + 1)·256**l])."""
    tiles = {}
    for tile in tiles_of(len(leaves)):
        span = WIDTH**tile.level
        first = tile.index * WIDTH
        tiles[tile] = b"".join(
            root(leaves[(first + i) * span : (first + i + 1) * span]) for i in range(tile.width)
        )
    return tiles


@pytest.mark.parametrize("size", [1, 255, 256, 257, 511, 700])
def test_roots_and_proofs_folded_from_tiles_are_those_of_the_tree(size: int) -> None:
    leaves = [leaf_hash(i.to_bytes(4, "big")) for i in range(size)]
    tiles = tiles_over(leaves)

    def hashes(tile: Tile) -> list[bytes]:
        held = next(t for t in tiles if (t.level, t.index) == (tile.level, tile.index))
        assert held.width >= tile.width
        return hashes_of(tiles[held], held)

    def lookup(node: tuple[int, int]) -> bytes:
        return node_from_tiles(node, hashes)

    for node in subtrees(0, size):
        assert lookup(node) == subtree_root(leaves, node)
    top = root(leaves)
    for index in {0, size // 2, size - 1}:
        proof = inclusion_proof(index, size, lookup)
        assert verify_inclusion(index, size, leaves[index], proof, top)
    for old in {1, size // 3 or 1, size - 1 or 1}:
        proof = consistency_proof(old, size, lookup)
        assert verify_consistency(old, size, root(leaves[:old]), top, proof)


def test_a_node_the_tiles_do_not_reach_is_an_error_not_a_guess() -> None:
    with pytest.raises(ValueError, match="needs"):
        node_from_tiles((1, 1), lambda tile: [b"\x00" * 32] * 3)
