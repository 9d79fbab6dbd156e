"""LunarLander-v3, the course's second target: requirements.txt is enough to make it, the README's
landing command trains and evaluates with ppo.py (one rollout here; the landing itself is
benchmarks/lunarlander.py), the finished skeleton takes the same flags, ppo_continuous_action.py runs
LunarLanderContinuous-v3, and the benchmark reads its runs and draws both sides."""
import re
import sys

import gymnasium as gym
import pytest

from conftest import REPO, read_scalars, run_dirs, run_script
import as_a_process

sys.path.insert(0, str(REPO / "benchmarks"))
import lunarlander  # noqa: E402

sys.path.insert(0, str(REPO / "tests"))
from scratch_reference import complete  # noqa: E402

ONE_ROLLOUT = ["--total-timesteps", "16384"]  # 16 envs x 1024 steps
COMMAND = "python ppo.py " + " ".join(lunarlander.LANDING)


def test_requirements_pin_the_box2d_wheel_that_makes_lunarlander():
    pins = (REPO / "requirements.txt").read_text().splitlines()
    assert "Box2D==2.3.10" in pins and not any(line.startswith("box2d-py") for line in pins)
    env = gym.make("LunarLander-v3")
    obs, _ = env.reset(seed=0)
    assert obs.shape == (8,) and env.action_space.n == 4
    env.close()


@pytest.mark.parametrize("page", ["README.md", "course/README.md"])
def test_the_pages_give_the_benchmarks_landing_command(page):
    assert COMMAND in (REPO / page).read_text()


def test_the_experiment_undoes_the_landing_flags_of_the_benchmark():
    sys.path.insert(0, str(REPO / "experiments"))
    import lunarlander_settings

    assert lunarlander.LANDING == ["--env-id", "LunarLander-v3", "--total-timesteps", "1000000",
                                   *lunarlander_settings.LANDING]
    assert lunarlander_settings.SETTINGS["landing"] == lunarlander_settings.LANDING


def test_the_skeleton_page_gives_the_same_flags():
    text = (REPO / "course" / "README.md").read_text()
    assert COMMAND.replace("python ppo.py", "python ppo_scratch_skeleton.py") in text


def test_the_landing_command_trains_and_its_checkpoint_is_evaluated(tmp_path):
    run_script("ppo.py", *lunarlander.LANDING, *ONE_ROLLOUT, cwd=tmp_path)
    run_dir, = run_dirs(tmp_path)
    scalars = read_scalars(run_dir)
    assert [step for step, _ in scalars["losses/value_loss"]] == [16384]
    assert len(scalars["charts/episodic_return"]) > 50  # random landers crash within ~100 steps
    proc = run_script("ppo.py", "--eval-checkpoint", str(run_dir / "ppo.pt"), "--eval-episodes", "2", cwd=tmp_path)
    assert re.search(r"greedy policy: mean_return=-?\d+\.\d \+- \d+\.\d over 2 episodes", proc.stdout)


def test_the_finished_skeleton_takes_the_landing_flags(tmp_path):
    script = tmp_path / "ppo_scratch_reference.py"
    script.write_text(complete())
    proc = as_a_process.run(script, [*lunarlander.LANDING, *ONE_ROLLOUT], cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir, = run_dirs(tmp_path)
    assert [step for step, _ in read_scalars(run_dir)["losses/value_loss"]] == [16384]


def test_the_continuous_script_runs_lunarlander_continuous(tmp_path):
    run_script("ppo_continuous_action.py", "--env-id", "LunarLanderContinuous-v3", "--total-timesteps", "2048",
               cwd=tmp_path)
    run_dir, = run_dirs(tmp_path)
    assert read_scalars(run_dir)["charts/episodic_return"]


def run_benchmark(tmp_path, monkeypatch, *flags):
    """The benchmark's table lines on a budget of one rollout (16 envs x 128 steps, 4 minibatches, for ours) and
    2 greedy episodes; the figure is checked. Its runs, ours and SB3's worker, fork from as_a_process (torch
    already imported)."""
    monkeypatch.setattr(lunarlander, "subprocess", as_a_process.SUBPROCESS)
    monkeypatch.setattr(lunarlander, "LANDING", [*lunarlander.LANDING, "--num-steps", "128", "--num-minibatches", "4"])
    monkeypatch.setattr(lunarlander, "FIGURES", tmp_path)  # the table and figure land here, not in benchmarks/
    monkeypatch.setattr(lunarlander, "write_table", lambda name, lines: (tmp_path / f"{name}.md").write_text(
        "\n".join(lines)))
    monkeypatch.setattr(sys, "argv", ["lunarlander.py", "--total-timesteps", "2048", "--eval-episodes", "2",
                                      "--out", "tiny", *flags])
    lunarlander.main()
    assert (tmp_path / "tiny.png").stat().st_size > 10_000
    table = (tmp_path / "tiny.md").read_text().splitlines()
    return table, [line for line in table if re.match(r"\| \d \|", line)]


def test_the_benchmark_trains_both_sides_and_writes_its_table_and_figure(tmp_path, monkeypatch):
    table, rows = run_benchmark(tmp_path, monkeypatch, "--seeds", "2", "--sb3-seeds", "1", "--sb3-timesteps", "16384")
    assert len(rows) == 2 and rows[0].count("|") == 12 and rows[1].endswith("| | | | | |")  # SB3 on seed 1 only
    assert any(line.startswith("ppo.py: greedy mean return >= 200 over 2 episodes on 0/2 seeds") for line in table)
    assert any(line.startswith("SB3: greedy mean return >= 200 over 2 episodes on 0/1 seeds") for line in table)


def test_the_benchmark_runs_the_finished_skeleton(tmp_path, monkeypatch):
    table, rows = run_benchmark(tmp_path, monkeypatch, "--script", "skeleton", "--seeds", "1", "--jobs", "1")
    assert len(rows) == 1 and rows[0].count("|") == 7
    assert any(line.startswith("finished skeleton: greedy mean return >= 200 over 2 episodes") for line in table)
