"""The recipe of spec_notes/deployment.md §ASGI: mcp_ref's WSGI app inside a Starlette (or
FastAPI) application, under uvicorn, through a2wsgi's WSGI-to-ASGI adapter.

    uvicorn asgi_mount:app --app-dir tests/servers --port 8000

Starlette routes its own endpoints (``/health``) and hands everything else to the MCP app, whose
Streamable HTTP endpoint is then ``/mcp`` and its HTTP+SSE one ``/sse``.
"""

from a2wsgi import WSGIMiddleware
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from mcp_ref.workbench.demo import build_server


async def health(request):
    return PlainTextResponse("ok")


# Each SSE stream holds one of the adapter's threads: the app keeps them to 16 of its 32.
mcp_app = WSGIMiddleware(build_server().wsgi_app(worker_threads=32), workers=32)
app = Starlette(routes=[Route("/health", health), Mount("/", app=mcp_app)])
