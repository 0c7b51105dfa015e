"""The check of a tool's ``structuredContent`` against its ``outputSchema``, made in a child
process within a deadline: a schema whose ``pattern`` takes exponential time is not checked, the
child is killed, and the next check is made by a new one."""

from __future__ import annotations

import pytest

from mcp_ref.inspector.output_check import TOO_LONG, OutputChecker

pytestmark = pytest.mark.slow

#: ``^(a+)+$`` against 34 a's and a ``!``: some 2**34 ways to fail, hours of backtracking.
CATASTROPHIC = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}}
STUCK = {"s": "a" * 34 + "!"}


def test_a_check_is_made_as_the_server_s_rule_makes_it():
    checker = OutputChecker()
    try:
        assert checker.check(CATASTROPHIC, {"s": "aaa"}) == {"valid": True, "errors": []}
        assert checker.check(CATASTROPHIC, {"s": 1}) == {
            "valid": False,
            "errors": ["s: 1 is not of type 'string'"],
        }
        broken = checker.check({"type": "no-such-type"}, {})
        assert broken["valid"] is False
        assert broken["errors"][0].startswith("the outputSchema is not a valid schema")
    finally:
        checker.close()


def test_a_pattern_that_takes_exponential_time_is_not_checked_and_the_next_check_is_made():
    checker = OutputChecker(deadline=1.0)
    try:
        first = checker._started()
        assert checker.check(CATASTROPHIC, STUCK) == {"valid": None, "errors": [TOO_LONG]}
        assert first.poll() is not None  # killed, and waited for
        assert checker.check(CATASTROPHIC, {"s": "aa"}) == {"valid": True, "errors": []}
        assert checker._child is not None and checker._child is not first
    finally:
        checker.close()
    assert checker._child is None
    assert checker.check(CATASTROPHIC, {"s": "aa"})["valid"] is None  # closed: none any more


def test_a_result_too_large_to_send_is_not_checked(monkeypatch):
    from mcp_ref.inspector import output_check

    monkeypatch.setattr(output_check, "MAX_SENT", 100)
    checker = OutputChecker()
    try:
        assert checker.check({}, {"s": "x" * 100}) == {
            "valid": None,
            "errors": ["not checked: the result is too large to check"],
        }
        assert checker._child is None  # nothing was sent: no child was started
    finally:
        checker.close()


#: A parent that starts the checking child, hands it the catastrophic check as OutputChecker does,
#: says the child's pid, then waits to be killed (its cleanup never runs).
PARENT = """
import json, sys
from mcp_ref.inspector.output_check import OutputChecker
checker = OutputChecker(deadline=3600)
child = checker._started()
check = {"schema": json.loads(sys.argv[1]), "instance": json.loads(sys.argv[2])}
child.stdin.write(json.dumps(check).encode() + b"\\n")
child.stdin.flush()
print(child.pid, flush=True)
sys.stdin.read()
"""


def test_the_child_ends_when_the_inspector_is_killed_in_the_middle_of_a_match():
    """The inspector killed (SIGKILL, the OOM killer: no cleanup) while its child matches a
    pattern that takes exponential time: the child, which reads nothing while it matches, went
    on at full CPU for hours, its parent gone.  It now looks at its parent every
    PARENT_CHECK_EVERY seconds, from a timer signal's handler (``re`` runs those as it matches),
    and ends."""
    import json
    import os
    import signal
    import subprocess
    import sys

    from conftest import WAIT, wait_gone

    from mcp_ref.inspector.output_check import PARENT_CHECK_EVERY

    if not os.path.isdir("/proc/self"):
        pytest.skip("needs /proc to see the child run")
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, json.dumps(CATASTROPHIC), json.dumps(STUCK)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    child = int(parent.stdout.readline())  # the check is in its input: read, then matched

    def running() -> bool:
        try:
            with open(f"/proc/{child}/stat") as stat:
                return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
        except FileNotFoundError:
            return False

    try:
        parent.kill()
        parent.wait(WAIT)
        assert wait_gone(child, WAIT + PARENT_CHECK_EVERY)  # our grandchild: no wait() of ours
    finally:
        if running():
            os.kill(child, signal.SIGKILL)
        parent.stdin.close()
        parent.stdout.close()
