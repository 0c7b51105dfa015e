"""The smallest Django settings that serve the recipe: no database, one middleware (the stand-in
for ``django.contrib.auth``'s: it sets ``request.user``)."""

SECRET_KEY = "test-only-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = "django_app.urls"
INSTALLED_APPS: list = []
MIDDLEWARE = ["django_app.views.CookieUserMiddleware"]
DATABASES: dict = {}
USE_TZ = True
