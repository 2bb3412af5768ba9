"""The event store as the service uses it: the log application with one writer per process
(group commit), each commit chained for tamper evidence, the follower that reads the log in
order, where the events are stored (SQLite or PostgreSQL, each with its own recorder), and the
locks that elect one leader among processes."""
