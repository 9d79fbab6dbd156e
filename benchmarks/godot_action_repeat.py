"""--action-repeat and --speedup on the Chase demo game: agent-steps per second and the return they buy.

    python benchmarks/godot_action_repeat.py --seeds 2 --total-timesteps 150000

The game repeats each action for --action-repeat physics ticks (1/60 game second each) before it
replies, so a larger repeat covers more game time per agent-step, with coarser control; an episode
is at most 100 actions. --speedup multiplies the game's physics tick rate. Each setting trains
ppo_godot.py at its defaults otherwise, for the same agent-steps; "return" is the mean of the last
100 training episodes. Writes benchmarks/results/godot_action_repeat.md.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from common import REPO, episode_curve, read_run, write_table

SETTINGS = {"1": ["--action-repeat", "1"], "4": ["--action-repeat", "4"], "8": ["--action-repeat", "8"],
            "8, --speedup 8": ["--action-repeat", "8", "--speedup", "8"]}


def run(flags, seed, total_timesteps, port):
    """One training run of the discrete Chase game: its agent-steps/s, last returns and episode lengths."""
    with tempfile.TemporaryDirectory() as workdir:
        subprocess.run([sys.executable, str(REPO / "ppo_godot.py"), "--env-path",
                        str(REPO / "godot" / "chase" / "chase_discrete.x86_64"), "--seed", str(seed), "--port", str(port),
                        "--total-timesteps", str(total_timesteps), *flags], cwd=workdir, check=True,
                       stdout=subprocess.DEVNULL)
        acc = read_run(next(Path(workdir).glob("runs/*")))
        _, returns = episode_curve(acc)
        lengths = [e.value for e in acc.Scalars("charts/episodic_length")]
        return dict(sps=acc.Scalars("charts/SPS")[-1].value, final=float(np.mean(returns[-100:])),
                    length=float(np.mean(lengths[-100:])))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=2, help="seeds 1..N")
    p.add_argument("--total-timesteps", type=int, default=150000)
    p.add_argument("--port", type=int, default=13008)
    args = p.parse_args()

    results = {label: [run(flags, seed, args.total_timesteps, args.port) for seed in range(1, args.seeds + 1)]
               for label, flags in SETTINGS.items()}
    lines = [f"Command: `python benchmarks/godot_action_repeat.py --seeds {args.seeds} --total-timesteps "
             f"{args.total_timesteps}` ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores; chase_discrete, "
             "ppo_godot.py's defaults otherwise)", "",
             "| --action-repeat | agent-steps/s | return (last 100 episodes) | episode length (actions) "
             "| game seconds per action |", "|---|---|---|---|---|"]
    for label, runs in results.items():
        cells = [" / ".join(f"{r[key]:,.{digits}f}" for r in runs) for key, digits in
                 (("sps", 0), ("final", 2), ("length", 1))]
        lines.append(f"| {label} | {' | '.join(cells)} | {int(label.split(',')[0]) / 60:.3f} |")
    lines += ["", "Each cell: one value per seed."]
    write_table("godot_action_repeat", lines)


if __name__ == "__main__":
    main()
