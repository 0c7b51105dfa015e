"""The recipe: a Django view that mounts the mcp_ref WSGI application under a URL prefix.

The view hands the request to the application on a thread of its own (``call_wsgi``) and streams
its answer back (``StreamingHttpResponse``), so SSE events (progress, an elicitation waiting for
the client's answer, the standalone GET stream) reach the client as they are sent.  Django's user
goes into the environ as ``mcp_ref.user``, where a tool reads it as ``ctx.http.user``.
"""

from django.http import HttpResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt

from mcp_ref.http.server.embed import call_wsgi

from .mcp_server import server

PREFIX = "/tools"
mcp_app = server.wsgi_app(allowed_hosts=["127.0.0.1", "localhost"])


@csrf_exempt  # MCP clients send no CSRF token; the app checks Origin itself (DNS-rebinding protection)
def mcp(request, rest: str):
    """Everything under ``/tools/``: ``/tools/mcp`` (Streamable HTTP), ``/tools/sse`` (2024-11-05)."""
    # The body is left unread, to the app: it checks Content-Length against its max_body_size before
    # reading, and reads a chunked body (which request.body would see empty) no further than that.
    environ = dict(request.META)
    environ.update(
        {
            "SCRIPT_NAME": request.META.get("SCRIPT_NAME", "")
            + PREFIX,  # the 2024-11-05 endpoint event names it
            "PATH_INFO": "/" + rest,
            "mcp_ref.user": request.user,  # ctx.http.user
        }
    )
    reply = call_wsgi(mcp_app, environ)
    response = StreamingHttpResponse(reply.body, status=reply.status_code, reason=reply.reason)
    for name, value in reply.headers:
        response[name] = value
    return response


def home(request):
    """The rest of the site."""
    return HttpResponse(f"hello {request.user}", content_type="text/plain")


class CookieUserMiddleware:
    """Stands in for ``django.contrib.auth.middleware.AuthenticationMiddleware`` (which needs a
    database): ``request.user`` from the ``user`` cookie.  With contrib.auth the view is the same."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.user = request.COOKIES.get("user", "AnonymousUser")
        return self.get_response(request)
