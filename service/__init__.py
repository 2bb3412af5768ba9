"""The outside of thirteen: command line, gRPC adapter, application and server."""
