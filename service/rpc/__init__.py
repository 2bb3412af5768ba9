"""The gRPC adapter: everything a ``.proto`` change touches. The server, one servicer module per
proto service, the RPC runner, proto ↔ domain mapping, the status map, paging and watch
streams. It translates and calls the application; no rule lives here."""
