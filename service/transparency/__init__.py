"""The transparency log: the tree over every stored event, its signed checkpoints and proofs
(``log``), its tables (``store``) and its key files (``keys``)."""
