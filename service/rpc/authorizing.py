"""Every call of a ``thirteen.v1`` service is authorized before its servicer runs: the caller's
identity from its client certificate (``service.security.identity``), its roles from the policy,
and the roles the method needs (``service.security.access``). A method with no row there is
refused (fail closed). Health checking and reflection are other packages: they pass untouched.
The caller is then the call's caller (``service.caller``): commands record it with their events.
A call another replica forwarded is made by the caller it names, when the forwarding replica may
say so (``service.rpc.behalf``).
"""

from __future__ import annotations

import time
from typing import Any

import structlog

from service import caller
from service.errors import PermissionDenied, Unauthenticated
from service.rpc.behalf import caller_identity
from service.rpc.guards import Context, GuardingInterceptor, Handler, guarded
from service.rpc.status import clip, to_status
from service.security.access import authorize
from service.security.identity import identity_of
from service.security.policy import Policy

log = structlog.get_logger("thirteen.rpc")

PACKAGE = "/thirteen.v1."


def admit(policy: Policy, context: Context[Any, Any], method: str) -> None:
    """Run the rest of this call as its caller (for a call a replica forwarded, the caller it
    names: ``service.rpc.behalf``), or raise why it may not call ``method``."""
    identity = caller_identity(policy, identity_of(context), context.invocation_metadata())
    caller.set_current(authorize(policy, identity, method))


class Authorize(GuardingInterceptor):
    def __init__(self, policy: Policy) -> None:
        super().__init__()
        self.policy = policy

    def wrap(self, path: str, found: Handler[Any, Any]) -> Handler[Any, Any]:
        if not path.startswith(PACKAGE):  # health and reflection: open to every caller
            return found
        method = path.rsplit("/", 1)[-1]

        async def admit_caller(request: Any, context: Context[Any, Any]) -> None:
            await self._admit(context, method)

        rewired = guarded(found, admit_caller)
        if rewired is None:  # fail closed: no thirteen.v1 method streams its requests
            raise TypeError(f"{path}: a call shape this server does not authorize")
        return rewired

    async def _admit(self, context: Context[Any, Any], method: str) -> None:
        started = time.perf_counter()
        try:
            admit(self.policy, context, method)
        except (Unauthenticated, PermissionDenied) as error:
            status = to_status(error)
            log.info(
                "rpc_refused",
                rpc=method,
                code=status.code.name,
                error=clip(error.message),
                ms=round((time.perf_counter() - started) * 1000, 2),
            )
            await context.abort_with_status(status)
