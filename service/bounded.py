"""Caches bounded by what they hold: at most so many entries and so many bytes, the least
recently used making room for the newest.

A bound on entries alone lets a cache of variable-size things grow with what it holds (an
aggregate cache of 5,000 rounds weighs whatever 5,000 rounds weigh, and a table's aggregate
grows with every round it plays); the bytes bound is what levels the process off. Sizes are
estimates (``deep_size``): what the objects hold, as ``sys.getsizeof`` counts it, without the
objects they share with the rest of the process (classes, modules, functions).
"""

from __future__ import annotations

import sys
import threading
import types
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

from eventsourcing.application import Cache

K = TypeVar("K")
V = TypeVar("V")

_SHARED = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType)
WALK_LIMIT = 20_000  # objects counted at most per walk (a few ms; the rest is not counted)


def deep_size(value: object, limit: int = WALK_LIMIT) -> int:
    """The bytes ``value`` holds: itself and what it refers to through attributes, slots and
    the items of lists, tuples, sets and dicts, each object counted once."""
    seen: set[int] = set()
    stack = [value]
    total = 0
    while stack and len(seen) < limit:
        item = stack.pop()
        if id(item) in seen or isinstance(item, _SHARED):
            continue
        seen.add(id(item))
        total += sys.getsizeof(item)
        if isinstance(item, str | bytes | int | float | bool | type(None)):
            continue
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(item)
        attributes = getattr(item, "__dict__", None)
        if isinstance(attributes, dict):
            stack.append(attributes)
        for name in getattr(type(item), "__slots__", ()):
            if isinstance(name, str) and hasattr(item, name):
                stack.append(getattr(item, name))
    return total


class AggregateWeights:
    """An aggregate's size without walking it every time: an aggregate grows with its events
    (a table with every round it played), so its weight is estimated from its version by a
    line fitted, per kind, to sizes measured with ``deep_size`` on the first ``FIRST``
    aggregates of each kind put and then one in ``EVERY`` (a moving fit, so it follows a kind
    whose events change)."""

    FIRST = 16
    EVERY = 512  # walking a revealed round takes ~1 ms: one put in 128 cost the writer 2%
    FOLLOW = 0.1  # the weight of the newest measurement in the moving means

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # per kind: moving means of version, size, version², version × size, and how many
        # measurements they are of; puts counted
        self._fits: dict[type, list[float]] = {}
        self._counts: dict[type, int] = {}

    def __call__(self, aggregate: Any, *, measure: bool = True) -> int:
        kind = type(aggregate)
        version = max(1, int(getattr(aggregate, "version", 1)))
        with self._lock:
            count = self._counts.get(kind, 0)
            if measure:
                self._counts[kind] = count + 1
            fit = self._fits.get(kind)
            estimate = None if fit is None else _on_line(fit, version)
        if estimate is not None and not (measure and self._sampled(count)):
            return estimate
        size = deep_size(aggregate)
        point = [version, size, version * version, version * size]
        with self._lock:
            fit = self._fits.setdefault(kind, [0.0] * 5)
            fit[4] += 1
            follow = max(self.FOLLOW, 1 / fit[4])  # plain means at first
            for i, x in enumerate(point):
                fit[i] += (x - fit[i]) * follow
        return size

    def _sampled(self, count: int) -> bool:
        return count < self.FIRST or count % self.EVERY == 0


def _on_line(fit: list[float], version: int) -> int:
    """The size the fitted line gives at ``version``; in proportion to the version while
    every measured aggregate of the kind had the same one."""
    v, size, vv, vs, _ = fit
    spread = vv - v * v
    if spread < 1.0:
        return int(size * version / v)
    slope = max(0.0, (vs - v * size) / spread)
    return max(0, int(size + slope * (version - v)))


class Bounded(Cache[K, V]):
    """A least-recently-used cache of at most ``entries`` entries weighing at most
    ``max_bytes`` together, each weighed by ``weigh`` when it is put (and, with ``reweigh``,
    again when it is read: for values changed in place, such as an aggregate brought up to
    date). Thread-safe. Its ``get`` and ``put`` are those of eventsourcing's caches, so a
    repository can hold one: ``get`` raises ``KeyError`` on a miss."""

    def __init__(
        self,
        entries: int,
        max_bytes: int,
        weigh: Callable[[V], int],
        *,
        reweigh: Callable[[V], int] | None = None,
    ) -> None:
        super().__init__()  # its dict stays empty: the entries are in ``_items``
        self.entries = entries
        self.max_bytes = max_bytes
        self.weigh = weigh
        self.reweigh = reweigh
        self.bytes = 0
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K, *, evict: bool = False) -> V:
        with self._lock:
            value, weight = self._items[key]  # KeyError: a miss
            if evict:
                del self._items[key]
                self.bytes -= weight
                return value
            self._items.move_to_end(key)
        if self.reweigh is not None:
            now = self.reweigh(value)
            with self._lock:
                held = self._items.get(key)
                if held is not None and held[0] is value:
                    self._items[key] = (value, now)
                    self.bytes += now - held[1]
                    self._shrink()
        return value

    def put(self, key: K, value: V | None) -> None:
        if value is None:
            return
        weight = self.weigh(value)
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.bytes -= old[1]
            self._items[key] = (value, weight)
            self.bytes += weight
            self._shrink()

    def values(self) -> list[V]:
        """The values held now, the least recently used first."""
        with self._lock:
            return [value for value, _ in self._items.values()]

    def count(self) -> int:
        """The entries held now."""
        with self._lock:
            return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.bytes = 0

    def _shrink(self) -> None:
        # The newest entry stays even when it alone weighs more than the bound.
        while len(self._items) > 1 and (
            len(self._items) > self.entries or self.bytes > self.max_bytes
        ):
            _, (_, weight) = self._items.popitem(last=False)
            self.bytes -= weight
