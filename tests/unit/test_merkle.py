"""``domain.tlog.merkle`` against RFC 6962 / RFC 9162 §2.1: the Certificate Transparency test
vectors, and every proof checked by a tiny verifier written here from the RFC's recursive
definitions (MTH, PATH, SUBPROOF), not by the iterative algorithms the service and the offline audit
use."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.tlog import merkle

# RFC 6962 test data as published with Certificate Transparency (and transparency-dev/merkle).
DATA = [
    bytes.fromhex(h)
    for h in [
        "",
        "00",
        "10",
        "2021",
        "3031",
        "40414243",
        "5051525354555657",
        "606162636465666768696a6b6c6d6e6f",
    ]
]
ROOTS = [
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]
INCLUSION = {  # (leaf, tree size) → proof
    (0, 8): ["96a296d2", "5f083f0a", "6b47aaf2"],
    (5, 8): ["bc1a0643", "ca854ea1", "d37ee418"],
}
CONSISTENCY = {  # (old, new) → proof
    (2, 8): ["5f083f0a", "6b47aaf2"],
    (6, 8): ["0ebc5d34", "ca854ea1", "d37ee418"],
    (2, 5): ["5f083f0a", "bc1a0643"],
}


# The independent verifier: the RFC's definitions, written out recursively ----------------------


def h(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def k_of(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def mth(data: list[bytes]) -> bytes:
    """MTH over the leaves' data (RFC 9162 §2.1.1)."""
    if not data:
        return h(b"")
    if len(data) == 1:
        return h(b"\x00" + data[0])
    k = k_of(len(data))
    return h(b"\x01" + mth(data[:k]) + mth(data[k:]))


def root_from_path(m: int, n: int, leaf: bytes, proof: list[bytes]) -> bytes | None:
    """The root PATH(m, D[n]) (§2.1.3.1) leads to from the leaf hash; None if it cannot."""
    if n == 1:
        return leaf if not proof else None
    if not proof or not 0 <= m < n:
        return None
    k = k_of(n)
    if m < k:
        below = root_from_path(m, k, leaf, proof[:-1])
        return None if below is None else h(b"\x01" + below + proof[-1])
    below = root_from_path(m - k, n - k, leaf, proof[:-1])
    return None if below is None else h(b"\x01" + proof[-1] + below)


def roots_from_subproof(
    m: int, n: int, proof: list[bytes], whole: bool, old_root: bytes
) -> tuple[bytes, bytes] | None:
    """(old subtree hash, new subtree hash) that SUBPROOF(m, D[n], whole) (§2.1.4.1) proves."""
    if m == n:
        if whole:
            return (old_root, old_root) if not proof else None
        return (proof[0], proof[0]) if len(proof) == 1 else None
    if not proof:
        return None
    k = k_of(n)
    if m <= k:
        below = roots_from_subproof(m, k, proof[:-1], whole, old_root)
        return None if below is None else (below[0], h(b"\x01" + below[1] + proof[-1]))
    below = roots_from_subproof(m - k, n - k, proof[:-1], False, old_root)
    if below is None:
        return None
    return h(b"\x01" + proof[-1] + below[0]), h(b"\x01" + proof[-1] + below[1])


def consistent(m: int, n: int, old: bytes, new: bytes, proof: list[bytes]) -> bool:
    if not 0 < m < n:
        return False
    found = roots_from_subproof(m, n, proof, True, old)
    return found == (old, new)


def tree(n: int) -> tuple[list[bytes], list[bytes]]:
    data = [f"event {i}".encode() for i in range(n)]
    return data, [merkle.leaf_hash(d) for d in data]


def lookup(leaves: list[bytes]) -> merkle.Lookup:
    return lambda node: merkle.subtree_root(leaves, node)


# The vectors ---------------------------------------------------------------------------------


def test_roots_are_the_rfc_6962_test_vectors_for_every_size_from_0_to_8() -> None:
    leaves = [merkle.leaf_hash(d) for d in DATA]
    for size, expected in enumerate(ROOTS):
        assert merkle.root(leaves[:size]).hex() == expected, size
        assert mth(DATA[:size]).hex() == expected, size  # the verifier here agrees


def test_inclusion_and_consistency_proofs_are_the_published_ones() -> None:
    leaves = [merkle.leaf_hash(d) for d in DATA]
    for (index, size), proof in INCLUSION.items():
        made = merkle.inclusion_proof(index, size, lookup(leaves))
        assert [p.hex()[:8] for p in made] == proof
    for (old, new), proof in CONSISTENCY.items():
        made = merkle.consistency_proof(old, new, lookup(leaves))
        assert [p.hex()[:8] for p in made] == proof


# RFC 9162 behaviours -------------------------------------------------------------------------


def test_the_empty_tree_hashes_to_sha256_of_nothing_and_a_leaf_is_prefixed_0x00() -> None:
    assert merkle.root([]) == merkle.EMPTY_ROOT == h(b"")
    assert merkle.leaf_hash(b"abc") == h(b"\x00abc") != h(b"abc")


def test_a_node_is_prefixed_0x01_so_no_node_is_also_a_leaf() -> None:
    """Second-preimage resistance: the node over two leaves is not the leaf of their bytes."""
    a, b = merkle.leaf_hash(b"a"), merkle.leaf_hash(b"b")
    assert merkle.node_hash(a, b) == h(b"\x01" + a + b)
    assert merkle.node_hash(a, b) != merkle.leaf_hash(a + b)


def test_a_tree_splits_at_the_largest_power_of_two_below_its_size_not_the_middle() -> None:
    for n in range(2, 300):
        assert merkle.split(n) == k_of(n)
    # For 6 leaves the midpoint would give a different (and non-interoperable) root.
    data = DATA[:6]
    midpoint = h(b"\x01" + mth(data[:3]) + mth(data[3:]))
    assert merkle.root([merkle.leaf_hash(d) for d in data]) == mth(data) != midpoint


def test_every_inclusion_proof_up_to_40_leaves_verifies_here_and_in_the_service() -> None:
    for n in range(1, 41):
        data, leaves = tree(n)
        root = mth(data)
        for m in range(n):
            proof = merkle.inclusion_proof(m, n, lookup(leaves))
            assert root_from_path(m, n, leaves[m], proof) == root, (m, n)
            assert merkle.verify_inclusion(m, n, leaves[m], proof, root), (m, n)


def test_every_consistency_proof_up_to_40_leaves_verifies_here_and_in_the_service() -> None:
    for n in range(1, 41):
        data, leaves = tree(n)
        for m in range(1, n):
            proof = merkle.consistency_proof(m, n, lookup(leaves))
            assert consistent(m, n, mth(data[:m]), mth(data), proof), (m, n)
            assert merkle.verify_consistency(m, n, mth(data[:m]), mth(data), proof), (m, n)


def test_consistency_of_a_tree_with_itself_and_with_the_empty_tree_needs_no_proof() -> None:
    data, leaves = tree(5)
    assert merkle.consistency_proof(5, 5, lookup(leaves)) == []
    assert merkle.consistency_proof(0, 5, lookup(leaves)) == []
    assert merkle.verify_consistency(5, 5, mth(data), mth(data), [])
    assert not merkle.verify_consistency(5, 5, mth(data), mth(data[:4]), [])
    assert merkle.verify_consistency(0, 5, merkle.EMPTY_ROOT, mth(data), [])


def flip(proof: list[bytes], at: int) -> list[bytes]:
    changed = list(proof)
    changed[at] = bytes([changed[at][0] ^ 1]) + changed[at][1:]
    return changed


def test_a_wrong_leaf_index_size_root_or_hash_fails_inclusion() -> None:
    data, leaves = tree(13)
    root = mth(data)
    proof = merkle.inclusion_proof(9, 13, lookup(leaves))  # on the right edge: shape by size
    assert merkle.verify_inclusion(9, 13, leaves[9], proof, root)
    assert not merkle.verify_inclusion(8, 13, leaves[9], proof, root)
    assert not merkle.verify_inclusion(10, 13, leaves[9], proof, root)
    assert not merkle.verify_inclusion(9, 12, leaves[9], proof, root)
    assert not merkle.verify_inclusion(9, 13, leaves[8], proof, root)
    assert not merkle.verify_inclusion(9, 13, leaves[9], proof, mth(data[:12]))
    assert not merkle.verify_inclusion(9, 13, leaves[9], proof[:-1], root)
    assert not merkle.verify_inclusion(9, 13, leaves[9], [*proof, proof[0]], root)
    assert not merkle.verify_inclusion(13, 13, leaves[9], proof, root)
    for at in range(len(proof)):
        assert not merkle.verify_inclusion(9, 13, leaves[9], flip(proof, at), root)
        assert root_from_path(9, 13, leaves[9], flip(proof, at)) != root


def test_a_rewritten_history_fails_consistency() -> None:
    """A tree whose 4th leaf was replaced is not an extension of the tree that held the first."""
    data, leaves = tree(11)
    old = mth(data[:7])
    rewritten = [*data[:3], b"edited", *data[4:]]
    edited = [merkle.leaf_hash(d) for d in rewritten]
    proof = merkle.consistency_proof(7, 11, lookup(edited))
    assert not merkle.verify_consistency(7, 11, old, mth(rewritten), proof)
    assert not consistent(7, 11, old, mth(rewritten), proof)
    honest = merkle.consistency_proof(7, 11, lookup(leaves))
    for at in range(len(honest)):
        assert not merkle.verify_consistency(7, 11, old, mth(data), flip(honest, at))
    assert not merkle.verify_consistency(7, 11, old, mth(data), honest[:-1])
    assert not merkle.verify_consistency(6, 11, old, mth(data), honest)


def test_the_frontier_emits_each_perfect_subtree_once_complete_and_knows_the_root() -> None:
    data, leaves = tree(37)
    frontier = merkle.Frontier()
    seen: dict[merkle.Node, bytes] = {}
    for n, leaf in enumerate(leaves, start=1):
        for node, digest in frontier.append(leaf):
            assert node not in seen
            level, index = node
            assert (index + 1) << level <= n  # complete when emitted
            assert digest == mth(data[index << level : (index + 1) << level])
            seen[node] = digest
        assert frontier.root() == mth(data[:n])
        assert merkle.Frontier.at(n, seen.__getitem__).root() == frontier.root()
    assert len(seen) == 2 * 37 - bin(37).count("1")  # every perfect subtree of 37 leaves


def test_proofs_read_only_log_squared_subtrees_not_every_leaf() -> None:
    """What a store reads for a proof of a tree of a million leaves."""
    n = 1_000_003
    assert len(merkle.nodes_for(merkle.inclusion_ranges(123_456, n))) <= 20 * 21
    assert len(merkle.nodes_for(merkle.consistency_ranges(777_777, n))) <= 2 * 20 * 21


@given(st.integers(1, 300), st.data())
def test_any_proof_of_any_tree_verifies(n: int, draw: st.DataObject) -> None:
    data, leaves = tree(n)
    m = draw.draw(st.integers(0, n - 1))
    assert root_from_path(m, n, leaves[m], merkle.inclusion_proof(m, n, lookup(leaves))) == mth(
        data
    )
    old = draw.draw(st.integers(1, n))
    proof = merkle.consistency_proof(old, n, lookup(leaves))
    if old < n:
        assert consistent(old, n, mth(data[:old]), mth(data), proof)
    assert merkle.verify_consistency(old, n, mth(data[:old]), mth(data), proof)


@pytest.mark.parametrize("start,end", [(1, 3), (2, 5), (4, 13)])
def test_a_range_that_is_not_a_subtree_of_the_log_is_refused(start: int, end: int) -> None:
    with pytest.raises(ValueError):
        merkle.subtrees(start, end)
