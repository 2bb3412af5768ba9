"""The replicas of a store and which of them answer: the list comes from ``serve --peers`` (a
fixed list) or ``--peers-file`` (read again at every check, so replicas can be added or taken
out without a restart); each is asked ``grpc.health.v1.Health/Check`` once a second, and one
that fails ``DOWN_AFTER`` checks in a row, or cannot be connected to when a call is passed to
it, owns nothing until it answers again. This replica counts itself live while it serves."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import structlog
from grpc_health.v1 import health_pb2

from service.routing.owners import owner
from service.small_files import read_text

log = structlog.get_logger("thirteen.routing")

CHECK_INTERVAL = 1.0  # seconds between two health checks of every peer
CHECK_TIMEOUT = 1.0
DOWN_AFTER = 2  # failed checks in a row before a peer owns nothing
RETIRE_GRACE = 35.0  # a peer taken off the list: its calls in flight may end (FORWARD_TIMEOUT)
MAX_PEERS = 64
OWNERS_KEPT = 65_536  # tables whose owner is remembered for the live set (then forgotten at once)
HEALTH_CHECK = "/grpc.health.v1.Health/Check"
_SERVING = health_pb2.HealthCheckResponse.SERVING


class PeersError(ValueError):
    """The peer list cannot be used; the message says what to change."""


def parse_peers(text: str, source: str) -> tuple[str, ...]:
    """``HOST:PORT`` entries, separated by commas or lines (``#`` starts a comment)."""
    entries: list[str] = []
    for line in text.splitlines():
        for entry in line.split("#", 1)[0].split(","):
            entry = entry.strip()
            if not entry:
                continue
            host, _, port = entry.rpartition(":")
            if not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise PeersError(f"{source}: {entry[:80]!r} is not HOST:PORT")
            if entry not in entries:
                entries.append(entry)
    if len(entries) > MAX_PEERS:
        raise PeersError(f"{source}: {len(entries)} peers; at most {MAX_PEERS}")
    return tuple(entries)


def peers_file(path: Path) -> Callable[[], tuple[str, ...]]:
    """The peers listed in ``path`` now (read at each call)."""
    return lambda: parse_peers(read_text(path, "the peers file", PeersError), str(path))


class Peers:
    """``me`` (this replica's advertised address, once it is known: ``bind``) and the other
    replicas that answer."""

    def __init__(
        self,
        listed: Callable[[], Sequence[str]],
        credentials: grpc.ChannelCredentials | None = None,
        *,
        interval: float = CHECK_INTERVAL,
    ) -> None:
        self.me = ""
        self.listed = listed
        self.credentials = credentials
        self.interval = interval
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._callers: dict[tuple[str, str], grpc.aio.UnaryUnaryMultiCallable[Any, bytes]] = {}
        self._failures: dict[str, int] = {}
        self._live: tuple[str, ...] = ()  # replaced whole: threads read it without a lock
        # The owners found for the live set they were computed from (one hash per replica and
        # table, every routed call): replaced whole with it, so no thread reads an owner of
        # another live set.
        self._owners: tuple[tuple[str, ...], dict[str, str]] = ((), {})
        self._task: asyncio.Task[None] | None = None
        self._closing: set[asyncio.Task[None]] = set()  # channels of peers no longer listed
        self._strangers: set[str] = set()  # peers that serve another store
        self.store = ""  # the health service this store's replicas answer (``bind``)

    def bind(self, me: str, store: str = "") -> None:
        """This replica is ``me`` (its address as the others list it), serving the store whose
        replicas answer the health service ``store``; it owns every table until the first check
        has found the others."""
        self.me = me
        self.store = store
        self._live = ()  # the first check publishes (and logs) the live set

    def live(self) -> tuple[str, ...]:
        """The replicas that own tables now, this one included."""
        return self._live

    def owner(self, table_id: str) -> str:
        """The live replica that owns ``table_id`` (computed once per live set)."""
        live, owners = self._owners
        if live is not self._live:
            live, owners = self._live, {}
            self._owners = (live, owners)
        found = owners.get(table_id)
        if found is None:
            found = owner(table_id, live) or self.me
            if len(owners) >= OWNERS_KEPT:
                owners.clear()
            owners[table_id] = found
        return found

    def owns(self, table_id: str) -> bool:
        return self.owner(table_id) == self.me

    def channel(self, peer: str) -> grpc.aio.Channel:
        """The channel to ``peer``, opened once (on the server's event loop)."""
        channel = self._channels.get(peer)
        if channel is None:
            options = [("grpc.enable_retries", 0)]
            channel = (
                grpc.aio.insecure_channel(peer, options=options)
                if self.credentials is None
                else grpc.aio.secure_channel(peer, self.credentials, options=options)
            )
            self._channels[peer] = channel
        return channel

    def caller(
        self, peer: str, path: str, serialize: Callable[[Any], bytes]
    ) -> grpc.aio.UnaryUnaryMultiCallable[Any, bytes]:
        """The method ``path`` of ``peer``, sending requests encoded by ``serialize`` and
        handing back the answer's bytes as they came (made once per peer and method)."""
        key = (peer, path)
        found = self._callers.get(key)
        if found is None:
            found = self._callers[key] = self.channel(peer).unary_unary(
                path, request_serializer=serialize, response_deserializer=None
            )
        return found

    def unreachable(self, peer: str) -> None:
        """A call could not reach ``peer``: it owns nothing until a check says otherwise."""
        self._failures[peer] = DOWN_AFTER
        self._publish()

    async def start(self) -> None:
        """Check every peer now, then once every ``interval`` seconds."""
        await self.check()
        self._task = asyncio.create_task(self._run(), name="peers")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        for channel in self._channels.values():
            await channel.close()
        self._channels.clear()
        for closing in list(self._closing):
            closing.cancel()
        self._callers.clear()

    async def check(self) -> None:
        """Ask every listed peer for its health, and publish the live set."""
        try:
            listed = [peer for peer in await asyncio.to_thread(self.listed) if peer != self.me]
        except PeersError as error:  # a file being rewritten: keep the last list
            log.warning("peers_unreadable", error=str(error))
            listed = [peer for peer in self._failures if peer != self.me]
        for gone in set(self._failures) - set(listed):
            self._failures.pop(gone)
            channel = self._channels.pop(gone, None)
            self._callers = {key: c for key, c in self._callers.items() if key[0] != gone}
            if channel is not None:  # calls passed on through it end first (or time out)
                closing = asyncio.create_task(channel.close(grace=RETIRE_GRACE))
                self._closing.add(closing)
                closing.add_done_callback(self._closing.discard)
        answers = await asyncio.gather(*(self._healthy(peer) for peer in listed))
        for peer, ok in zip(listed, answers, strict=True):
            failed = DOWN_AFTER if peer in self._strangers else self._failures.get(peer, 0) + 1
            self._failures[peer] = 0 if ok else failed  # another store's: down at once
        self._publish()

    def _publish(self) -> None:
        live = tuple(
            sorted([self.me, *(p for p, failed in self._failures.items() if failed < DOWN_AFTER)])
        )
        if live != self._live:
            log.info("replicas_live", me=self.me, live=list(live))
            self._live = live

    async def _healthy(self, peer: str) -> bool:
        """Whether ``peer`` serves, and serves this replica's store (``store``: the health
        service a replica of it answers, ``service.routing.identity``)."""
        check = self.channel(peer).unary_unary(
            HEALTH_CHECK,
            request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
            response_deserializer=health_pb2.HealthCheckResponse.FromString,
        )
        asked = health_pb2.HealthCheckRequest(service=self.store)
        try:
            answer = await check(asked, timeout=CHECK_TIMEOUT)
        except grpc.aio.AioRpcError as error:
            if error.code() == grpc.StatusCode.NOT_FOUND and peer not in self._strangers:
                self._strangers.add(peer)  # said once: it owns nothing while it is listed
                log.warning(
                    "peer_serves_another_store",
                    peer=peer,
                    reason="it does not answer for this store: list only replicas of one store",
                )
            return False
        self._strangers.discard(peer)
        return bool(answer.status == _SERVING)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.check()
            except Exception:  # a check must never end the loop
                log.exception("peers_check_failed")


@dataclass(frozen=True)
class Routing:
    """How a serving process finds its peers (``serve --peers``, ``--peers-file``): the list,
    the address the others know this replica by (default: the address it listens on, with
    the port it bound), and the credentials its calls to them use (None: plaintext)."""

    listed: Callable[[], Sequence[str]]
    advertise: str | None = None
    credentials: grpc.ChannelCredentials | None = None
