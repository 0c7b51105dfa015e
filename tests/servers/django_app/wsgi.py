"""``gunicorn -k gthread --threads 8 django_app.wsgi:application`` (from tests/servers)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "django_app.settings")
application = get_wsgi_application()
