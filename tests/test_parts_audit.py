"""The lists that .ci/run's bare pass (tests/bare_install.py) runs again: conftest.needs_part notes each test
that needs an optional part, by its fixture's parameter where a fixture asks, and $PPO_ONLY_TESTS selects a
list of node ids whatever their text."""
import os
import subprocess
import sys

from conftest import REPO

EXAMPLE = "tests/parts_audit/example_needs.py"


def run_pytest(tmp_path, **env):
    left_out = ("CI", "PYTEST_XDIST_WORKER", "PYTEST_CURRENT_TEST", "PPO_TESTS_NEEDING_PARTS")  # the suite's list
    env = {**{k: v for k, v in os.environ.items() if k not in left_out}, **env}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", EXAMPLE],
                          cwd=REPO, env=env, capture_output=True, text=True)
    return proc.stdout


def test_a_test_is_listed_with_the_part_its_fixtures_parameter_needs(tmp_path):
    out = run_pytest(tmp_path, PPO_TESTS_NEEDING_PARTS=str(tmp_path))
    assert "3 passed, 1 skipped" in out, out
    listed = sorted((tmp_path / "main.tsv").read_text().splitlines())
    assert listed == [f"{EXAMPLE}::test_odd_ids[agent 0's spaces [0, 0]: a::b]\tray",
                      f"{EXAMPLE}::test_odd_ids[plain]\tray",
                      f"{EXAMPLE}::test_runs[game]\tgodot3"]


def test_the_listed_ids_alone_run_whatever_their_text(tmp_path):
    listing = tmp_path / "tests.txt"
    listing.write_text(f"{EXAMPLE}::test_odd_ids[agent 0's spaces [0, 0]: a::b]\n{EXAMPLE}::test_runs[game]\n")
    out = run_pytest(tmp_path, PPO_ONLY_TESTS=str(listing))
    assert "1 passed, 1 skipped, 2 deselected" in out, out
