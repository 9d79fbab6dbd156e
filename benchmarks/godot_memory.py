"""Memory in a Godot game: ppo_godot.py (no memory) against ppo_godot_lstm.py (an LSTM) on the Chase game's memory
task (chase_memory: each agent sees its target in every 4th observation only, zeros in between) and on plain
Chase (chase_discrete: the target in every observation), the same seeds and flags, per agent-step and per
wall-clock minute.

    python benchmarks/godot_memory.py --seeds 3 --total-timesteps 1000000

The margins, set before the first run (issue 54):
  1. the memory task needs memory: at the end (the mean of each seed's last 200 episodes) the lowest
     ppo_godot_lstm.py seed is at least 2.0 above the highest ppo_godot.py seed;
  2. where the observation tells all, memory does not help: on plain Chase ppo_godot_lstm.py's final return
     (mean over seeds) is within 1.0 of ppo_godot.py's, or below it;
  3. memory costs time: ppo_godot.py steps at least 2x the agent-steps per second of ppo_godot_lstm.py.
Writes benchmarks/results/godot_memory.md and benchmarks/figures/godot_memory.png (mean and min-max over seeds).
"""
import argparse
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from common import REPO, draw_seeds, read_run, save_figure, write_table

GAMES = {"memory task": REPO / "godot" / "chase" / "chase_memory.x86_64",
         "plain Chase": REPO / "godot" / "chase" / "chase_discrete.x86_64"}
SCRIPTS = ["ppo_godot.py", "ppo_godot_lstm.py"]
WINDOW = 200  # episodes in a running mean, and at the end


def train(script, game, seed, args):
    """(agent-steps, wall-clock minutes, return) of every episode, and the run's mean agent-steps per second."""
    with tempfile.TemporaryDirectory() as workdir:
        subprocess.run([sys.executable, str(REPO / script), "--env-path", str(GAMES[game]), "--seed", str(seed),
                        "--port", str(args.port), "--total-timesteps", str(args.total_timesteps),
                        *shlex.split(args.ppo_args)], cwd=workdir, check=True, stdout=subprocess.DEVNULL)
        acc = read_run(next(Path(workdir).glob("runs/*")))
    episodes, first = acc.Scalars("charts/episodic_return"), acc.Scalars("charts/SPS")[0]
    start = first.wall_time - first.step / first.value  # the run's start: its first update's steps at its first SPS
    steps = np.array([e.step for e in episodes])
    minutes = np.array([(e.wall_time - start) / 60 for e in episodes])
    return dict(steps=steps, minutes=minutes, returns=np.array([e.value for e in episodes]),
                sps=acc.Scalars("charts/SPS")[-1].value)


def final(run):
    return float(run["returns"][-WINDOW:].mean())


def margin_lines(finals, sps):
    """The margins judged: finals {(script, game): each seed's final return}, sps {script: each run's agent-steps/s}."""
    gap = min(finals["ppo_godot_lstm.py", "memory task"]) - max(finals["ppo_godot.py", "memory task"])
    plain = np.mean(finals["ppo_godot_lstm.py", "plain Chase"]) - np.mean(finals["ppo_godot.py", "plain Chase"])
    speed = np.mean(sps["ppo_godot.py"]) / np.mean(sps["ppo_godot_lstm.py"])
    return ["", "The margins, set before the first run:",
            f"1. memory task, lowest ppo_godot_lstm.py seed minus highest ppo_godot.py seed: {gap:+.2f} "
            f"(margin: at least +2.0): {'met' if gap >= 2.0 else 'missed'}",
            f"2. plain Chase, ppo_godot_lstm.py's mean final return minus ppo_godot.py's: {plain:+.2f} "
            f"(margin: at most +1.0 above, memory does not help): {'met' if plain <= 1.0 else 'missed'}",
            f"3. ppo_godot.py's agent-steps per second over ppo_godot_lstm.py's: {speed:.2f}x "
            f"(margin: at least 2x): {'met' if speed >= 2.0 else 'missed'}"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--total-timesteps", type=int, default=1_000_000)
    p.add_argument("--port", type=int, default=12500)
    p.add_argument("--ppo-args", default="", help="more flags for both scripts")
    args = p.parse_args()
    command = "python benchmarks/godot_memory.py " + " ".join(sys.argv[1:])
    runs = {(script, game): [] for game in GAMES for script in SCRIPTS}
    for (script, game), seeds in runs.items():
        for seed in range(1, args.seeds + 1):
            seeds.append(train(script, game, seed, args))
            print(f"{script} on {game}, seed {seed}: final return {final(seeds[-1]):.2f}, "
                  f"{seeds[-1]['sps']:.0f} agent-steps/s", flush=True)

    lines = [f"Command: `{command}`", "",
             f"| game | script | final return (mean of the last {WINDOW} episodes): mean over seeds (min to max) | "
             "agent-steps/s: mean (min to max) | minutes to the end: mean |", "|---|---|---|---|---|"]
    for (script, game), seeds in runs.items():
        finals, sps = [final(run) for run in seeds], [run["sps"] for run in seeds]
        lines.append(f"| {game} | {script} | {np.mean(finals):.2f} ({min(finals):.2f} to {max(finals):.2f}) | "
                     f"{np.mean(sps):,.0f} ({min(sps):,.0f} to {max(sps):,.0f}) | "
                     f"{np.mean([run['minutes'][-1] for run in seeds]):.1f} |")
    finals = {key: [final(run) for run in seeds] for key, seeds in runs.items()}
    steps_per_second = {script: [run["sps"] for key in runs if key[0] == script for run in runs[key]]
                        for script in SCRIPTS}
    lines += margin_lines(finals, steps_per_second)
    write_table("godot_memory", lines)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 6.4))
    for column, game in enumerate(GAMES):
        for row, (x, xlabel) in enumerate((("steps", "agent-steps"), ("minutes", "wall-clock minutes"))):
            ax = axes[row, column]
            for script in SCRIPTS:
                draw_seeds(ax, script, [(run[x], run["returns"]) for run in runs[script, game]], WINDOW)
            ax.set_xlabel(xlabel)
            ax.set_ylabel(f"episodic return\n(mean of the last {WINDOW} episodes)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
            ax.set_title(f"{game}: " + ("the target in every 4th observation only" if game == "memory task"
                                         else "the target in every observation"), fontsize=9)
    fig.suptitle("Memory in the Chase game: line, mean over seeds; band, min-max over seeds", fontsize=10)
    save_figure(fig, REPO / "benchmarks" / "figures" / "godot_memory.png", command)


if __name__ == "__main__":
    main()
