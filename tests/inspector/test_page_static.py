"""The page's files (mcp_ref/inspector/static/), read as text: what the Content-Security-Policy
and the page's rules require of them, checked without a browser.

No inline script, style or event handler in index.html (the CSP forbids them: the page would
break); nothing from another host; the script never builds markup from strings (no innerHTML and
its kin, no eval): every server string reaches the DOM as text.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import mcp_ref.inspector

STATIC = Path(mcp_ref.inspector.__file__).resolve().parent / "static"


class Tags(HTMLParser):
    """Every start tag of a page, with its attributes, and the text inside <script>/<style>."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.inline: list[str] = []
        self._inside: str | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._inside = tag if tag in ("script", "style") else None

    def handle_endtag(self, tag):
        self._inside = None

    def handle_data(self, data):
        if self._inside and data.strip():
            self.inline.append(f"<{self._inside}>{data.strip()[:60]}")


def page() -> Tags:
    tags = Tags()
    tags.feed((STATIC / "index.html").read_text(encoding="utf-8"))
    return tags


def test_index_html_has_no_inline_script_style_or_handler():
    tags = page()
    assert tags.inline == []
    for tag, attributes in tags.tags:
        assert "style" not in attributes, tag
        assert not [name for name in attributes if name.startswith("on")], (tag, attributes)
    scripts = [attributes.get("src") for tag, attributes in tags.tags if tag == "script"]
    assert scripts == ["static/inspector.js"]


def test_everything_the_page_loads_is_its_own():
    for tag, attributes in page().tags:
        for name in ("src", "href", "action"):
            value = attributes.get(name)
            if value is None:
                continue
            # relative to /TOKEN/ (so the token is kept), or an empty data: icon
            assert value == "data:," or not re.match(r"^([a-z]+:|//|/)", value), (tag, value)
    css = (STATIC / "inspector.css").read_text(encoding="utf-8")
    assert "@import" not in css and "url(" not in css


def test_the_script_never_builds_markup_from_strings():
    script = (STATIC / "inspector.js").read_text(encoding="utf-8")
    code = re.sub(r"^\s*//.*$", "", script, flags=re.M)  # the header comment names them
    for sink in (
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "new Function",
        "createContextualFragment",
        "DOMParser",
        'setAttribute("on',
        'setAttribute("style',
        'setAttribute("href',
        'setAttribute("src',
    ):
        assert sink not in code, sink


def test_the_app_serves_every_static_file():
    from mcp_ref.inspector.app import STATIC_FILES

    assert sorted(STATIC_FILES) == sorted(p.name for p in STATIC.iterdir() if p.is_file())
