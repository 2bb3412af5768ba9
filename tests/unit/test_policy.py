"""The policy file of ``thirteen serve --policy`` (issue 11 §3): identities → roles, and every
way a file can be unusable, each refused with a message that names the problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.security.policy import ROLES, Policy, PolicyError

GOOD = """
[identities]
"spiffe://thirteen.dev/dealer" = ["dealer"]
"spiffe://thirteen.dev/desk" = ["cashier", "reader"]
"ops.example" = ["admin"]
"spiffe://thirteen.dev/nobody" = []
"""


def test_a_good_file_grants_each_identity_its_roles(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(GOOD, encoding="utf-8")
    policy = Policy.load(path)
    assert policy.roles_of("spiffe://thirteen.dev/dealer") == {"dealer"}
    assert policy.roles_of("spiffe://thirteen.dev/desk") == {"cashier", "reader"}
    assert policy.roles_of("ops.example") == {"admin"}
    assert policy.roles_of("spiffe://thirteen.dev/nobody") == frozenset()
    assert not policy.open


def test_an_identity_the_policy_does_not_name_has_no_role() -> None:
    policy = Policy.parse(GOOD)
    assert policy.roles_of("spiffe://thirteen.dev/stranger") == frozenset()
    assert policy.roles_of("spiffe://thirteen.dev/DEALER") == frozenset()  # exact, not folded


def test_a_caller_without_identity_has_no_role_under_a_policy() -> None:
    assert Policy.parse(GOOD).roles_of(None) == frozenset()


def test_without_a_policy_everyone_is_admin_even_without_identity() -> None:
    policy = Policy.everyone_admin()
    assert policy.open
    assert policy.roles_of(None) == {"admin"}
    assert policy.roles_of("anyone") == {"admin"}


def test_every_suggested_role_is_known() -> None:
    assert set(ROLES) == {"dealer", "cashier", "reader", "auditor", "witness", "replica", "admin"}
    text = "[identities]\n" + "".join(f'"id-{r}" = ["{r}"]\n' for r in ROLES)
    policy = Policy.parse(text)
    assert [next(iter(policy.roles_of(f"id-{r}"))) for r in ROLES] == list(ROLES)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[identities]\n"a" = ["dealer", "croupier"]\n', "unknown role 'croupier'"),
        ('[identities]\n"a" = "dealer"\n', "must be a list of names"),
        ('[identities]\n"a" = [1]\n', "must be a list of names"),
        ('[identities]\n"a" = ["dealer"\n', "not valid TOML"),
        ("roles: dealer\n", "not valid TOML"),
        ("", "grants no roles"),
        ("[identities]\n", "grants no roles"),
        ('identities = ["a"]\n', "grants no roles"),
        ('[identities]\n"a" = ["dealer"]\n[extra]\n', "unknown table or key 'extra'"),
        ('[identities]\n"" = ["dealer"]\n', "empty or not printable"),
        ('[identities]\n"a\\u0007b" = ["dealer"]\n', "empty or not printable"),
    ],
)
def test_an_unusable_policy_is_refused_with_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        Policy.parse(text)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match=r"cannot read the policy .*missing\.toml"):
        Policy.load(tmp_path / "missing.toml")


def test_a_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_bytes(b'[identities]\n"\xff" = ["dealer"]\n')
    with pytest.raises(PolicyError, match="not UTF-8"):
        Policy.load(path)


def test_the_error_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text("[identities]\n", encoding="utf-8")
    with pytest.raises(PolicyError, match=str(path)):
        Policy.load(path)
