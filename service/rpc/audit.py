"""``AuditService``: exports and audits of rounds over gRPC."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from domain import visibility
from domain.errors import PhaseError
from domain.findings import passed
from projections.store import ViewStore
from service._generated.thirteen.v1 import audit_pb2, audit_pb2_grpc
from service.application import Thirteen
from service.evidence import Decoder, Evidence, StoreReader, audit
from service.rpc.rounds import known_round
from service.rpc.runner import Context, Runner, rpc
from service.rpc.views import Views
from service.transparency.audits import StoreLogAudit
from service.transparency.exports import logged
from service.transparency.log import TransparencyLog


def result_reader(views: ViewStore) -> Callable[[str], dict[str, Any] | None]:
    """The results view's result of a round, read as it is (the offline audit's)."""

    def result_of(round_id: str) -> dict[str, Any] | None:
        found = views.finished_round(round_id)
        return found.result.to_dict() if found and found.result else None

    return result_of


def current_result_reader(app: Thirteen, views: Views) -> Callable[[str], dict[str, Any] | None]:
    """The results view's result of a round, as of the call (``service.rpc.views``): of a
    round that is over, never missing because the views lag; else UNAVAILABLE."""

    def result_of(round_id: str) -> dict[str, Any] | None:
        found = views.finished_round(round_id, lambda: app.round(round_id).ended)
        return found.result.to_dict() if found and found.result else None

    return result_of


class AuditServicer(audit_pb2_grpc.AuditServiceServicer):
    def __init__(
        self,
        app: Thirteen,
        views: Views,
        run: Runner,
        transparency: TransparencyLog | None = None,
    ) -> None:
        self.app = app
        self.reader = StoreReader(app, current_result_reader(app, views))
        self.decoder = Decoder()
        self.run = run
        self.transparency = transparency  # exports carry inclusion proofs when there is one
        # An audit checks the round's events against the log's latest checkpoint (issue 12).
        self.logged = (
            None
            if transparency is None
            else StoreLogAudit(app, transparency.signer.verifier, transparency, own_key=True)
        )

    def _evidence(self, round_id: str) -> Evidence:
        """The evidence of a round to audit: an auditor's once the round is over (before, the
        findings would tell who arranged a foul or declared a special), an admin's always."""
        known_round(self.app, round_id)  # refused alike in progress and unknown (auditors)
        return self.reader.evidence(round_id)

    def _export(self, round_id: str) -> Evidence:
        """The evidence of a finished round. Before the end it would carry secrets: every
        hand and submission, and the opening of a table opened by the first versions holds
        the first round's server seed in clear (R12.1)."""
        if not visibility.is_public(known_round(self.app, round_id)):  # a dealer's or admin's
            raise PhaseError(
                f"round {round_id} is not over yet: it can be exported once it is "
                "revealed or abandoned",
                field="round_id",
            )
        return self.reader.evidence(round_id)

    @rpc
    async def ExportRound(
        self, request: audit_pb2.ExportRoundRequest, context: Context
    ) -> audit_pb2.ExportRoundResponse:
        evidence = await self.run(self._export, request.round_id)
        if self.transparency is not None:
            evidence.log = await logged(
                self.transparency, self.app, evidence, request.earlier_tree_size, self.run
            )
        return audit_pb2.ExportRoundResponse(document=evidence.document())

    @rpc
    async def AuditRound(
        self, request: audit_pb2.AuditRoundRequest, context: Context
    ) -> audit_pb2.AuditRoundResponse:
        evidence = await self.run(self._evidence, request.round_id)
        evidence.receipt = request.receipt
        findings = await self.run(audit, evidence, self.decoder)
        if self.logged is not None:
            findings += await self.run(self.logged.round, evidence)
        return audit_pb2.AuditRoundResponse(
            ok=passed(findings),
            findings=[
                audit_pb2.Finding(rule=f.rule, ok=f.ok, message=f.message, event=f.event)
                for f in findings
            ],
        )
