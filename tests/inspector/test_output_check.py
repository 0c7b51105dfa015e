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
