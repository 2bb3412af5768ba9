"""Stored events' JSON written and read by orjson, byte for byte what the library's
``JSONTranscoder`` (the standard ``json`` module: compact separators, ``ensure_ascii=False``,
insertion order) writes and reads, so every store stays readable and every chain link holds.

An event's state is first turned into a JSON-ready tree in one walk (the registered transcodings
applied, dict keys made strings as ``json`` makes them); orjson then writes that tree. Where the
two libraries would differ, the tree or the fallback makes them agree:

- floats: ``json`` writes ``repr`` (``1e+16``, ``NaN``), orjson its own shortest form (``1e16``,
  ``null``): the walk puts ``json``'s text in as a raw fragment;
- integers beyond 64 bits, which orjson refuses to write and silently reads as floats: the event
  is written by ``json``, and a text where orjson reads any float is read again by ``json``
  (stored events hold no floats: reading them costs no second read);
- anything else orjson refuses (a lone surrogate, a key of a ``str`` subclass): ``json``, which
  then writes what it wrote before (or fails as it failed before).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import orjson
from eventsourcing.persistence import JSONTranscoder, TranscodingNotRegisteredError

from domain.tlog.chain import CHAIN, canonical

_INF = float("inf")
PLAIN = frozenset({str, int, bool, type(None)})  # written as they are, by either library


def _float_text(value: float) -> str:
    """A float as ``json`` writes it (``json.encoder``'s ``floatstr``, ``allow_nan``)."""
    if value != value:
        return "NaN"
    if value == _INF:
        return "Infinity"
    if value == -_INF:
        return "-Infinity"
    return float.__repr__(value)


class _Float(Exception):
    """Read a float: orjson reads an integer beyond 64 bits as one, so ``json`` reads it again."""


class OddKey(ValueError):
    """A dict key that is not a string or a number: written the slow way (``json``)."""


def _key(key: Any, fast: bool) -> str:
    """A dict key as the stored JSON has it: numbers and booleans as ``json`` writes them;
    others (None, a UUID) as ``str`` makes them, as stored events always had them, though the
    library's own transcoder writes None as ``null`` and refuses the rest (``fast`` refuses
    them all, so that each caller falls back to its own old way)."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool | int | float):
        return json.dumps(key)
    if fast:
        raise OddKey(key)
    return str(key)


class FastJSONTranscoder(JSONTranscoder):
    """``JSONTranscoder`` with orjson underneath and the same bytes (module docstring)."""

    @classmethod
    def like(cls, transcoder: JSONTranscoder) -> FastJSONTranscoder:
        """A transcoder with ``transcoder``'s registered transcodings."""
        if isinstance(transcoder, cls):
            return transcoder
        made = cls()
        made.types.update(transcoder.types)
        made.names.update(transcoder.names)
        return made

    # Writing -----------------------------------------------------------------------------------

    def encode(self, obj: Any) -> bytes:
        try:
            return orjson.dumps(self.tree(obj))
        except (orjson.JSONEncodeError, OddKey):
            return super().encode(obj)

    def tree(self, value: Any, *, fast: bool = True) -> Any:
        """``value`` as a tree of dicts, lists, strings, numbers, booleans and None, with each
        registered type as ``{"_type_": name, "_data_": …}``; ``fast``: floats as ``json``'s
        text in orjson fragments (for ``dumps``), else as they are (for ``dumps_as_json``)."""
        kind = type(value)
        if kind in PLAIN:
            return value
        if kind is dict:
            return self._dict(value, fast)
        if kind is list or kind is tuple:
            return self._list(value, fast)
        if isinstance(value, float):
            return orjson.Fragment(_float_text(value)) if fast else value
        if isinstance(value, str | int):  # subclasses (enums): written as their base type
            return value
        if isinstance(value, dict):
            return self._dict(value, fast)
        if isinstance(value, list | tuple):
            return self._list(value, fast)
        transcoding = self.types.get(type(value))
        if transcoding is None:
            raise TranscodingNotRegisteredError(
                f"Object of type {type(value)} is not serializable: register a transcoding"
            )
        return {
            "_type_": transcoding.name,
            "_data_": self.tree(transcoding.encode(value), fast=fast),
        }

    def _dict(self, value: dict[Any, Any], fast: bool) -> dict[str, Any]:
        # Most values are plain (a player's id, a number, a pile's cards): kept without a call.
        tree = self.tree
        made = {
            (k if type(k) is str else _key(k, fast)): (
                v if type(v) in PLAIN else tree(v, fast=fast)
            )
            for k, v in value.items()
        }
        if fast and len(made) < len(value):  # 1 and "1": json writes both, a dict holds one
            raise OddKey(value)
        return made

    def _list(self, value: list[Any] | tuple[Any, ...], fast: bool) -> list[Any]:
        if all(type(v) is str for v in value):  # cards, player ids: the common list
            return list(value)
        tree = self.tree
        return [v if type(v) in PLAIN else tree(v, fast=fast) for v in value]

    @staticmethod
    def dumps(tree: Any) -> bytes:
        """A fast ``tree``'s bytes; ``orjson.JSONEncodeError`` when orjson cannot write them as
        ``json`` would (then ``dumps_as_json`` of the tree made with ``fast=False``; ``tree``
        raises ``OddKey`` for the other case)."""
        return orjson.dumps(tree)

    @staticmethod
    def dumps_as_json(tree: Any) -> bytes:
        """A tree's bytes as the library has always written them."""
        return json.dumps(tree, separators=(",", ":"), ensure_ascii=False).encode()

    @staticmethod
    def canonical(stream: str, version: int, topic: str, tree: Any) -> bytes:
        """``domain.tlog.chain.canonical`` of a fast ``tree``: sorted keys, compact, UTF-8 (orjson
        sorts keys by their UTF-8 bytes, which is code point order, as ``json`` sorts them)."""
        body = {k: v for k, v in tree.items() if k != CHAIN}
        state = {"stream": stream, "version": version, "topic": topic, "state": body}
        return orjson.dumps(state, option=orjson.OPT_SORT_KEYS)

    @staticmethod
    def canonical_as_json(stream: str, version: int, topic: str, tree: Any) -> bytes:
        return canonical(stream, version, topic, tree)

    # Reading -----------------------------------------------------------------------------------

    def decode(self, data: bytes) -> Any:
        try:
            found = orjson.loads(data)
            if type(found) is dict:
                return self._hooked(found)
            if type(found) is list:
                return self._hooked_list(found)
            if type(found) is float:
                raise _Float
            return found
        except (orjson.JSONDecodeError, _Float):  # json reads them, or says what is wrong
            return super().decode(data)

    def _hooked(self, value: dict[str, Any]) -> Any:
        """The registered types put back into a read tree, innermost first, as ``json``'s
        ``object_hook`` does; ``_Float`` at a float, which may have been a big integer."""
        self._hook_items(value, value.items())
        if len(value) == 2 and "_type_" in value:
            return self._decode_obj(value)
        return value

    def _hooked_list(self, value: list[Any]) -> list[Any]:
        self._hook_items(value, enumerate(value))
        return value

    def _hook_items(
        self, into: dict[str, Any] | list[Any], items: Iterable[tuple[Any, Any]]
    ) -> None:
        """``_hooked`` for the dicts among ``items`` (the keys or indexes and values of ``into``),
        put back in their place; lists looked through alike; ``_Float`` at a float."""
        for key, v in items:
            kind = type(v)
            if kind is dict:
                into[key] = self._hooked(v)
            elif kind is list:
                self._hook_items(v, enumerate(v))
            elif kind is float:
                raise _Float
