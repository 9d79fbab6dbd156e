"""Ray RLlib's PPO (scale/ppo_rllib_godot.py) with 1 and 2 env runners against ppo_godot.py with 1
and 2 game processes, on the Chase game (discrete actions, 16 agents a game), same budget.

    python benchmarks/rllib_chase.py --total-timesteps 300000 --seeds 3

Each pair trains on the same number of games with the same batch (1024 agent-steps a game) and the
same PPO settings; ppo_godot.py keeps its reward normalisation (RLlib has none). Speed: the run's
charts/SPS at its end (agent-steps per second over the training loop, updates included; Ray's and
the games' start-up left out). Return: the mean of the last 100 episodes. Runs one at a time.
For RLlib, also where its time goes, from its own timers.
Writes benchmarks/results/rllib_chase.md and benchmarks/figures/rllib_chase.png.
"""
import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from common import REPO, episode_curve, plot_returns, read_run, write_table

GAME = str(REPO / "godot" / "chase" / "chase_discrete.x86_64")
# the scripted near-optimal policy's return, as benchmarks/godot_chase.py measured it
SCRIPTED_RETURN = float(re.search(r"Scripted near-optimal policy: ([\d.]+)", (
    REPO / "benchmarks" / "results" / "godot_chase_discrete.md").read_text()).group(1))


def trainers(games):
    """{label: command line} for `games` game processes."""
    return {
        f"ppo_godot.py, {games} game{'s' * (games > 1)}":
            ["ppo_godot.py", "--n-parallel", str(games)],
        f"RLlib, {games} env runner{'s' * (games > 1)}":
            ["scale/ppo_rllib_godot.py", "--num-env-runners", str(games), "--num-cpus", "2",
             "--train-batch-size", str(1024 * games)],
    }


def train(command, seed, args):
    with tempfile.TemporaryDirectory() as workdir:
        start = time.time()
        subprocess.run([sys.executable, str(REPO / command[0]), *command[1:], "--env-path", GAME,
                        "--seed", str(seed), "--port", str(args.port), "--total-timesteps", str(args.total_timesteps)],
                       cwd=workdir, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        acc = read_run(next(Path(workdir).glob("runs/*")))
    steps, returns = episode_curve(acc)
    timings = {tag.split("/")[1]: acc.Scalars(tag)[-1].value for tag in acc.Tags()["scalars"]
               if tag.startswith("rllib/")}
    return dict(sps=acc.Scalars("charts/SPS")[-1].value, final=float(returns[-100:].mean()),
                minutes=(time.time() - start) / 60, curve=(steps, returns), timings=timings)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--total-timesteps", type=int, default=300000)
    p.add_argument("--seeds", type=int, default=3, help="seeds 1..N")
    p.add_argument("--port", type=int, default=13008)
    args = p.parse_args()

    runs = {}
    for games in (1, 2):
        for label, command in trainers(games).items():
            runs[label] = []
            for seed in range(1, args.seeds + 1):
                runs[label].append(train(command, seed, args))
                print(f"{label}, seed {seed}: {runs[label][-1]['sps']:,.0f} agent-steps/s, "
                      f"return {runs[label][-1]['final']:.2f}", flush=True)

    command = "python benchmarks/rllib_chase.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    lines = [f"Command: `{command}` ({time.strftime('%Y-%m-%d')}; {os.cpu_count()} cores; "
             f"{args.total_timesteps:,} agent-steps a run, seeds 1-{args.seeds})", "",
             "| trainer | games x agents | agent-steps/s (median over seeds) | return, last 100 episodes "
             "(mean over seeds) | min-max over seeds | share of the scripted policy's | minutes a run |",
             "|---|---|---|---|---|---|---|"]
    for label, seeds in runs.items():
        games = 2 if "2" in label else 1
        final = np.array([r["final"] for r in seeds])
        lines.append(f"| {label} | {games} x 16 | {np.median([r['sps'] for r in seeds]):,.0f} | {final.mean():.2f} "
                     f"| {final.min():.2f} to {final.max():.2f} | {final.mean() / SCRIPTED_RETURN:.0%} "
                     f"| {np.median([r['minutes'] for r in seeds]):.1f} |")
    lines += ["", "Where RLlib's time goes (RLlib's own timers at the end of each run, medians over seeds): "
              "milliseconds per step of one env runner (one step of its game's 16 agents), and per "
              "training iteration.", "",
              "| trainer | the game (env_wait) | RLlib: observations in | RLlib: inference | RLlib: actions out "
              "| sampling, per iteration | update, per iteration |", "|---|---|---|---|---|---|---|"]
    for label, seeds in runs.items():
        if seeds[0]["timings"]:
            ms = {name: np.median([r["timings"][name] for r in seeds]) for name in seeds[0]["timings"]}
            lines.append(f"| {label} | {ms['env_wait_ms']:.2f} | {ms['raw_obs_processing_ms']:.2f} "
                         f"| {ms['inference_ms']:.2f} | {ms['action_processing_ms']:.2f} "
                         f"| {ms['sample_time_ms']:.0f} | {ms['learn_time_ms']:.0f} |")
    write_table("rllib_chase", lines)
    plot_returns("rllib_chase", {label: [r["curve"] for r in seeds] for label, seeds in runs.items()},
                 "Godot Chase game (discrete actions): ppo_godot.py and RLlib's PPO", command,
                 lines=[(SCRIPTED_RETURN, "scripted near-optimal")])


if __name__ == "__main__":
    main()
