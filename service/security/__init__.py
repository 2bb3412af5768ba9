"""Transport security and authorization: TLS credentials, the caller's identity from its client
certificate, and the policy that maps identities to roles."""
