"""The inspector served in the test's process, driven over its real HTTP API (127.0.0.1, a real
socket): :class:`Inspector` (the page's requests, with its token and Origin) and
:class:`EventReader` (its ``events`` stream, read on a thread); the demo server over HTTP as a
subprocess (:func:`demo_over_http`)."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import requests
from conftest import WAIT

from mcp_ref.inspector.app import serve
from mcp_ref.inspector.conversation import Conversation
from mcp_ref.inspector.live import InspectedServer, shown_target
from mcp_ref.workbench.cli_grammar import parse
from mcp_ref.workbench.demo import server_command


class Inspector:
    """An inspector of TARGET (the words after ``mcp-ref inspect``), served on a free port; not
    connected until :meth:`connect` (or ``connect=True``); ``conversation_options``: the
    :class:`Conversation`'s bounds (``max_bytes``, ``max_records``)."""

    def __init__(
        self,
        *words: str,
        answer_timeout: float | None = None,
        connect: bool = True,
        **conversation_options: int,
    ):
        args = parse(["inspect", "--quiet-server", "--timeout", str(WAIT), *words])
        self.conversation = Conversation(
            target=shown_target(args.target),
            http=args.target.startswith(("http://", "https://")),
            **conversation_options,
        )
        self.inspected = InspectedServer(args, self.conversation, answer_timeout=answer_timeout)
        self.served = serve(self.inspected, self.conversation)
        self.url = self.served.url
        self.port = self.served.app.port
        self.origin = f"http://127.0.0.1:{self.port}"
        self.http = requests.Session()
        self.readers: list[EventReader] = []
        if connect:
            self.state = self.post("connect", {})

    def post(self, route: str, body: dict, status: int = 200, timeout: float = WAIT) -> dict:
        """POST ``api/ROUTE`` as the page does; its JSON answer (asserting its HTTP status), in
        ``timeout`` seconds."""
        response = self.http.post(
            self.url + "api/" + route, json=body, headers={"Origin": self.origin}, timeout=timeout
        )
        assert response.status_code == status, response.text
        return response.json()

    def get(self, route: str, **headers: str) -> requests.Response:
        """GET ``ROUTE`` (relative to the page) with the page's Host."""
        return self.http.get(self.url + route, headers=headers, timeout=WAIT)

    def events(self, after: int = 0) -> EventReader:
        """The ``events`` stream, read on a thread."""
        reader = EventReader(self.url + f"events?after={after}")
        self.readers.append(reader)
        return reader

    def in_background(self, route: str, body: dict, timeout: float = WAIT) -> Callable[[], dict]:
        """POST on a thread (a call that waits for the page's answer); returns a function that
        waits for its JSON answer (both in ``timeout`` seconds)."""
        done: queue.Queue = queue.Queue()
        thread = threading.Thread(
            target=lambda: done.put(self._post_outcome(route, body, timeout)), daemon=True
        )
        thread.start()

        def wait() -> dict:
            outcome = done.get(timeout=timeout)
            if isinstance(outcome, BaseException):
                raise outcome
            return outcome

        return wait

    def _post_outcome(self, route: str, body: dict, timeout: float):
        try:
            return self.post(route, body, timeout=timeout)
        except BaseException as exc:  # handed to the test's thread
            return exc

    def close(self) -> None:
        self.served.close()  # its event streams end first: a reader then sees the end at once
        for reader in self.readers:
            reader.thread.join(WAIT)
            reader.close()
        self.inspected.close()
        self.http.close()


def strict_json(text: str):
    """``text`` parsed as the page's ``JSON.parse`` parses it: strict JSON (RFC 8259), so no
    ``NaN`` or ``Infinity`` (Python's own parser takes both); ValueError otherwise."""

    def refuse(constant: str):
        raise ValueError(f"{constant} is no JSON: the page's JSON.parse refuses it")

    return json.loads(text, parse_constant=refuse)


class EventReader:
    """The server-sent events of one ``events`` stream: ``(event, data, id)`` in order, each
    event's data parsed as strictly as the page parses it (an event the page could not read
    ends :meth:`wait_for` with the reason)."""

    def __init__(self, url: str, headers: dict | None = None):
        self.response = requests.get(url, stream=True, timeout=(WAIT, 60), headers=headers)
        assert self.response.status_code == 200, self.response.text
        self.queue: queue.Queue = queue.Queue()
        self.seen: list[tuple[str, dict, str | None]] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        event, data, event_id = "message", [], None
        try:
            for line in self.response.iter_lines(decode_unicode=True):
                if line == "":
                    if data:
                        try:
                            parsed = strict_json("\n".join(data))
                        except ValueError as exc:  # the page would drop this event
                            event, parsed = "not-json", {"event": event, "error": str(exc)}
                        self.queue.put((event, parsed, event_id))
                    event, data, event_id = "message", [], None
                elif line.startswith(":"):
                    self.queue.put((":", {"comment": line}, None))
                else:
                    name, _, value = line.partition(":")
                    value = value[1:] if value.startswith(" ") else value
                    if name == "event":
                        event = value
                    elif name == "data":
                        data.append(value)
                    elif name == "id":
                        event_id = value
        except (requests.RequestException, OSError, AttributeError):
            pass  # closed
        self.queue.put(None)

    def next(self, timeout: float = WAIT) -> tuple[str, dict, str | None] | None:
        """The next event (None once the stream ended)."""
        item = self.queue.get(timeout=timeout)
        if item is not None:
            self.seen.append(item)
        return item

    def wait_for(
        self, event: str, where: Callable[[dict], bool] = lambda data: True, timeout: float = WAIT
    ) -> dict:
        """The data of the first ``event`` (from those not yet looked at) for which ``where`` holds."""
        deadline = time.monotonic() + timeout
        while True:
            item = self.next(max(0.0, deadline - time.monotonic()))
            assert item is not None, f"the stream ended before {event}: {self.seen[-5:]}"
            assert item[0] != "not-json", f"an event the page cannot parse: {item}"
            if item[0] == event and where(item[1]):
                return item[1]

    def close(self) -> None:
        self.response.close()


def state_when(url: str, ready: Callable[[dict], bool]) -> dict:
    """The state of the inspector at ``url`` (its page's address), once its ``events`` stream
    says ``ready(state)``."""
    with requests.get(url + "events", stream=True, timeout=(WAIT, WAIT)) as stream:
        assert stream.status_code == 200, stream.text
        for line in stream.iter_lines(decode_unicode=True):
            if line.startswith("data: "):
                data = json.loads(line[len("data: ") :])
                if "connected" in data and "replay" in data and ready(data):
                    return data
    raise AssertionError("the event stream ended")


def record_of(method: str, name: str | None = None) -> Callable[[dict], bool]:
    """A ``where`` for :meth:`EventReader.wait_for`: a record of a sent request ``method`` (for
    ``tools/call``, of the tool ``name``)."""

    def where(record: dict) -> bool:
        message = record.get("message")
        if record.get("kind") != "message" or not isinstance(message, dict):
            return False
        if message.get("method") != method:
            return False
        return name is None or (message.get("params") or {}).get("name") == name

    return where


@contextmanager
def demo_over_http() -> Iterator[str]:
    """``mcp-ref serve-demo --http 127.0.0.1:0`` as a subprocess: its Streamable HTTP URL."""
    from test_http_deploy import LineReader

    proc = subprocess.Popen(
        server_command("serve-demo", "--http", "127.0.0.1:0"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = LineReader(proc.stderr).wait_for(r"serving .* at (http://127\.0\.0\.1:\d+/mcp)")
        yield line.group(1)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(WAIT)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(WAIT)


def address_behind(opened: str) -> str:
    """The page's address behind what the verb asked the browser to open: a ``file://`` page only
    this user may read (the address holds the token; a command line is public), redirecting to it."""
    import html
    import os
    import re
    import stat
    from urllib.parse import unquote, urlsplit

    assert opened.startswith("file://"), f"the browser was given {opened!r}, not a file"
    path = unquote(urlsplit(opened).path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with open(path, encoding="utf-8") as page:
        found = re.search(r'http-equiv="refresh" content="0;url=([^"]+)"', page.read())
    assert found, "the page redirects"
    return html.unescape(found.group(1))
