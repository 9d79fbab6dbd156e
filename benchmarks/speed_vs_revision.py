"""Wall time of ppo.py and ppo_continuous_action.py against the same scripts at an earlier commit,
side by side: did a change of the code cost speed?

    python benchmarks/speed_vs_revision.py --base 7df053f --pairs 3

Each pair runs the script of --base (taken with `git show`) and today's, same seed and flags, one
process at a time, the order alternating between pairs. Wall time is the whole process, start-up
included. The ratio is the base's wall time over today's, per pair (above 1: today's is faster).
Writes benchmarks/results/speed_vs_revision.md (--out NAME: NAME.md).
"""
import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from common import REPO, write_table

RUNS = {"ppo.py": ["--env-id", "CartPole-v1", "--total-timesteps", "100000"],
        "ppo_continuous_action.py": ["--env-id", "Pendulum-v1", "--total-timesteps", "50000"]}


def wall_time(script, argv, cwd):
    start = time.perf_counter()
    subprocess.run([sys.executable, str(script), *argv], cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - start


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", required=True, help="the commit to compare with (e.g. 7df053f)")
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--out", default="speed_vs_revision")
    args = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for script, argv in RUNS.items():
            base = Path(workdir) / f"base_{script}"
            base.write_text(subprocess.run(["git", "show", f"{args.base}:{script}"], cwd=REPO, check=True,
                                           capture_output=True, text=True).stdout)
            times = {"base": [], "today": []}
            for pair in range(args.pairs):
                order = [("base", base), ("today", REPO / script)]
                for which, path in order if pair % 2 == 0 else order[::-1]:
                    times[which].append(wall_time(path, argv, workdir))
                    print(f"{script} pair {pair + 1} {which}: {times[which][-1]:.1f} s", flush=True)
            ratios = np.array(times["base"]) / np.array(times["today"])
            rows.append(f"| {script} | {' '.join(argv)} | {np.median(times['base']):.1f} | "
                        f"{np.median(times['today']):.1f} | {np.median(ratios):.3f} | {ratios.min():.3f} |")
    command = f"python benchmarks/speed_vs_revision.py --base {args.base} --pairs {args.pairs}"
    write_table(args.out, [f"Wall time of each script at {args.base} (base) and today, {args.pairs} pairs, "
                           f"alternating, one process at a time (`{command}`).", "",
                           "| script | flags | base s (median) | today s (median) | base / today (median) | "
                           "base / today (min) |", "|---|---|---|---|---|---|", *rows])
    print("\n".join(rows))


if __name__ == "__main__":
    main()
