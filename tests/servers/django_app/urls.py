"""The MCP application under ``/tools/``: ``/tools/mcp`` is its Streamable HTTP endpoint."""

from django.urls import path

from . import views

urlpatterns = [
    path("", views.home),
    path("tools/<path:rest>", views.mcp),
]
