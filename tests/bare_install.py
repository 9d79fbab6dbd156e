"""The bare install, as .ci/run takes it after the suite: every test that needs an optional part, run again in a
venv of requirements.txt alone (no Ray, no W&B), first with the engines there, then with Godot 3, Xvfb, Chromium
and the Godot 4.6 template hidden as well. Each must skip and say why; a failure or an error fails this command.

    PPO_TESTS_NEEDING_PARTS=.cache/tests-needing-parts python -m pytest tests -q -n auto --dist loadgroup
    python tests/bare_install.py .cache/tests-needing-parts --hide-engines

The suite's run lists the tests (conftest.needs_part notes each, by test or by the fixture and its parameter that
need the part); $PPO_ONLY_TESTS hands the list to conftest, which runs those alone (a parametrized test's id can
hold brackets, colons and spaces, which pytest's arguments cannot), and a listed test that is not collected in the
bare venv fails this command. Without --hide-engines, the first pass alone.
The engines are hidden in a mount namespace of this command alone (unshare, as root): /dev/null over each
program, an empty folder over the template; nothing on the machine changes.
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# outside the clone, made once per requirements.txt: CI runs on a fresh clone each time, and the venv takes a minute
VENV = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ppo-scripts-bare-venv"
PYTHON_PARTS = {"ray", "wandb"}  # what requirements.txt lacks; the rest are the engines
ENGINES = ["godot3-server", "godot3-runner", "Xvfb", "chromium"]
TEMPLATE = REPO / ".cache" / "godot4-web"


def bare_venv():
    """VENV with requirements.txt alone, made anew when requirements.txt changes."""
    wanted = hashlib.sha256((REPO / "requirements.txt").read_bytes()).hexdigest()
    stamp = VENV / "requirements.sha256"
    if not stamp.exists() or stamp.read_text() != wanted:
        shutil.rmtree(VENV, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(VENV / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        "-r", str(REPO / "requirements.txt")], check=True)
        stamp.write_text(wanted)
    return str(VENV / "bin" / "python")


def tests_needing_parts(folder):
    """{node id: the optional parts it needs}, from the suite's run."""
    needs = {}
    for listing in Path(folder).glob("*.tsv"):
        for line in listing.read_text().splitlines():
            nodeid, part = line.split("\t")
            nodeid = re.sub(r"@[\w-]+$", "", nodeid)  # pytest-xdist's "@group" of --dist loadgroup
            needs.setdefault(nodeid, set()).add(part)
    return needs


def hiding_engines():
    """A command prefix that runs the rest in a mount namespace without the engines and the template."""
    mounts = [f"mount --bind /dev/null {os.path.realpath(path)}" for path in map(shutil.which, ENGINES) if path]
    if TEMPLATE.is_dir():
        mounts.append(f"mount --bind {tempfile.mkdtemp()} {TEMPLATE}")
    return ["unshare", "--mount", "sh", "-c", " && ".join(mounts + ['exec "$@"']), "sh"]


def start(title, prefix, python, nodeids):
    """The pass's pytest, started, its output to a file; first the check that it collects every listed test."""
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PPO_TESTS_NEEDING_PARTS")}  # skip, not fail
    folder = Path(tempfile.mkdtemp())
    (folder / "tests.txt").write_text("".join(f"{nodeid}\n" for nodeid in sorted(nodeids)))
    env["PPO_ONLY_TESTS"] = str(folder / "tests.txt")  # conftest keeps these: an id is no argument pytest parses
    files = sorted({nodeid.split("::")[0] for nodeid in nodeids})
    collected = subprocess.run(prefix + [python, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider",
                                         *files], cwd=REPO, env=env, capture_output=True, text=True).stdout
    missing = set(nodeids) - {line for line in collected.splitlines() if "::" in line}
    if missing:
        sys.exit(f"bare install, {title}: {len(missing)} listed tests are not collected there, the first: "
                 f"{min(missing)}")
    output = open(folder / "output.txt", "w+")
    return title, len(nodeids), output, subprocess.Popen(
        prefix + [python, "-m", "pytest", "-q", "-n", "auto", "--dist", "loadgroup", "-p", "no:cacheprovider", "-rs",
                  *files], cwd=REPO, env=env, stdout=output, stderr=subprocess.STDOUT)


def main(folder):
    needs = tests_needing_parts(folder)
    if not needs:
        sys.exit(f"no test listed in {folder}: run the suite with PPO_TESTS_NEEDING_PARTS={folder} first")
    python = bare_venv()
    passes = [start("no Ray, no W&B", [], python, [t for t, parts in needs.items() if parts & PYTHON_PARTS])]
    if "--hide-engines" in sys.argv:  # at the same time: the second pass's tests mostly skip at once
        try:
            passes.append(start("no Ray, no W&B and no engines", hiding_engines(), python, list(needs)))
        except SystemExit:
            passes[0][-1].kill()
            raise
    failed = []
    for title, count, output, proc in passes:
        proc.wait()
        output.seek(0)
        print(f"bare install, {title}: {count} tests\n{output.read()}", flush=True)
        failed += [f"bare install, {title}: pytest exited {proc.returncode}"] if proc.returncode else []
    if failed:
        sys.exit("; ".join(failed) + ": a test whose part is missing must skip")


if __name__ == "__main__":
    main(sys.argv[1])
