"""A mirror of the log that reads nothing but its C2SP ``tlog-tiles`` over HTTP (``/checkpoint``,
``/tile/…``, ``/tile/entries/…``) and trusts nothing but the log's public key: what an outsider
copying the log with a standard client checks.

Each ``poll`` verifies the checkpoint's signature, fetches the tiles and entry bundles its tree
needs that it does not hold yet (a tile it holds narrower must come back with the same hashes
first), and checks:

- every entry hashes (SHA-256(0x00 ‖ entry), computed here) to its level-0 tile's hash (a
  bundle the log withholds for now, ``404`` while a round of it is in progress, is fetched at a
  later poll: meanwhile its leaves are checked from the level-0 tile, as the specification lets
  a client that tails a log do);
- every hash of a tile above level 0 is the tree hash of the full tile below it;
- the tree hash of all the leaves, computed here from the RFC 6962 definition, is the
  checkpoint's root, as is the root folded from the tiles;
- the checkpoint is consistent with the one the mirror saw before (the proof computed from the
  new tree's tiles, verified against the old root);
- every leaf's inclusion proof, computed from the tiles, verifies against the root.

Every check is the tests' own, written from the specifications and sharing no code with the
service (``tests.support.tlog``): the signature, the leaf of each entry's event, tree hashes,
inclusion and consistency; only the proofs are assembled from the tiles with the service's
``domain.tlog.merkle`` and ``domain.tlog.tiles`` (a wrong proof fails the check). A failed check
raises ``MirrorError``.
"""

from __future__ import annotations

import hashlib
import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field

from domain.tlog.merkle import Node, consistency_proof, inclusion_proof, range_hash
from domain.tlog.tiles import (
    ENTRIES,
    WIDTH,
    Tile,
    decode_bundle,
    hashes_of,
    node_from_tiles,
    tiles_of,
)
from tests.support.tlog import Head, consistent, leaf_of, root_from_inclusion, signed_by, tree_hash

IMMUTABLE = "public, max-age=31536000, immutable"


class MirrorError(AssertionError):
    """What the log served does not check out."""


@dataclass
class TilesMirror:
    """A copy of the log at ``base`` (``http://HOST:PORT``), checked with ``key`` (a vkey)."""

    base: str
    key: str
    checkpoints: list[Head] = field(default_factory=list)  # each one verified, in order
    bundles: dict[int, list[bytes]] = field(default_factory=dict)  # entries, the widest held
    leaves: list[bytes] = field(default_factory=list)  # of the level-0 tiles
    tiles: dict[tuple[int, int], list[bytes]] = field(default_factory=dict)  # the widest held
    requests: int = 0
    withheld: int = 0  # bundles answered 404 (withheld for now) within a checkpoint
    consistency_checked: int = 0
    inclusion_checked: int = 0

    def get(self, path: str, *, withheld: bool = False) -> tuple[bytes, str] | None:
        """The body and ``Cache-Control`` of ``path``; ``MirrorError`` unless it is 200 (or,
        with ``withheld``, a 404 saying so: then None)."""
        self.requests += 1
        try:
            with urllib.request.urlopen(f"{self.base}/{path}", timeout=30) as answer:
                return answer.read(), answer.headers.get("Cache-Control", "")
        except urllib.error.HTTPError as error:
            body = error.read()
            if withheld and error.code == 404 and b"withheld" in body:
                return None
            raise MirrorError(f"{path}: HTTP {error.code} {body[:200]!r}") from None

    def fetched(self, path: str) -> tuple[bytes, str]:
        found = self.get(path)
        assert found is not None
        return found

    @property
    def entries(self) -> list[bytes]:
        """Every entry held, in leaf order (while none is missing before them)."""
        held: list[bytes] = []
        for index in range(len(self.bundles)):
            held += self.bundles.get(index, [])
        return held

    def missing(self) -> int:
        """Leaves of the latest checkpoint whose entry is not held (yet)."""
        return self.size - sum(len(entries) for entries in self.bundles.values())

    @property
    def size(self) -> int:
        return self.checkpoints[-1].size if self.checkpoints else 0

    def poll(self) -> Head:
        """Read the latest checkpoint and check it, and the log up to it, as the module says."""
        text, _ = self.fetched("checkpoint")
        try:
            checkpoint = signed_by(text.decode(), self.key)
        except (AssertionError, ValueError) as error:
            raise MirrorError(f"the checkpoint does not verify: {error}") from None
        previous = self.checkpoints[-1] if self.checkpoints else None
        if previous is not None and checkpoint.size < previous.size:
            raise MirrorError(f"rolled back from {previous.size} to {checkpoint.size} leaves")
        if previous is not None and checkpoint.size == previous.size:
            if checkpoint.root != previous.root:
                raise MirrorError(f"two roots for the tree of {checkpoint.size} leaves")
            return checkpoint
        self._fetch_tiles(checkpoint.size)  # the tree first: then the entries against it
        lookup = self._lookup()
        if tree_hash(self.leaves) != checkpoint.root:
            raise MirrorError(f"the leaves' tree is not the checkpoint's ({checkpoint.size})")
        if range_hash(0, checkpoint.size, lookup) != checkpoint.root:
            raise MirrorError(f"the tiles' root is not the checkpoint's ({checkpoint.size})")
        if previous is not None and previous.size > 0:
            proof = consistency_proof(previous.size, checkpoint.size, lookup)
            if not consistent(
                previous.size, checkpoint.size, previous.root, checkpoint.root, proof
            ):
                raise MirrorError(f"{checkpoint.size} does not extend {previous.size}")
            self.consistency_checked += 1
        for index, leaf in enumerate(self.leaves):
            proof = inclusion_proof(index, checkpoint.size, lookup)
            if root_from_inclusion(index, checkpoint.size, leaf, proof) != checkpoint.root:
                raise MirrorError(f"leaf {index} is not in the tree of {checkpoint.size}")
        self.inclusion_checked += len(self.leaves)
        self._fetch_bundles(checkpoint.size)
        self.checkpoints.append(checkpoint)
        return checkpoint

    def _fetch_tiles(self, size: int) -> None:
        """The tiles of the tree of ``size`` leaves that are not held yet."""
        for tile in tiles_of(size):
            hashes = self._tile(tile)
            if tile.level > 0:  # each hash: the tree hash of a full tile below
                for i, digest in enumerate(hashes):
                    below = self.tiles.get((tile.level - 1, tile.index * WIDTH + i))
                    if below is None or len(below) != WIDTH or tree_hash(below) != digest:
                        raise MirrorError(f"{tile.path}: hash {i} is not its tile's tree hash")
        self.leaves = [h for t in tiles_of(size) if t.level == 0 for h in self._tile(t)]

    def _fetch_bundles(self, size: int) -> None:
        """The entry bundles of the tree of ``size`` leaves not held yet, each entry checked
        against its leaf in the tiles."""
        for bundle in tiles_of(size, entries=True):
            held = self.bundles.get(bundle.index, [])
            if len(held) >= bundle.width:
                continue
            found = self.get(bundle.path, withheld=True)
            if found is None:
                self.withheld += 1
                continue
            entries = decode_bundle(found[0])
            if len(entries) != bundle.width:
                raise MirrorError(f"{bundle.path} holds {len(entries)} entries")
            if entries[: len(held)] != held:
                raise MirrorError(f"{bundle.path} changed entries served before")
            self._immutable(bundle, found[1])
            leaves = [hashlib.sha256(b"\x00" + entry).digest() for entry in entries]
            if leaves != self.tiles[(0, bundle.index)][: bundle.width]:
                raise MirrorError(f"{bundle.path}: an entry does not hash to its leaf")
            events = [json.loads(entry) for entry in entries]
            if [leaf_of(event) for event in events] != leaves:
                raise MirrorError(f"{bundle.path}: an entry is not its event's canonical form")
            self.bundles[bundle.index] = entries

    def _tile(self, tile: Tile) -> list[bytes]:
        held = self.tiles.get((tile.level, tile.index), [])
        if len(held) >= tile.width:
            return held[: tile.width]
        data, cache = self.fetched(tile.path)
        hashes = hashes_of(data, tile)
        if hashes[: len(held)] != held:
            raise MirrorError(f"{tile.path} changed hashes served before")
        self._immutable(tile, cache)
        self.tiles[(tile.level, tile.index)] = hashes
        return hashes

    @staticmethod
    def _immutable(tile: Tile, cache: str) -> None:
        if cache != IMMUTABLE:
            raise MirrorError(f"{tile.path} is served with Cache-Control {cache!r}")

    def _lookup(self) -> _Lookup:
        return _Lookup(self.tiles)


@dataclass
class _Lookup:
    """Perfect subtrees' hashes folded from the tiles held (each once)."""

    tiles: dict[tuple[int, int], list[bytes]]
    known: dict[Node, bytes] = field(default_factory=dict)

    def __call__(self, node: Node) -> bytes:
        found = self.known.get(node)
        if found is None:
            found = self.known[node] = node_from_tiles(node, self._hashes)
        return found

    def _hashes(self, tile: Tile) -> list[bytes]:
        if tile.level == ENTRIES:
            raise MirrorError("bundles hold no hashes")
        return self.tiles.get((tile.level, tile.index), [])
