"""Tests for tests/test_parts_audit.py to run (not collected by the suite: no test_ prefix). A parametrized
fixture that needs a part for one parameter alone, and a test whose ids pytest cannot parse as arguments."""
import pytest

from conftest import needs_part


@pytest.fixture(params=["game", "gym"])
def env_kind(request):
    if request.param == "game":
        needs_part("godot3", "the part is missing here")
    return request.param


def test_runs(env_kind):
    pass


@pytest.mark.parametrize("message", ["agent 0's spaces [0, 0]: a::b", "plain"])
def test_odd_ids(message):
    needs_part("ray", None)
