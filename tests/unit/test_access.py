"""Issue 11: roles per call and tables bound to their dealer (``service.security.access``)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from service.caller import Caller
from service.errors import NotFound, PermissionDenied, Unauthenticated
from service.security.access import authorize, check_dealer, check_round_known, runs_table
from service.security.identity import identity_in
from service.security.policy import Policy, PolicyError
from tests.support.certs import Authority

POLICY = Policy.parse(
    '[identities]\n"d1" = ["dealer"]\n"c" = ["cashier"]\n"both" = ["dealer", "cashier"]\n'
    '"root" = ["admin"]\n'
)


def test_a_role_the_method_names_is_enough_and_admin_has_every_role() -> None:
    assert authorize(POLICY, "c", "Credit").identity == "c"
    assert authorize(POLICY, "both", "Deal").roles == frozenset({"dealer", "cashier"})
    assert authorize(POLICY, "root", "Debit").admin


def test_an_identity_without_the_role_is_denied_naming_the_roles_that_would_do() -> None:
    with pytest.raises(PermissionDenied) as refused:
        authorize(POLICY, "d1", "Credit")
    assert refused.value.roles == ("cashier", "admin")
    with pytest.raises(PermissionDenied):
        authorize(POLICY, "someone-else", "Echo")


def test_no_identity_under_a_policy_is_unauthenticated() -> None:
    with pytest.raises(Unauthenticated) as refused:
        authorize(POLICY, None, "GetBalance")
    assert refused.value.roles == ("cashier", "reader", "admin")


def test_without_a_policy_everyone_is_admin_and_recorded_as_anonymous_or_its_certificate() -> None:
    assert authorize(Policy.everyone_admin(), None, "Credit") == Caller(
        "anonymous", frozenset({"admin"})
    )
    assert authorize(Policy.everyone_admin(), "spiffe://x", "Deal").identity == "spiffe://x"


@pytest.mark.parametrize(
    ("identity", "roles", "dealer", "runs"),
    [
        ("d1", {"dealer"}, "d1", True),
        ("d2", {"dealer"}, "d1", False),
        ("d2", {"dealer"}, "", True),  # opened before tables were bound
        ("d2", {"dealer"}, "anonymous", True),  # opened on a server without a policy
        ("root", {"admin"}, "d1", True),
        ("c", {"cashier"}, "", False),  # not a dealer at all
        ("d1", {"cashier"}, "d1", False),  # the same name without the role
    ],
)
def test_a_table_is_run_by_its_dealer_or_an_admin(
    identity: str, roles: set[str], dealer: str, runs: bool
) -> None:
    caller = Caller(identity, frozenset(roles))
    assert runs_table(caller, dealer) is runs
    if not runs:
        with pytest.raises(PermissionDenied):
            check_dealer(caller, "t", dealer)


def test_readers_see_a_round_once_it_is_over_dealers_always() -> None:
    reader = Caller("r", frozenset({"reader"}))
    check_round_known(reader, "r1", over=True)
    with pytest.raises(PermissionDenied):
        check_round_known(reader, "r1", over=False)
    check_round_known(Caller("d", frozenset({"dealer"})), "r1", over=False)


def test_a_reader_cannot_tell_a_round_in_progress_from_none_a_dealer_hears_not_found() -> None:
    """AIP-211, permission before existence: the same refusal, word for word, either way."""
    reader = Caller("r", frozenset({"reader", "auditor"}))
    refusals = []
    for over in (False, None):
        with pytest.raises(PermissionDenied) as refused:
            check_round_known(reader, "r1", over=over)
        refusals.append(refused.value.message)
    assert refusals[0] == refusals[1]
    with pytest.raises(NotFound):
        check_round_known(Caller("d", frozenset({"dealer"})), "r1", over=None)


@pytest.mark.parametrize("name", ["anonymous", "thirteen:sweeper", "thirteen:in-process"])
def test_names_the_service_gives_itself_cannot_be_claimed(name: str) -> None:
    """A policy or a certificate naming them would pass for the sweeper, the service itself or
    the callers of a server without a policy (whose tables are any dealer's)."""
    with pytest.raises(PolicyError, match="reserved"):
        Policy.parse(f'[identities]\n"{name}" = ["dealer"]\n')
    pem = Authority(Path(tempfile.mkdtemp())).issue("c", uri=name).cert.read_bytes()
    assert identity_in(pem) is None
