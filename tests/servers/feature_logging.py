"""A server for tests/server/test_logging_completion.py.

``feature_logging.py``                 logging (the ``emit`` tool) and completions
``feature_logging.py no-completions``  the same prompt and template, no completion handlers
"""

from __future__ import annotations

import json
import sys

from mcp_ref import Context, Server
from mcp_ref.server import LOG_LEVELS

CITIES = {"fr": ["Paris", "Lyon", "Lille", "Marseille"], "de": ["Berlin", "Bonn", "Hamburg"]}
NUMBERS = [str(i) for i in range(250)]


def build(completions: bool) -> Server:
    server = Server("feature-logging")

    @server.tool()
    def emit(ctx: Context) -> str:
        """Log one message at every level, lowest first; return the levels that passed the filter."""
        sent = [
            level
            for seq, level in enumerate(LOG_LEVELS)
            if ctx.log(level, {"seq": seq, "level": level}, "feature")
        ]
        return json.dumps(sent)

    @server.prompt()
    def pick(number: str, letter: str = "a") -> str:
        """Pick a number and a letter."""
        return f"{number}{letter}"

    @server.resource("feature://cities/{country}/{city}")
    def city(country: str, city: str) -> str:
        return f"{city}, {country}"

    if completions:

        @server.completion(prompt="pick")
        def complete_pick(argument: str, value: str, context: dict) -> list[str]:
            if argument == "number":
                return [n for n in NUMBERS if n.startswith(value)]
            return [c for c in "abcdef" if c.startswith(value)]

        @server.completion(resource="feature://cities/{country}/{city}")
        def complete_city(argument: str, value: str, context: dict) -> list[str]:
            if argument == "country":
                return [c for c in CITIES if c.startswith(value)]
            countries = [context["country"]] if "country" in context else list(CITIES)
            return [
                c
                for country in countries
                for c in CITIES.get(country, [])
                if c.lower().startswith(value.lower())
            ]

    return server


if __name__ == "__main__":
    build(completions=sys.argv[1:] != ["no-completions"]).run_stdio()
