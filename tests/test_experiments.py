"""The experiment runner, on a tiny budget: every setting x seed runs, its logs land under
runs/<experiment>/ where one tensorboard --logdir overlays them, and the figure is written."""
import subprocess
import sys

import pytest

from conftest import REPO, read_scalars

EXPERIMENTS = sorted(p.stem for p in (REPO / "experiments").glob("*.py") if p.stem != "runner")


def settings_of(name):
    code = f"import sys; sys.path.insert(0, 'experiments'); import {name}; print(*{name}.SETTINGS)"
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout.split()


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_experiment_runs_on_a_tiny_budget(name, tmp_path):
    figure = tmp_path / f"{name}.png"
    proc = subprocess.run([sys.executable, str(REPO / "experiments" / f"{name}.py"), "--seeds", "1",
                           "--total-timesteps", "2048", "--runs-dir", str(tmp_path / "runs"),
                           "--figure", str(figure)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = sorted((tmp_path / "runs" / name).iterdir())
    assert sorted(run.name.split("__")[1] for run in runs) == sorted(settings_of(name))
    for run in runs:
        assert read_scalars(run)["losses/policy_loss"]  # each one trained and logged
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and figure.stat().st_size > 10_000
