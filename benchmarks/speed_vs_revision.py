"""Wall time of ppo.py and ppo_continuous_action.py against the same scripts at an earlier commit,
side by side: did a change of the code cost speed?

    python benchmarks/speed_vs_revision.py --base 7df053f --pairs 7

Each pair runs the script of --base (taken with `git show`) and today's, same seed and flags, one
process at a time, the order alternating between pairs. Wall time is the whole process, start-up
included, each pinned to the machine's last core (taskset) so that neither migrates between cores
mid-run; CPU seconds are the process's user + system time, which another busy process on the
machine disturbs less. The ratios are the base's time over today's, per pair (above 1: today's is
faster); the table gives their median and minimum.
Writes benchmarks/results/speed_vs_revision.md (--out NAME: NAME.md).
"""
import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from common import REPO, write_table

RUNS = {"ppo.py": ["--env-id", "CartPole-v1", "--total-timesteps", "50000"],
        "ppo_continuous_action.py": ["--env-id", "Pendulum-v1", "--total-timesteps", "20480"]}


def timed_run(script, argv, cwd):
    """(wall seconds, CPU seconds) of one run of the script."""
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    pin = ["taskset", "-c", str(os.cpu_count() - 1)] if shutil.which("taskset") else []
    subprocess.run([*pin, sys.executable, str(script), *argv], cwd=cwd, check=True, capture_output=True)
    wall = time.perf_counter() - start
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)


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
                    times[which].append(timed_run(path, argv, workdir))
                    print(f"{script} pair {pair + 1} {which}: {times[which][-1][0]:.1f} s wall, "
                          f"{times[which][-1][1]:.1f} s CPU", flush=True)
            base, today = np.array(times["base"]), np.array(times["today"])
            wall, cpu = base[:, 0] / today[:, 0], base[:, 1] / today[:, 1]
            rows.append(f"| {script} | {' '.join(argv)} | {np.median(base[:, 0]):.1f} | {np.median(today[:, 0]):.1f} | "
                        f"{np.median(wall):.3f} ({wall.min():.3f}) | {np.median(cpu):.3f} ({cpu.min():.3f}) |")
    command = f"python benchmarks/speed_vs_revision.py --base {args.base} --pairs {args.pairs}"
    write_table(args.out, [f"Wall time of each script at {args.base} (base) and today, {args.pairs} pairs, "
                           f"alternating, one process at a time (`{command}`).", "",
                           "| script | flags | base wall s (median) | today wall s (median) | "
                           "base / today, wall: median (min) | base / today, CPU: median (min) |",
                           "|---|---|---|---|---|---|", *rows])


if __name__ == "__main__":
    main()
