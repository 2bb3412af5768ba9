"""Read models derived only from stored events: round results, a double-entry coin ledger,
player statistics and table history. Rebuildable from scratch at any time."""
