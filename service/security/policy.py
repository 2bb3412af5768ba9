"""Which roles an identity holds: ``thirteen serve --policy FILE``, a TOML file

    [identities]
    "spiffe://thirteen.dev/dealer" = ["dealer"]
    "spiffe://thirteen.dev/admin" = ["admin"]

Without a policy (a loopback or an explicitly ``--insecure`` server, or mutual TLS without
``--policy``) every caller is ``admin``, and the server says so at start."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from service.caller import ADMIN, reserved
from service.small_files import read_text

REPLICA = "replica"  # may forward a call on behalf of its caller (``service.rpc.behalf``)
ROLES = ("dealer", "cashier", "reader", "auditor", "witness", REPLICA, ADMIN)
MAX_IDENTITY_LENGTH = 512


class PolicyError(ValueError):
    """The policy file cannot be used; the message says what to change."""


@dataclass(frozen=True)
class Policy:
    """Identity → roles. ``open`` grants ``admin`` to everyone, the unauthenticated included."""

    grants: Mapping[str, frozenset[str]] = field(default_factory=dict)
    open: bool = False

    @classmethod
    def everyone_admin(cls) -> Policy:
        return cls(open=True)

    @classmethod
    def load(cls, path: Path) -> Policy:
        text = read_text(path, "the policy", PolicyError, not_text="is not UTF-8 text")
        return cls.parse(text, str(path))

    @classmethod
    def parse(cls, text: str, source: str = "the policy") -> Policy:
        try:
            document = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise PolicyError(f"{source} is not valid TOML: {error}") from None
        unknown = sorted(set(document) - {"identities"})
        if unknown:
            raise PolicyError(
                f"{source}: unknown table or key {unknown[0]!r}; expected [identities]"
            )
        identities = document.get("identities")
        if not isinstance(identities, dict) or not identities:
            raise PolicyError(
                f"{source} grants no roles: add [identities] with lines like "
                '"IDENTITY" = ["dealer"]'
            )
        grants: dict[str, frozenset[str]] = {}
        for identity, roles in identities.items():
            if not identity or len(identity) > MAX_IDENTITY_LENGTH or not identity.isprintable():
                raise PolicyError(f"{source}: identity {identity[:80]!r} is empty or not printable")
            if reserved(identity):
                raise PolicyError(
                    f"{source}: identity {identity!r} is reserved for the service itself "
                    "('anonymous' and names starting 'thirteen:'); name a certificate's identity"
                )
            if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
                raise PolicyError(f"{source}: the roles of {identity!r} must be a list of names")
            bad = [r for r in roles if r not in ROLES]
            if bad:
                raise PolicyError(
                    f"{source}: {identity!r} has unknown role {bad[0]!r}; "
                    f"roles are {', '.join(ROLES)}"
                )
            grants[identity] = frozenset(roles)
        return cls(grants)

    def roles_of(self, identity: str | None) -> frozenset[str]:
        """The roles granted to ``identity`` (None: no client certificate)."""
        if self.open:
            return frozenset({ADMIN})
        if identity is None:
            return frozenset()
        return self.grants.get(identity, frozenset())
