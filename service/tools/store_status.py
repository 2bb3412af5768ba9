"""What a store holds (``thirteen status``, issue 23): its events and their class versions, the
views' schema, the seed key ids its tables' next deals are committed under, the transparency
log's size, names and latest checkpoint, and the upgrade steps a start of this version takes or
needs. Read only: nothing here writes to the store or makes a key."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from projections.store import SCHEMA_VERSION

if TYPE_CHECKING:
    from service.application import Thirteen

TABLE_COMMITS = ("domain.table:Table.Opened", "domain.table:Table.RoundEnded")
"""The events that publish a table's commitment to its next deal (R12.1), with its key id."""
BATCH = 5000


def seed_commitments(app: Thirteen) -> Counter[str]:
    """How many tables have their next deal committed under each seed key id; ``""`` counts
    the tables whose next seed the first release recorded in clear (they need no key for it,
    and commit under the current key at that round's end). One pass over the tables' opening
    and round-end events."""
    latest: dict[str, str] = {}
    position = 0
    while True:
        batch = app.recorder.select_notifications(
            start=position + 1, limit=BATCH, topics=TABLE_COMMITS
        )
        if not batch:
            break
        for notification in batch:
            state = json.loads(notification.state)
            latest[str(notification.originator_id)] = str(state.get("seed_key", ""))
        position = batch[-1].id
    return Counter(latest.values())


@dataclass
class Status:
    """What ``thirteen status`` says of a store."""

    store: str
    events: int = 0
    event_versions: dict[str, dict[str, int]] = field(default_factory=dict)
    views_schema: int | None = None  # None: no views yet
    views_position: int = 0
    seed_keys: dict[str, int] = field(default_factory=dict)  # key id → tables ("" in clear)
    seed_key_file: dict[str, Any] | None = None
    log_size: int | None = None  # None: the store was never served with a transparency log
    log_names: list[dict[str, Any]] = field(default_factory=list)
    latest_checkpoint: dict[str, Any] | None = None
    pending: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "store": self.store,
            "events": {"count": self.events, "class_versions": self.event_versions},
            "views": {
                "schema": self.views_schema,
                "current_schema": SCHEMA_VERSION,
                "position": self.views_position,
            },
            "seed_keys": {
                "tables_by_key_id": self.seed_keys,
                "file": self.seed_key_file,
            },
            "transparency_log": {
                "size": self.log_size,
                "names": self.log_names,
                "latest_checkpoint": self.latest_checkpoint,
            },
            "pending": self.pending,
        }


def event_versions(app: Thirteen) -> dict[str, dict[str, int]]:
    """Every event type in the store with how many of its events each class version holds
    (1 where the state names none)."""
    counts: dict[str, Counter[str]] = {}
    position = 0
    while True:
        batch = app.recorder.select_notifications(start=position + 1, limit=BATCH)
        if not batch:
            break
        for notification in batch:
            version = json.loads(notification.state).get("class_version", 1)
            kind = notification.topic.rsplit(":", 1)[-1]
            counts.setdefault(kind, Counter())[f"v{version}"] += 1
        position = batch[-1].id
    return {kind: dict(sorted(found.items())) for kind, found in sorted(counts.items())}


def status(app: Thirteen, data: Path, seed_key: Path | None) -> Status:
    """What the store of ``app`` (under ``data``) holds; ``seed_key`` is the seed key file to
    compare the tables' key ids with (default ``<data>/seed.key``)."""
    from service.seed_keys import SEED_KEY_FILE, SeedKeyError, read

    kind = app.database.kind
    said = f"{kind} {data / 'thirteen.sqlite'}" if kind == "sqlite" else kind
    found = Status(store=said, events=app.max_position())
    found.event_versions = event_versions(app)
    _views(app, data, found)
    found.seed_keys = dict(sorted(seed_commitments(app).items()))
    needed = {k for k in found.seed_keys if k}
    path = seed_key or data / SEED_KEY_FILE
    if path.exists():
        try:
            ring = read(path)
        except SeedKeyError as error:
            found.seed_key_file = {"path": str(path), "error": str(error)}
        else:
            missing = sorted(needed - set(ring.ids))
            found.seed_key_file = {
                "path": str(path),
                "current": ring.current,
                "key_ids": list(ring.ids),
                "missing": missing,
            }
            if missing:
                found.pending.append(
                    f"the seed key file {path} lacks key ids {', '.join(missing)} that tables "
                    "are committed under: restore the file that holds them"
                )
    elif needed:
        found.pending.append(
            f"no seed key file at {path}, but tables are committed under key ids "
            f"{', '.join(sorted(needed))}: restore the file that holds them (--seed-key FILE)"
        )
    elif found.seed_keys:
        found.pending.append(
            f"no seed key file at {path}; the tables' next seeds are in clear (an earlier "
            "release): on SQLite `thirteen serve` makes the file on its start, on PostgreSQL "
            f"run `thirteen seed-key init {path}` once and give it to every server"
        )
    if found.seed_keys.get(""):
        found.pending.append(
            f"{found.seed_keys['']} tables hold their next seed in clear (an earlier release): "
            "each deals it once and commits under the seed key from that round's end"
        )
    _log(app, found)
    return found


def _views(app: Thirteen, data: Path, found: Status) -> None:
    if app.database.kind == "sqlite" and not (data / "views.sqlite").exists():
        found.pending.append(
            "no views: the first server to start builds them from the log (or `thirteen "
            "projections rebuild`)"
        )
        return
    views, _ = app.database.views()
    try:
        found.views_schema = views.schema_version()
        found.views_position = views.position()
    except Exception:  # no views' tables in this schema yet
        found.pending.append("no views: the first server to start builds them from the log")
        return
    finally:
        views.close()
    if found.views_schema < SCHEMA_VERSION:
        found.pending.append(
            f"the views are of schema {found.views_schema}, this version's is {SCHEMA_VERSION}: "
            "the first server to start rebuilds them (results answer UNAVAILABLE meanwhile), "
            "or run `thirteen projections rebuild` with no server running"
        )
    elif found.views_schema > SCHEMA_VERSION:
        found.pending.append(
            f"the views are of schema {found.views_schema}, newer than this version's "
            f"{SCHEMA_VERSION}: this version leaves them alone (docs/operating/upgrade.md)"
        )


def _log(app: Thirteen, found: Status) -> None:
    from service.transparency.store import TreeStore

    tree = TreeStore(app)
    if not tree.exists():
        if found.events:
            found.pending.append(
                "no transparency log yet: the first server to start appends every event and "
                "signs its first checkpoint (with a log key: on PostgreSQL it must exist)"
            )
        return
    found.log_size = tree.state().size
    found.log_names = [
        {"name": name, "first_size": low, "last_size": high} for name, low, high in tree.origins()
    ]
    latest = tree.latest_checkpoint()
    if latest is not None:
        found.latest_checkpoint = {
            "name": latest.note.split("\n", 1)[0],
            "size": latest.size,
            "root": latest.root.hex(),
            "key_ids": _key_lines(latest.note),
        }
    if found.log_size < found.events:
        found.pending.append(
            f"the transparency log holds {found.log_size} of the events: the next server to "
            "start appends the rest"
        )


def _key_lines(note: str) -> list[str]:
    """The signers of a signed note: each signature line's key name and key id (hex)."""
    import base64

    named = []
    for line in note.split("\n\n", 1)[-1].splitlines():
        words = line.split(" ")
        if len(words) == 3 and words[0] == "\u2014":
            named.append(f"{words[1]}+{base64.b64decode(words[2])[:4].hex()}")
    return named


def text(found: Status) -> str:
    """The status as lines for a person."""
    lines = [f"store: {found.store}", f"events: {found.events}"]
    for kind, versions in found.event_versions.items():
        lines.append(f"  {kind}: " + ", ".join(f"{v} ×{n}" for v, n in versions.items()))
    schema = "none" if found.views_schema is None else str(found.views_schema)
    lines.append(
        f"views: schema {schema} (this version's: {SCHEMA_VERSION}), "
        f"at event {found.views_position}"
    )
    lines.append("seed keys the tables' next deals are committed under:")
    for key_id, tables in found.seed_keys.items():
        lines.append(f"  {key_id or '(in clear, an earlier release)'}: {tables} tables")
    if found.seed_key_file is not None:
        if "error" in found.seed_key_file:
            lines.append(f"  file {found.seed_key_file['path']}: {found.seed_key_file['error']}")
        else:
            held = ", ".join(found.seed_key_file["key_ids"])
            lines.append(f"  file {found.seed_key_file['path']}: key ids {held}")
    if found.log_size is None:
        lines.append("transparency log: none yet")
    else:
        lines.append(f"transparency log: {found.log_size} events")
        for name in found.log_names:
            lines.append(
                f"  log {name['name']}: checkpoints of {name['first_size']} to "
                f"{name['last_size']} events"
            )
        latest = found.latest_checkpoint
        if latest is not None:
            lines.append(
                f"  latest checkpoint: {latest['name']}, {latest['size']} events, root "
                f"{latest['root']}, signed by {', '.join(latest['key_ids'])}"
            )
    lines.append("pending:" if found.pending else "pending: nothing")
    lines += [f"  - {step}" for step in found.pending]
    return "\n".join(lines)
