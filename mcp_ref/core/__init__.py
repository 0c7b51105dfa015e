"""The protocol core: JSON-RPC, errors, the lifecycle table, the session, the transport contract
and the types.  It imports nothing above it (server, client, transports, extras, workbench)."""
