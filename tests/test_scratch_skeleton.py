"""The exercise itself: the shipped skeleton stops at TODO 1; the grader names every mistake of
scratch_reference.MUTANTS, and the short run names the TODOs behind those of LEARNING_ONLY."""
import subprocess
import sys
import xml.etree.ElementTree as ET

from conftest import REPO, run_script
from scratch_reference import learning_only_mutants, mutants


def test_shipped_skeleton_stops_at_todo_1(tmp_path):
    proc = run_script("ppo_scratch_skeleton.py", cwd=tmp_path, check=False)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith("TODO 1 is not done yet: Agent.get_action")
    assert "reading guide (course/README.md)" in proc.stderr


def grade(tmp_path, files, *options):
    """Run the grader on {name: (text, words)}; returns {name: {test: [its failure messages]}}."""
    paths = {}
    for name, (text, _) in files.items():
        paths[name] = tmp_path / f"{name}.py"
        paths[name].write_text(text)
    report = tmp_path / "report.xml"
    solutions = [arg for path in paths.values() for arg in ("--solution", str(path))]
    subprocess.run([sys.executable, "-m", "pytest", str(REPO / "tests" / "test_grader.py"), "-q",
                    "-p", "no:cacheprovider", *options, f"--junitxml={report}", *solutions],
                   cwd=tmp_path, capture_output=True, text=True, timeout=600)
    results = {name: {} for name in files}
    for case in ET.parse(report).iter("testcase"):
        test, params = case.get("name").split("[", 1)
        params = params.rstrip("]").split("-")  # the mutant, and a test's own
        mutant = next(param for param in params if param in files)
        results[mutant][test] = [f"{failure.get('message')}\n{failure.text}" for failure in case.iter("failure")]
    return results


def assert_names_a_todo(name, message):
    """Every failure is the grader's own message naming a TODO (or the scaffolding), never a raw exception."""
    assert message.startswith(("Failed: TODO", "AssertionError: TODO", "AssertionError: collect_rollout")), (
        f"{name}: a failure that names no TODO:\n{message}")


def test_grader_fails_every_mutant_with_the_message_naming_its_bug(tmp_path):
    files = mutants()
    results = grade(tmp_path, files, "-m", "not learning")
    for name, (_, words) in files.items():
        failures = [message for messages in results[name].values() for message in messages]
        assert failures, f"the grader passed the mutant {name}"
        assert any(words in message for message in failures), (
            f"no failure for {name} says {words!r}:\n" + "\n".join(failures))
        for message in failures:
            assert_names_a_todo(name, message)


def test_short_run_names_the_todos_of_a_mistake_only_it_catches(tmp_path):
    files = learning_only_mutants()
    results = grade(tmp_path, files)
    for name, (_, words) in files.items():
        assert results[name].get("test_short_run_learns"), f"{name} learned: it is no mistake for the short run"
        caught = {test: messages for test, messages in results[name].items()
                  if messages and test != "test_short_run_learns"}
        assert not caught, f"{name} is caught by {sorted(caught)}: move it to scratch_reference.MUTANTS"
        (message,) = results[name]["test_short_run_learns"]
        assert_names_a_todo(name, message)
        assert "no better than random" in message and words in message, message
