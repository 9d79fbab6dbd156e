import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import ppo  # noqa: E402 (the scripts are found through the path above)
import ppo_continuous_action  # noqa: E402


class Script:
    def __init__(self, module, env_id, short):
        self.module, self.env_id, self.short = module, env_id, short
        self.file = module.__name__ + ".py"

    def __repr__(self):
        return self.module.__name__


# Runs this small take a few seconds: 4 iterations of 256 steps.
SCRIPTS = [
    Script(ppo, "CartPole-v1", ["--total-timesteps", "1024", "--num-envs", "4", "--num-steps", "64"]),
    Script(ppo_continuous_action, "Pendulum-v1",
           ["--env-id", "Pendulum-v1", "--total-timesteps", "1024", "--num-envs", "2",
            "--num-steps", "128", "--num-minibatches", "4", "--update-epochs", "2"]),
]


@pytest.fixture(params=SCRIPTS, ids=repr)
def script(request):
    """Each gymnasium training script, with the flags of a run that takes a few seconds."""
    return request.param


def run_script(script, *argv, cwd, timeout=300, check=True):
    """Run a top-level script as a user would, from `cwd` (so runs/ lands there)."""
    proc = subprocess.run([sys.executable, str(REPO / script), *argv], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{script} {' '.join(argv)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return proc


def run_dirs(cwd):
    return sorted(p for p in (Path(cwd) / "runs").iterdir() if p.is_dir())


def read_scalars(run_dir):
    """{tag: [(step, value), ...]} read back with TensorBoard's own event reader."""
    acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def read_text_tags(run_dir):
    acc = EventAccumulator(str(run_dir), size_guidance={"tensors": 0})
    acc.Reload()
    return acc.Tags()["tensors"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    """Run in-process training from an empty folder."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


# ------------------------------------------------------------------------------------------------
# The grader of ppo_scratch_skeleton.py: `--solution FILE` (repeatable) grades FILE instead of
# the reference completion.
# ------------------------------------------------------------------------------------------------
def pytest_addoption(parser):
    parser.addoption("--solution", action="append", default=[],
                     help="grade this completed ppo_scratch_skeleton.py (default: the reference)")


def pytest_configure(config):
    config.addinivalue_line("markers", "learning: trains for a while (left out when grading mutants)")


def pytest_generate_tests(metafunc):
    if "solution_path" in metafunc.fixturenames:
        paths = metafunc.config.getoption("solution") or ["reference"]
        metafunc.parametrize("solution_path", paths, ids=[Path(p).stem for p in paths], scope="module")
