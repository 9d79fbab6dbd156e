"""The exercise itself: the shipped skeleton stops at TODO 1; the grader names every classic bug."""
import subprocess
import sys
import xml.etree.ElementTree as ET

from conftest import REPO, run_script
from scratch_reference import mutants


def test_shipped_skeleton_stops_at_todo_1(tmp_path):
    proc = run_script("ppo_scratch_skeleton.py", cwd=tmp_path, check=False)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith("TODO 1 is not done yet: ActorCritic.get_action_and_value")
    assert "reading guide (course/README.md)" in proc.stderr


def test_grader_fails_every_mutant_with_the_message_naming_its_bug(tmp_path):
    files = {}
    for name, (text, words) in mutants().items():
        path = tmp_path / f"{name}.py"
        path.write_text(text)
        files[name] = (path, words)
    report = tmp_path / "report.xml"
    solutions = [arg for path, _ in files.values() for arg in ("--solution", str(path))]
    subprocess.run([sys.executable, "-m", "pytest", str(REPO / "tests" / "test_grader.py"), "-q",
                    "-p", "no:cacheprovider", "-m", "not learning", f"--junitxml={report}", *solutions],
                   cwd=tmp_path, capture_output=True, text=True, timeout=600)
    failures = {name: [] for name in files}
    for case in ET.parse(report).iter("testcase"):
        params = case.get("name").rsplit("[", 1)[1].rstrip("]").split("-")  # the mutant, and a test's own
        mutant = next(param for param in params if param in files)
        for failure in case.iter("failure"):
            failures[mutant].append(f"{failure.get('message')}\n{failure.text}")
    for name, (_, words) in files.items():
        assert failures[name], f"the grader passed the mutant {name}"
        assert any(words in message for message in failures[name]), (
            f"no failure for {name} says {words!r}:\n" + "\n".join(failures[name]))
        # every failure is the grader's own message naming a TODO (or the scaffolding), never a raw exception
        for message in failures[name]:
            assert message.startswith(("Failed: TODO", "AssertionError: TODO", "AssertionError: collect_rollout")), (
                f"{name}: a failure that names no TODO:\n{message}")
