"""The Merkle tree of a verifiable log (RFC 6962, RFC 9162 §2.1): hashes, roots, inclusion and
consistency proofs, and their verification.

A leaf hash is SHA-256(0x00 ‖ data), an interior node SHA-256(0x01 ‖ left ‖ right); a tree of
n > 1 leaves splits at k, the largest power of two below n. Proofs are built from the hashes of
*perfect* subtrees, named ``(level, index)``: the 2**level leaves from index × 2**level on. A
store that keeps those (they never change once complete) answers any proof from O(log² n) of
them, without reading every leaf.

>>> leaves = [leaf_hash(bytes([i])) for i in range(7)]
>>> top = root(leaves)
>>> proof = inclusion_proof(3, 7, lambda node: subtree_root(leaves, node))
>>> verify_inclusion(3, 7, leaves[3], proof, top)
True
>>> older = root(leaves[:4])
>>> verify_consistency(4, 7, older, top, consistency_proof(4, 7, lambda n: subtree_root(leaves, n)))
True
>>> root([]).hex() == EMPTY_ROOT.hex() == hashlib.sha256(b"").hexdigest()
True
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

HASH_BYTES = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()  # the root of the empty tree (RFC 9162 §2.1.1)

Node = tuple[int, int]
"""A perfect subtree ``(level, index)``: the 2**level leaves from index × 2**level on."""
Range = tuple[int, int]
"""Leaves ``start`` (included) to ``end`` (excluded)."""
Lookup = Callable[[Node], bytes]
"""The hash of a perfect subtree."""


def leaf_hash(data: bytes) -> bytes:
    """SHA-256(0x00 ‖ data)."""
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """SHA-256(0x01 ‖ left ‖ right)."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def split(n: int) -> int:
    """The largest power of two smaller than ``n`` (n ≥ 2): where a tree of n leaves splits.

    >>> [split(n) for n in (2, 3, 4, 5, 8, 9)]
    [1, 2, 2, 4, 4, 8]
    """
    if n < 2:
        raise ValueError(f"a tree of {n} leaves does not split")
    return 1 << ((n - 1).bit_length() - 1)


def root(leaves: Sequence[bytes]) -> bytes:
    """The root of the tree of these leaf hashes (MTH of RFC 9162 §2.1.1)."""
    frontier = Frontier()
    for leaf in leaves:
        frontier.append(leaf)
    return frontier.root()


def subtree_root(leaves: Sequence[bytes], node: Node) -> bytes:
    """The hash of a perfect subtree computed from all the leaf hashes (for small trees and
    tests; a store keeps these instead)."""
    level, index = node
    return root(leaves[index << level : (index + 1) << level])


def subtrees(start: int, end: int) -> list[Node]:
    """The perfect subtrees that make up the tree of leaves ``start`` to ``end``, left to
    right. ``start`` must be a multiple of a power of two at least ``end - start`` (as every
    subtree of the RFC's recursion is).

    >>> subtrees(0, 7), subtrees(4, 7), subtrees(8, 9)
    ([(2, 0), (1, 2), (0, 6)], [(1, 2), (0, 6)], [(0, 8)])
    """
    size = end - start
    if size <= 0:
        raise ValueError(f"no subtree from leaf {start} to leaf {end}")
    if start & ((1 << (size - 1).bit_length()) - 1):
        raise ValueError(f"leaves {start} to {end} are not a subtree of the log's tree")
    parts = []
    for level in range(size.bit_length() - 1, -1, -1):
        if size >> level & 1:
            parts.append((level, start >> level))
            start += 1 << level
    return parts


def range_hash(start: int, end: int, lookup: Lookup) -> bytes:
    """MTH of leaves ``start`` to ``end`` from the perfect subtrees that make it up."""
    parts = [lookup(node) for node in subtrees(start, end)]
    digest = parts[-1]
    for left in reversed(parts[:-1]):
        digest = node_hash(left, digest)
    return digest


def inclusion_ranges(index: int, size: int) -> list[Range]:
    """The subtrees whose hashes make the inclusion proof of leaf ``index`` in a tree of
    ``size`` leaves (PATH of RFC 9162 §2.1.3.1), in proof order: the leaf's sibling first.

    >>> inclusion_ranges(5, 8)
    [(4, 5), (6, 8), (0, 4)]
    """
    if not 0 <= index < size:
        raise ValueError(f"leaf {index} is not in a tree of {size} leaves")
    ranges = []
    start, end = 0, size
    while end - start > 1:
        k = split(end - start)
        if index < start + k:
            ranges.append((start + k, end))
            end = start + k
        else:
            ranges.append((start, start + k))
            start += k
    return ranges[::-1]


def consistency_ranges(old: int, new: int) -> list[Range]:
    """The subtrees whose hashes make the consistency proof from the tree of ``old`` leaves to
    the tree of ``new`` leaves (SUBPROOF of RFC 9162 §2.1.4.1), in proof order. Empty when
    ``old`` is 0 or equals ``new``.

    >>> consistency_ranges(3, 7)
    [(2, 3), (3, 4), (0, 2), (4, 7)]
    """
    if not 0 <= old <= new:
        raise ValueError(f"no consistency proof from a tree of {old} to one of {new} leaves")
    if old in (0, new):
        return []
    ranges = []
    start, end, whole = 0, new, True  # whole: the old tree is a subtree of this one as it is
    m = old
    while True:
        n = end - start
        if m == n:
            if not whole:
                ranges.append((start, end))
            break
        k = split(n)
        if m <= k:
            ranges.append((start + k, end))
            end = start + k
        else:
            ranges.append((start, start + k))
            start += k
            m -= k
            whole = False
    return ranges[::-1]


def nodes_for(ranges: Iterable[Range]) -> set[Node]:
    """Every perfect subtree the hashes of these ranges are made from (to fetch them at once)."""
    return {node for start, end in ranges for node in subtrees(start, end)}


def inclusion_proof(index: int, size: int, lookup: Lookup) -> list[bytes]:
    """The inclusion proof of leaf ``index`` in the tree of ``size`` leaves."""
    return [range_hash(start, end, lookup) for start, end in inclusion_ranges(index, size)]


def consistency_proof(old: int, new: int, lookup: Lookup) -> list[bytes]:
    """The consistency proof from the tree of ``old`` leaves to the tree of ``new`` leaves."""
    return [range_hash(start, end, lookup) for start, end in consistency_ranges(old, new)]


def verify_inclusion(
    index: int, size: int, leaf: bytes, proof: Sequence[bytes], expected_root: bytes
) -> bool:
    """Whether ``proof`` shows the leaf hash ``leaf`` at ``index`` in the tree of ``size``
    leaves whose root is ``expected_root`` (RFC 9162 §2.1.3.2)."""
    if not 0 <= index < size or any(len(h) != HASH_BYTES for h in proof):
        return False
    fn, sn = index, size - 1
    digest = leaf
    for sibling in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            digest = node_hash(sibling, digest)
            fn, sn = _climb(fn, sn)
        else:
            digest = node_hash(digest, sibling)
        fn >>= 1
        sn >>= 1
    return sn == 0 and digest == expected_root


def _climb(fn: int, sn: int) -> tuple[int, int]:
    """RFC 9162 §2.1.3.2 step 5.b.i (and §2.1.4.2's): while ``fn`` is even and not zero,
    shift ``fn`` and ``sn`` right together: up to the first node that is a right child."""
    while fn and not fn & 1:
        fn >>= 1
        sn >>= 1
    return fn, sn


def verify_consistency(
    old: int, new: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> bool:
    """Whether ``proof`` shows the tree of ``old`` leaves with root ``old_root`` to be the
    first ``old`` leaves of the tree of ``new`` leaves with root ``new_root`` (RFC 9162
    §2.1.4.2). Every tree extends the empty one; a tree is consistent with itself only."""
    if not 0 <= old <= new or any(len(h) != HASH_BYTES for h in proof):
        return False
    if old == 0:
        return not proof
    if old == new:
        return not proof and old_root == new_root
    if not proof:
        return False
    path = list(proof)
    if old & (old - 1) == 0:  # a power of two: the old root is a node of the new tree
        path.insert(0, old_root)
    fn, sn = old - 1, new - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    first = second = path[0]
    for sibling in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            first = node_hash(sibling, first)
            second = node_hash(sibling, second)
            fn, sn = _climb(fn, sn)
        else:
            second = node_hash(second, sibling)
        fn >>= 1
        sn >>= 1
    return first == old_root and second == new_root and sn == 0


@dataclass
class Frontier:
    """The tree so far as its perfect subtrees from left to right (at most one per level):
    enough to append a leaf and to give the root, in O(log n) memory.

    >>> f = Frontier()
    >>> [node for node, _ in f.append(leaf_hash(b"a"))], [n for n, _ in f.append(leaf_hash(b"b"))]
    ([(0, 0)], [(0, 1), (1, 0)])
    >>> f.size, f.root() == node_hash(leaf_hash(b"a"), leaf_hash(b"b"))
    (2, True)
    """

    size: int = 0
    hashes: list[bytes] = field(default_factory=list)  # of ``subtrees(0, size)``, in order

    @classmethod
    def at(cls, size: int, lookup: Lookup) -> Frontier:
        """The frontier of the tree of ``size`` leaves, from its perfect subtrees."""
        return cls(size, [lookup(node) for node in subtrees(0, size)] if size else [])

    def append(self, leaf: bytes) -> list[tuple[Node, bytes]]:
        """Add a leaf hash; returns the perfect subtrees it completes (the leaf itself first)."""
        completed = [((0, self.size), leaf)]
        digest, level, size = leaf, 0, self.size
        while size >> level & 1:  # the last subtree is as high as this one: merge them
            digest = node_hash(self.hashes.pop(), digest)
            level += 1
            completed.append(((level, (size + 1 >> level) - 1), digest))
        self.hashes.append(digest)
        self.size += 1
        return completed

    def root(self) -> bytes:
        if not self.hashes:
            return EMPTY_ROOT
        digest = self.hashes[-1]
        for left in reversed(self.hashes[:-1]):
            digest = node_hash(left, digest)
        return digest
