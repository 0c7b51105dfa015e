"""``mcp-ref inspect``: a web page, served by this library on 127.0.0.1, that shows the protocol.

The inspector holds one :class:`~mcp_ref.client.Client` to a server (a command line over stdio, or
a URL over HTTP) and records every message that client sends and receives, with the HTTP exchanges
and SSE events that carried them and a launched server's stderr.  A page in the browser shows the
conversation as a sequence diagram (each message checked against the official JSON Schema of the
negotiated revision, and linked to its spec section), and drives the client: tools, resources,
prompts, and the client's own side (sampling, elicitation, roots, logs, tasks).

Its parts, each imported only when ``mcp-ref inspect`` (or ``mcp-ref dev``) runs:

- :mod:`~mcp_ref.inspector.conversation`: the bounded record of the conversation, and its export;
  :mod:`~mcp_ref.inspector.checks` (the schema check and spec link of each message),
  :mod:`~mcp_ref.inspector.masking` (secrets masked) and :mod:`~mcp_ref.inspector.http_view`
  (the HTTP records).
- :mod:`~mcp_ref.inspector.live`: :class:`~mcp_ref.inspector.live.InspectedServer`, the live
  connection and what the page may ask of it; the server's own requests wait there for the page.
- :mod:`~mcp_ref.inspector.app`: the WSGI application the page talks to (a secret token in every
  address, Host and Origin checked, a strict Content-Security-Policy), and the server it runs on.
- ``static/``: the page (plain HTML, CSS and JavaScript; nothing fetched from another host).

docs/inspector.md is the guide.  Nothing here is imported by the rest of the package.
"""
