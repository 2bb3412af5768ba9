"""``TransparencyService``: the log's checkpoints, proofs and witnesses' cosignatures."""

from __future__ import annotations

from domain.errors import RuleError
from domain.ids import round_uuid
from domain.rules.limits import MAX_POSITION
from service import caller
from service._generated.thirteen.v1 import transparency_pb2 as pb
from service._generated.thirteen.v1 import transparency_pb2_grpc
from service.application import Thirteen
from service.errors import NotFound, Unavailable
from service.rpc.rounds import known_round
from service.rpc.runner import Context, Runner, rpc
from service.security.access import sees_rounds_in_progress
from service.transparency.log import TransparencyLog


class TransparencyServicer(transparency_pb2_grpc.TransparencyServiceServicer):
    """Translates the API to ``service.transparency.log``; ``log`` None when the server runs
    without one (then every call is UNAVAILABLE)."""

    def __init__(self, app: Thirteen, log: TransparencyLog | None, run: Runner) -> None:
        self.app = app
        self._log = log
        self.run = run

    @property
    def log(self) -> TransparencyLog:
        if self._log is None:
            raise Unavailable("this server runs without a transparency log")
        return self._log

    def _round_events(self, round_id: str) -> list[tuple[str, int, int]]:
        """The round's events, to a caller who may read the round (``check_round_known``:
        the answer tells no one else whether it exists, nor how many events it has)."""
        known_round(self.app, round_id)
        stream = round_uuid(round_id)
        versions = [e.originator_version for e in self.app.recorder.select_events(stream)]
        positions = self.app.database.positions([(stream, v) for v in versions])
        return [(str(stream), v, positions[stream, v]) for v in versions]

    def _event_at(self, position: int) -> tuple[str, int, int]:
        found = (
            self.app.recorder.select_notifications(start=position, limit=1)
            if 0 < position <= MAX_POSITION
            else []
        )
        if not found or found[0].id != position:
            raise NotFound(f"no event is stored at position {position}", field="position")
        return str(found[0].originator_id), found[0].originator_version, position

    def _inclusion(self, request: pb.GetInclusionProofRequest) -> pb.GetInclusionProofResponse:
        log = self.log
        size = log.tree_size(request.tree_size)
        target = request.WhichOneof("target")
        if target == "round_id":
            events = self._round_events(request.round_id)
        elif target == "position":
            events = [self._event_at(request.position)]
        else:
            raise RuleError("give a round_id or a position", field="target")
        located = log.locate([position for _, _, position in events], size)
        proofs = log.inclusion(located, size)
        checkpoint = log.store.checkpoint(size)
        response = pb.GetInclusionProofResponse(
            tree_size=size,
            events=[
                pb.EventInclusionProof(
                    stream=stream,
                    version=version,
                    position=where.position,
                    leaf_index=where.leaf_index,
                    hashes=proof,
                )
                for (stream, version, _), where, proof in zip(events, located, proofs, strict=True)
            ],
            checkpoint=log.text(checkpoint) if checkpoint else "",
        )
        if target == "position":
            response.leaf_index = located[0].leaf_index
            response.hashes.extend(proofs[0])
            if not sees_rounds_in_progress(caller.current()):
                # Only the hashes: a stream and its versions, position by position, would
                # tell which rounds exist and how far they are, before they are over.
                response.events[0].ClearField("stream")
                response.events[0].ClearField("version")
        return response

    def _consistency(
        self, request: pb.GetConsistencyProofRequest
    ) -> pb.GetConsistencyProofResponse:
        log = self.log
        new = log.tree_size(request.new_size)
        hashes = log.consistency(request.old_size, new)
        return pb.GetConsistencyProofResponse(
            old_size=request.old_size, new_size=new, hashes=hashes
        )

    @rpc
    async def GetCheckpoint(
        self, request: pb.GetCheckpointRequest, context: Context
    ) -> pb.GetCheckpointResponse:
        text = await self.run(lambda: self.log.text(self.log.latest()))
        return pb.GetCheckpointResponse(checkpoint=text)

    @rpc
    async def GetInclusionProof(
        self, request: pb.GetInclusionProofRequest, context: Context
    ) -> pb.GetInclusionProofResponse:
        return await self.run(self._inclusion, request)

    @rpc
    async def GetConsistencyProof(
        self, request: pb.GetConsistencyProofRequest, context: Context
    ) -> pb.GetConsistencyProofResponse:
        return await self.run(self._consistency, request)

    @rpc
    async def AddCosignature(
        self, request: pb.AddCosignatureRequest, context: Context
    ) -> pb.AddCosignatureResponse:
        log = self.log
        stored = await self.run(log.add_cosignature, request.checkpoint_cosignature)
        return pb.AddCosignatureResponse(checkpoint=await self.run(log.text, stored))
