"""Offline tools: they read a store, a file or standard input and never serve. The score and
suggest JSON contract, the audit, the RNG kit, development certificates, key files and the
demo's bots (``service.entrypoints`` runs each)."""
