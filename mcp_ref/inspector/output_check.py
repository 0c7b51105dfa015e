"""A tool's ``structuredContent`` checked against its ``outputSchema`` in a child process, within
a deadline.

The schema is the server's: a ``pattern`` in it may take exponential time to match
(``^(a+)+$`` against ``"aaaa...a!"``), and Python's ``re`` holds the interpreter's lock while it
matches, so checked in the inspector's own process such a schema would stop every thread in it
(the page's requests, Ctrl-C).  :class:`OutputChecker` hands each check to one long-lived child
(``python -m mcp_ref.inspector.output_check``: one JSON line in, ``{"schema", "instance"}``; one
out, the check) and waits :data:`DEADLINE` seconds for the answer; past it the child is killed
(a new one is started for the next check) and the result says it was not checked.  Checks are
made one at a time.  The child ends by itself once the inspector has gone (killed, its cleanup never
run) even in the middle of a match (:func:`exit_with_parent`).

2025-06-18 server/tools §Output Schema: "Servers MUST provide structured results that conform
to this schema"; "Clients SHOULD validate structured results against this schema".
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import subprocess
import sys
import threading
from typing import Any

#: Seconds a check may take (a well-formed schema is checked in milliseconds); past it the child
#: is killed and the result is not checked.
DEADLINE = 2.0
#: Seconds the child may take to start (import its schema library) before the first check.
START_TIMEOUT = 30.0
#: The largest check sent to the child (bytes of JSON): a result bigger than any message the
#: client reads (4 MiB by default) is not checked.
MAX_SENT = 16 * 1024 * 1024
#: Errors listed for one check.
MAX_ERRORS = 5
#: Seconds between the child's looks at whether the process that started it is still there.
PARENT_CHECK_EVERY = 0.5
#: The reason a check that ran out of time gives.
TOO_LONG = "not checked: the output schema took too long (its pattern may take exponential time)"


def unchecked(reason: str) -> dict:
    """A check that was not made, and why (``valid`` None)."""
    return {"valid": None, "errors": [reason]}


class OutputChecker:
    """Checks ``structuredContent`` against an ``outputSchema`` in a child process, each check
    within ``deadline`` seconds (:meth:`check`); the child is started at the first check and
    stopped by :meth:`close`.  Thread-safe."""

    def __init__(self, deadline: float = DEADLINE):
        self.deadline = deadline
        self._lock = threading.Lock()  # one check at a time: the child answers in order
        self._child: subprocess.Popen | None = None
        self._answers: queue.Queue = queue.Queue()
        self._closed = False

    def check(self, schema: dict, instance: Any) -> dict:
        """``{"valid", "errors"}``: ``instance`` checked against ``schema`` as the server's own
        rule checks it (:func:`check_output`); ``valid`` None when it could not be checked."""
        line = json.dumps({"schema": schema, "instance": instance}, default=str).encode() + b"\n"
        if len(line) > MAX_SENT:
            return unchecked("not checked: the result is too large to check")
        with self._lock:
            if self._closed:
                return unchecked("not checked: the inspector is closing")
            try:
                child = self._started()
                assert child.stdin is not None
                child.stdin.write(line)
                child.stdin.flush()
                answer = self._answers.get(timeout=self.deadline)
            except queue.Empty:
                self._stop()
                return unchecked(TOO_LONG)
            except (OSError, ValueError) as exc:
                self._stop()
                return unchecked(f"not checked: {exc}")
            if not isinstance(answer, dict):  # the child ended
                self._stop()
                return unchecked("not checked: the checking process ended")
            return answer

    def close(self) -> None:
        """Stop the child (a check under way ends at once, not checked); no check after."""
        self._closed = True
        child = self._child
        if child is not None:
            child.kill()
        with self._lock:
            self._stop()

    def _started(self) -> subprocess.Popen:
        """The child, started (and ready) if it is not running."""
        if self._child is not None and self._child.poll() is None:
            return self._child
        self._stop()
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        child = subprocess.Popen(
            [sys.executable, "-m", "mcp_ref.inspector.output_check"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        answers: queue.Queue = queue.Queue()
        threading.Thread(
            target=_read_answers, args=(child, answers), name="output-check", daemon=True
        ).start()
        self._child, self._answers = child, answers
        try:
            ready = answers.get(timeout=START_TIMEOUT)
        except queue.Empty:
            ready = None
        if ready != {"ready": True}:
            self._stop()
            raise OSError("the checking process did not start")
        return child

    def _stop(self) -> None:
        """Kill the child and wait for it (under the lock)."""
        child, self._child = self._child, None
        if child is None:
            return
        child.kill()
        child.wait()
        for pipe in (child.stdin, child.stdout):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:
                    pass


def _read_answers(child: subprocess.Popen, answers: queue.Queue) -> None:
    """The child's answers, one a line, into ``answers``; None once it has ended."""
    assert child.stdout is not None
    try:
        for line in child.stdout:
            try:
                answers.put(json.loads(line))
            except ValueError:
                answers.put(None)
    except (OSError, ValueError):
        pass
    answers.put(None)


def check_output(schema: dict, instance: Any) -> dict:
    """``{"valid", "errors"}``: ``instance`` checked against ``schema`` by the server's own rule
    (the declared dialect, 2020-12 without one, the schema itself checked first); a ``$ref`` is
    looked up only inside the schema, never fetched.  Made in the child."""
    import jsonschema
    import referencing.exceptions

    from ..server.signatures import validator_for

    try:
        validator = validator_for(schema).checker
        errors = [
            f"{'/'.join(str(p) for p in error.absolute_path) or '(root)'}: {error.message}"
            for error in itertools.islice(validator.iter_errors(instance), MAX_ERRORS)
        ]
    except referencing.exceptions.Unresolvable as exc:  # a $ref is never fetched
        return {"valid": False, "errors": [f"the outputSchema's $ref is not in it: {exc.ref}"]}
    except (jsonschema.SchemaError, RecursionError, TypeError, ValueError) as exc:
        return {"valid": False, "errors": [f"the outputSchema is not a valid schema: {exc}"]}
    return {"valid": not errors, "errors": errors}


def exit_with_parent(parent: int) -> None:
    """End this process as soon as ``parent`` is no longer its parent (it exited, or was killed),
    whatever it is doing: looked at every :data:`PARENT_CHECK_EVERY` seconds from a timer signal's
    handler (POSIX).

    The end of its input says the same, but only once it reads again: a match that takes
    exponential time would go on at full CPU with no one to answer.  ``re`` matches holding the
    interpreter's lock, so a watching thread never runs until the match ends; it does run the
    signal handlers of the main thread as it goes.  (``prctl(PR_SET_PDEATHSIG)`` follows the
    parent's thread that started the child, here the page request's, not its process.)"""
    import signal

    if not hasattr(signal, "setitimer"):
        return

    def look(_signum: int, _frame: Any) -> None:
        if os.getppid() != parent:
            os._exit(0)

    signal.signal(signal.SIGALRM, look)
    signal.setitimer(signal.ITIMER_REAL, PARENT_CHECK_EVERY, PARENT_CHECK_EVERY)


def main() -> None:
    """The child: a check for each JSON line read, its answer a line; ends with its input, or
    with the inspector (:func:`exit_with_parent`; one gone before this started has closed the
    input).  Ctrl-C in the terminal is the inspector's to handle: the child ignores it."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    exit_with_parent(os.getppid())
    check_output({}, None)  # its libraries imported before it says it is ready
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        try:
            request = json.loads(line)
            answer = check_output(request["schema"], request["instance"])
        except Exception as exc:  # a check that fails says so; the child goes on
            answer = unchecked(f"not checked: {type(exc).__name__}")
        print(json.dumps(answer, default=str), flush=True)


if __name__ == "__main__":
    main()
