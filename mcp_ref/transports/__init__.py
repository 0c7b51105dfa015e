"""Transports: how messages move between client and server."""
