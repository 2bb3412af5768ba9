"""Where a serving process's work no caller waits for runs (``thirteen serve --background``):
the views' projector and the transparency log's appender and signer, ``here`` in the serving
process, or in a ``thirteen worker`` beside it (``service.bootstrap.working``). Imports nothing,
so the command line can offer the choices without loading a server."""

BACKGROUNDS = ("here", "worker")
HERE, WORKER = BACKGROUNDS
