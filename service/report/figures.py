"""Numbers as the reports and the demo write them for people."""

from __future__ import annotations


def signed(value: int) -> str:
    """A change of points or coins with its sign; no change is ``0``.

    >>> signed(12), signed(-3), signed(0)
    ('+12', '-3', '0')
    """
    return f"{value:+d}" if value else "0"
