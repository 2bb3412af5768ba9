"""Who may call what: the roles each RPC needs, and a table's binding to the dealer that opened
it (issue 11). ``admin`` holds every role. Health checking and reflection are not listed here:
they stay open to everyone.

| role | may |
|---|---|
| dealer | open tables; at its own tables seat, unseat, deal, arrange, reveal, and read and |
|  | watch them with every hand |
| cashier | credit, debit, balances |
| reader | balances, results, ledger, statistics; rounds once they are over |
| auditor | audit and export rounds once they are over; read them |
| witness | hand back cosignatures of the log's checkpoints (and read them and their proofs, as |
|  | every role may) |
| replica | nothing of its own: pass a call to the table's owner on behalf of its caller, who is |
|  | authorized there as if it had called the owner (``service.rpc.behalf``) |
| admin | everything, and every hand at every table |
"""

from __future__ import annotations

from service.caller import ADMIN, ANONYMOUS, Caller
from service.errors import NotFound, NotTableDealer, PermissionDenied, Unauthenticated
from service.security.policy import Policy

DEALER, CASHIER, READER, AUDITOR = "dealer", "cashier", "reader", "auditor"
WITNESS = "witness"
EVERY_ROLE = (DEALER, CASHIER, READER, AUDITOR, WITNESS)

# RPC (its method name; unique across the services) → the roles allowed besides admin.
METHOD_ROLES: dict[str, tuple[str, ...]] = {
    # thirteen.v1.WalletService
    "Credit": (CASHIER,),
    "Debit": (CASHIER,),
    "GetBalance": (CASHIER, READER),
    # thirteen.v1.TableService: a dealer only at its own tables (``check_dealer``)
    "OpenTable": (DEALER,),
    "GetTable": (DEALER,),
    "SitDown": (DEALER,),
    "StandUp": (DEALER,),
    "ListRounds": (DEALER,),
    "Deal": (DEALER,),
    "Arrange": (DEALER,),
    "Reveal": (DEALER,),
    "WatchTable": (DEALER,),
    # readers and auditors see a round once it is over (``check_round_known``)
    "GetRound": (DEALER, READER, AUDITOR),
    # thirteen.v1.ResultsService
    "GetRoundResult": (READER, AUDITOR),
    "ListRoundResults": (READER, AUDITOR),
    "ListLedgerEntries": (READER, AUDITOR),
    "ListPlayerRounds": (READER, AUDITOR),  # game recall: only rounds that are over
    "GetPlayerStats": (READER,),
    "GetLeaderboard": (READER,),
    # thirteen.v1.AuditService
    "ExportRound": (AUDITOR,),
    "AuditRound": (AUDITOR,),
    # thirteen.v1.TransparencyService: the log is public to every role
    "GetCheckpoint": EVERY_ROLE,
    "GetInclusionProof": EVERY_ROLE,
    "GetConsistencyProof": EVERY_ROLE,
    "AddCosignature": (WITNESS,),
    # thirteen.v1.DiagnosticsService
    "Echo": EVERY_ROLE,
}


def authorize(policy: Policy, identity: str | None, method: str) -> Caller:
    """The caller of ``method`` with the roles ``policy`` grants ``identity``; refused with
    UNAUTHENTICATED without an identity, PERMISSION_DENIED without one of the method's roles."""
    roles = policy.roles_of(identity)
    caller = Caller(identity or ANONYMOUS, roles)
    allowed = METHOD_ROLES.get(method)
    if allowed is None:  # fail closed: a method nobody listed is nobody's but admin's
        allowed = ()
    if ADMIN in roles or roles & set(allowed):
        return caller
    needed = (*allowed, ADMIN)
    if identity is None:
        raise Unauthenticated(
            f"{method} needs a client certificate whose identity has the role "
            f"{' or '.join(needed)}",
            roles=needed,
        )
    raise PermissionDenied(
        f"{identity!r} may not call {method}: it needs the role {' or '.join(needed)}",
        roles=needed,
    )


def runs_table(caller: Caller, dealer: str) -> bool:
    """Whether ``caller`` runs the table that ``dealer`` opened: that dealer, or admin. A table
    opened before tables were bound to their dealer (``dealer`` empty), or by an anonymous
    caller of a server without a policy, is any dealer's."""
    if caller.admin:
        return True
    unbound = dealer in ("", ANONYMOUS)
    return caller.has(DEALER) and (unbound or dealer == caller.identity)


def check_dealer(caller: Caller, table_id: str, dealer: str) -> None:
    """Refuse a command at a table that ``caller`` does not run (``runs_table``)."""
    if not runs_table(caller, dealer):
        raise NotTableDealer(
            f"table {table_id!r} is run by another dealer: only its dealer or an admin may "
            "seat, unseat, deal, arrange, reveal or watch hands there",
            roles=(DEALER, ADMIN),
        )


def viewer_for(caller: Caller, viewer: str, table_id: str, dealer: str) -> str:
    """The ``viewer`` a read of the table may take (``GetRound``, ``WatchTable``): any for the
    table's dealer or an admin; refused for another dealer, who would see a hand at a table it
    does not run; for anyone else an observer's view ("")."""
    if not viewer or caller.admin:
        return viewer
    if not caller.has(DEALER):
        return ""
    check_dealer(caller, table_id, dealer)
    return viewer


def sees_rounds_in_progress(caller: Caller) -> bool:
    """Dealers (as observers, at any table) and admin read rounds before they are over."""
    return caller.has(DEALER)


def check_round_known(caller: Caller, round_id: str, over: bool | None) -> None:
    """Readers and auditors see a round only once it is over; dealers and admin always. The
    answer must not tell whether a round exists (``over`` None: it does not): permission comes
    before existence (AIP-211), so a caller who may not read rounds in progress is refused
    alike, PERMISSION_DENIED with one message, for a round in progress and for none at all; a
    dealer or an admin, who may read both, hears NOT_FOUND for a round that does not exist
    (``service.rpc.rounds``)."""
    if sees_rounds_in_progress(caller):
        if over is None:
            raise NotFound(f"round {round_id!r} does not exist")
        return
    if over:
        return
    raise PermissionDenied(
        f"round {round_id!r} is not over, or does not exist: before a round's end only a dealer "
        "or an admin may read it",
        roles=(DEALER, ADMIN),
    )
