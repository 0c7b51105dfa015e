"""The recipe under Flask: a route that mounts the mcp_ref WSGI application under ``/tools/``.

As the Django view does (tests/servers/django_app/views.py): the request is handed to the
application on a thread of its own (``call_wsgi``) and its answer streamed back, so SSE events reach
the client as they are sent.  The site's user (here: the ``user`` cookie, standing in for
Flask-Login's ``current_user``) goes into the environ as ``mcp_ref.user``: ``ctx.http.user``.
"""

from django_app.mcp_server import server
from flask import Flask, Response, request

from mcp_ref.http.server.embed import call_wsgi

PREFIX = "/tools"
mcp_app = server.wsgi_app(allowed_hosts=["127.0.0.1", "localhost"])
app = Flask(__name__)


@app.route(PREFIX + "/<path:rest>", methods=["GET", "POST", "DELETE"])
def mcp(rest: str) -> Response:
    """Everything under ``/tools/``: ``/tools/mcp`` (Streamable HTTP), ``/tools/sse`` (2024-11-05)."""
    # The body is left unread, to the app: it checks Content-Length against its max_body_size before
    # reading, and reads a chunked body no further than that (request.get_data() would hold it all).
    environ = dict(request.environ)
    environ.update(
        {
            "SCRIPT_NAME": request.environ.get("SCRIPT_NAME", "") + PREFIX,
            "PATH_INFO": "/" + rest,
            "mcp_ref.user": request.cookies.get("user", "anonymous"),  # ctx.http.user
        }
    )
    reply = call_wsgi(mcp_app, environ)
    return Response(reply.body, status=reply.status, headers=reply.headers)


@app.route("/")
def home() -> str:
    """The rest of the site."""
    return f"hello {request.cookies.get('user', 'anonymous')}"
