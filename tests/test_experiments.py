"""The experiment runner, on a tiny budget: every setting x seed runs, its logs land under
runs/<experiment>/ where one tensorboard --logdir overlays them, and the figure is written.

The experiment runs in this process, as `python experiments/<name>.py ...` would; each training run
it starts is still a process of its own, started through as_a_process (torch already imported)
instead of a fresh interpreter: 3 CPU-seconds less a run, about 40 runs."""
import importlib
import os
import runpy
import sys
import types

import pytest

from conftest import REPO, needs_godot, read_scalars
import as_a_process

EXPERIMENTS = sorted(p.stem for p in (REPO / "experiments").glob("*.py")
                     if p.stem not in ("runner", "healthy_ranges", "frame_stack"))


# A tiny run's rollout, after the experiment's flags: ppo.py's defaults (LunarLander's settings take 16 x 1024 steps
# and 256 minibatches: tests/test_lunarlander.py runs that rollout), and ppo_continuous_action.py's cut to one
# HalfCheetah episode and 4 minibatches of it
TINY_ROLLOUT = {"ppo.py": ["--num-steps", "128", "--num-minibatches", "4"],
                "ppo_continuous_action.py": ["--num-steps", "1024", "--num-minibatches", "4"]}


@pytest.fixture
def run_experiment(monkeypatch, tmp_path):
    """run_experiment(name, *flags): the experiment's __main__ on a tiny budget: 1 seed, each run one update
    (--total-timesteps 512: one rollout or less) of a tiny rollout (TINY_ROLLOUT)."""
    monkeypatch.syspath_prepend(str(REPO / "experiments"))
    runner = importlib.import_module("runner")

    def run(command, **kwargs):  # what the runner calls: subprocess.run([python, script, *flags], ...)
        return as_a_process.run_command([*command, *TINY_ROLLOUT.get(os.path.basename(command[1]), [])], **kwargs)

    monkeypatch.setattr(runner, "subprocess", types.SimpleNamespace(run=run))

    def experiment(name, *flags):
        monkeypatch.setattr(sys, "argv", [f"{name}.py", "--seeds", "1", "--total-timesteps", "512",
                                          "--runs-dir", str(tmp_path / "runs"), *flags])
        runpy.run_path(str(REPO / "experiments" / f"{name}.py"), run_name="__main__")
        return importlib.import_module(name)

    return experiment


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_experiment_runs_on_a_tiny_budget(name, tmp_path, run_experiment):
    figure = tmp_path / f"{name}.png"
    module = run_experiment(name, "--figure", str(figure))
    runs = sorted((tmp_path / "runs" / name).iterdir())
    assert sorted(run.name.split("__")[1] for run in runs) == sorted(module.SETTINGS)
    for run in runs:
        assert read_scalars(run)["losses/policy_loss"]  # each one trained and logged
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and figure.stat().st_size > 10_000


def test_healthy_ranges_table_on_a_tiny_budget(tmp_path, run_experiment):
    needs_godot()
    page = tmp_path / "page.md"
    page.write_text("before\n<!-- healthy ranges: python experiments/healthy_ranges.py -->\nold\n"
                    "<!-- end of healthy ranges -->\nafter\n")
    figure = tmp_path / "healthy.png"
    run_experiment("healthy_ranges", "--figure", str(figure), "--table", str(page))
    text = page.read_text()
    assert text.startswith("before\n") and text.endswith("<!-- end of healthy ranges -->\nafter\n")
    rows = [line for line in text.splitlines() if line.startswith("| ppo")]
    diagnostics = ["episodic_return", "approx_kl", "clipfrac", "entropy", "explained_variance", "grad_norm"]
    for script in ("ppo.py", "ppo_continuous_action.py", "ppo_godot.py"):
        assert [row.split(" | ")[1] for row in rows if row.startswith(f"| {script} ")] == diagnostics
    assert all(row.count(" to ") == 3 for row in rows)  # defaults, lr x10, no clipping: median (min to max)
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
