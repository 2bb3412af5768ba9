"""What every test run shares: the hypothesis profiles, set once here.

``default`` is what ``make test`` runs; ``quick`` (``make unit``, the quick loop) tries fewer
examples of each property; ``thorough`` many more, for a long look at one property
(``pytest --hypothesis-profile=thorough tests/unit/test_properties.py``). No property is timed:
the machines that run the tests are shared and noisy, and speed is the bench's business
(``make bench``)."""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("default", deadline=None, max_examples=200, print_blob=True)
settings.register_profile("quick", settings.get_profile("default"), max_examples=25)
settings.register_profile("thorough", settings.get_profile("default"), max_examples=2_000)
settings.load_profile("default")
