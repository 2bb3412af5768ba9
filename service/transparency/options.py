"""How a server keeps its transparency log (``LogOptions``, from ``thirteen serve``'s options),
and the log they build."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

import structlog

from domain.tlog.note import Signer, Verifier
from service.application import Thirteen
from service.transparency.health import STALL_AFTER
from service.transparency.log import CHECKPOINT_INTERVAL, TransparencyLog
from service.transparency.remembered import Remembered
from service.transparency.submitting import Submitter

log = structlog.get_logger("thirteen.transparency")


@dataclass(frozen=True)
class LogOptions:
    """How a server keeps its transparency log (``service.bootstrap.start``)."""

    key: Signer | None = None  # None: a key made for this process only, gone when it ends
    witnesses: tuple[Verifier, ...] = ()  # whose cosignatures AddCosignature keeps
    checkpoint_interval: float = CHECKPOINT_INTERVAL
    enabled: bool = True  # off only for the benchmark that measures what the log costs
    stall_after: float = STALL_AFTER
    appends: bool = True  # False: a ``thirteen worker`` appends and signs; this one serves
    remembered: Path | None = None  # where the last checkpoint the key signed is kept
    new_log: bool = False  # the key may start a new log over a store of another log's name
    witness_urls: tuple[str, ...] = ()  # tlog-witness witnesses each checkpoint is submitted to

    def build(self, app: Thirteen) -> TransparencyLog | None:
        if not self.enabled:
            return None
        key = self.key
        if key is None:
            key = Signer.from_seed(
                f"thirteen.invalid/ephemeral-{secrets.token_hex(4)}", secrets.token_bytes(32)
            )
            log.warning(
                "log_key_ephemeral",
                vkey=key.verifier.vkey,
                reason="no log key given: checkpoints are signed by a key this process forgets",
            )
        built = TransparencyLog(
            app,
            key,
            witnesses=self.witnesses,
            checkpoint_interval=self.checkpoint_interval,
            stall_after=self.stall_after,
            appends=self.appends,
            new_log=self.new_log or self.key is None,
            remembered=None
            if self.remembered is None or self.key is None
            else Remembered(self.remembered, key.verifier),
        )
        if self.witness_urls and not self.appends:  # a ``thirteen worker`` signs: it submits
            log.warning(
                "witness_urls_unused",
                witness_urls=list(self.witness_urls),
                reason="with --background worker the worker signs the checkpoints: give "
                "--witness-url to thirteen worker, which submits them",
            )
        elif self.witness_urls:
            built.submitter = Submitter(
                self.witness_urls,
                latest=built.store.latest_checkpoint,
                consistency=built.consistency,
                add_cosignature=built.add_cosignature,
                leading=lambda: built.leading and built.failure is None,
            )
        return built
