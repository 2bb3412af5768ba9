"""AIP-158 pagination: opaque page tokens bound to what is being listed."""

from __future__ import annotations

import base64
import json

from domain.errors import RuleError

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000


def page(scope: str, page_size: int, page_token: str) -> tuple[int, int]:
    """(the key to continue after, the page size) of a list request. A negative size is
    refused, a size above the maximum is coerced to it, and a token from another listing or
    not from us is refused."""
    if page_size < 0:
        raise RuleError("page_size must not be negative", field="page_size")
    size = min(page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
    if not page_token:
        return 0, size
    try:
        data = json.loads(base64.urlsafe_b64decode(page_token.encode()))
        after = int(data["after"])
        if data["scope"] != scope or after < 0:
            raise ValueError
    except (ValueError, KeyError, TypeError):
        raise RuleError("page_token is not valid for this request", field="page_token") from None
    return after, size


def token(scope: str, after: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"scope": scope, "after": after}).encode()).decode()
