"""A round's dispute report (``explain``: its data, in words and as HTML) and its step-by-step
replay; the command line and the web console both show them."""
