"""A Django project that mounts an mcp_ref server under ``/tools/`` (the recipe of
spec_notes/deployment.md §Mounting inside Django or Flask; tests/http/test_web_app.py runs it under gunicorn)."""
