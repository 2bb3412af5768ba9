"""Where a person or a process starts thirteen: the ``thirteen`` command line (``cli``), one
module per command group, each registering its subcommands; ``serve``, ``console`` and
``witness`` are the long-running ones."""
