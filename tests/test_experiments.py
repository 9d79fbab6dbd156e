"""The experiment runner, on a tiny budget: every setting x seed runs, its logs land under
runs/<experiment>/ where one tensorboard --logdir overlays them, and the figure is written."""
import subprocess
import sys

import pytest

from conftest import REPO, needs_godot, read_scalars

EXPERIMENTS = sorted(p.stem for p in (REPO / "experiments").glob("*.py")
                     if p.stem not in ("runner", "healthy_ranges", "frame_stack"))


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


def test_healthy_ranges_table_on_a_tiny_budget(tmp_path):
    needs_godot()
    page = tmp_path / "page.md"
    page.write_text("before\n<!-- healthy ranges: python experiments/healthy_ranges.py -->\nold\n"
                    "<!-- end of healthy ranges -->\nafter\n")
    figure = tmp_path / "healthy.png"
    proc = subprocess.run([sys.executable, str(REPO / "experiments" / "healthy_ranges.py"), "--seeds", "1",
                           "--total-timesteps", "2048", "--runs-dir", str(tmp_path / "runs"), "--figure", str(figure),
                           "--table", str(page)], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = page.read_text()
    assert text.startswith("before\n") and text.endswith("<!-- end of healthy ranges -->\nafter\n")
    rows = [line for line in text.splitlines() if line.startswith("| ppo")]
    diagnostics = ["episodic_return", "approx_kl", "clipfrac", "entropy", "explained_variance", "grad_norm"]
    for script in ("ppo.py", "ppo_continuous_action.py", "ppo_godot.py"):
        assert [row.split(" | ")[1] for row in rows if row.startswith(f"| {script} ")] == diagnostics
    assert all(row.count(" to ") == 3 for row in rows)  # defaults, lr x10, no clipping: median (min to max)
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
