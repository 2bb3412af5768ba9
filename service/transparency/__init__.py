"""The transparency log: the tree over every stored event and its signed checkpoints, kept by
the appender (``log``), read with its proofs (``reader``), its health (``health``), witnesses'
cosignatures (``cosignatures``), a server's options (``options``), its tables (``store``), its
key files (``keys``), an export's log section (``exports``) and its part of an audit
(``audits``)."""
