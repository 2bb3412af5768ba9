"""Tamper evidence: each stream's hash chain, and the transparency log's crypto (the Merkle tree
of RFC 6962/9162, C2SP signed notes, checkpoints and cosignatures, and the check that exported
events are in the log the operator signed). Changes with the C2SP specifications, not with the
game."""
