"""Each table is served by one owner replica (issue 21): any replica takes any call, and passes
a command for a table it does not own to the owner, which holds the table, its rounds and their
chain heads in memory, so that its batches need no re-reads.

- ``owners``: which replica owns a table (rendezvous hashing over the live replicas);
- ``peers``: the replicas, from ``--peers`` or ``--peers-file``, and which of them answer;
- ``rounds``: the table a round belongs to (a cache fed by the log, else one indexed read);
- ``forwarding``: the interceptor that passes a call to its table's owner.

Routing is a matter of speed only: the store's optimistic appends keep every answer right
wherever a call runs, so a misrouted call, two replicas that both think they own a table, or a
replica joining or leaving costs at most a retry (docs/operating/replicas.md)."""
