"""``thirteen console``: a read-only web application for dispute staff.

It talks to the service over gRPC only (never to a database) and draws server-side HTML: no script
at all. ``service.entrypoints.console`` starts it, ``app`` holds the routes and the headers every
answer carries, ``access`` the access log, ``backend`` the gRPC calls (at most so many at once) and
how their errors become HTTP statuses, ``round_view`` turns a round's export into the dispute report
of ``service.report.explain``, ``pages`` and ``round_page`` draw the pages (the round's report with
``service.report.html``'s own renderers), ``markup`` the page frame, links and style, ``labels``
every label in English and Chinese.
"""
