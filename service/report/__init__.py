"""A round's dispute report (``dispute`` holds it, ``explain`` builds it, ``words`` and ``html``
word it) and its step-by-step replay; the command line and the web console both show them."""
