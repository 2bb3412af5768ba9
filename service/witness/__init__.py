"""An independent witness of the transparency log (issue 12, item 4): ``thirteen witness``
(``service.entrypoints.witness``).

It polls the log's latest checkpoint (``GetCheckpoint``), checks the log's signature on it with
the log's public key (C2SP signed-note), checks it extends the last checkpoint it accepted
(``GetConsistencyProof``, verified here with ``domain.tlog.merkle``: the server is never trusted),
records it in ``--state DIR`` (written to a new file, then renamed over the old one, so a
restart continues from it), cosigns it (C2SP tlog-cosignature, Ed25519) and hands the
cosignature back (``AddCosignature``). While the log does not grow it cosigns the same
checkpoint again, with a new time, once its cosignature is ``REFRESH_AFTER`` (an hour) old.

A checkpoint that does not verify, a smaller tree, another root at the same size, a tree that
does not extend the accepted one (its proof does not verify, or is empty or malformed) or a
consistency proof refused outright is never cosigned: one ``ALARM`` line on stderr names both
checkpoints (sizes and roots) and where the note shown is kept as evidence
(``DIR/evidence/``), and the witness exits with status 3. A log that shows a newer signed
checkpoint but does not answer for its consistency proof with a code an outage could explain
(``RETRIED``, ``REFUSALS``) is not trusted either: the checkpoint is kept as evidence, the poll
counted in ``DIR/unproven``, and at the ``--alarm-after``-th such poll (default 3) it is an
alarm too. Every checkpoint so shown must later be proven consistent with the accepted one
(``_settle``): a second root for its size, or a proof that fails, is an alarm, and each poll at
which the log does not prove it counts; only when all are proven does the count reset. The
state keeps the last
accepted checkpoint, so an alarm is raised again on every later run against that log. One
witness at a time uses a state directory (a lock on ``DIR/lock``).

With ``--listen HOST:PORT`` instead of ``--log`` it serves C2SP ``tlog-witness`` over HTTP
(``http``, ``cosigning``): logs submit their checkpoints with a consistency proof from the size
it last cosigned, and it answers its cosignature or the specification's status; one state
directory per log under ``DIR/logs/``, laid out as the polling witness's.

Exit status: 0 ``--once`` cosigned or found nothing new; 1 the log cannot be reached under
``--once``, leaves a checkpoint it showed unproven (fewer than ``--alarm-after`` times), or refuses
the witness (its key not given to ``serve --witness-key``, a caller without the ``witness``
role); 2 bad arguments or files, or a state directory in use by another witness; 3 alarm.
Without ``--once`` a log that cannot be reached is retried after ``--interval`` seconds.
"""
