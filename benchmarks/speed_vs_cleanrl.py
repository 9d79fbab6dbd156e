"""Wall time of ppo.py and ppo_continuous_action.py against CleanRL's scripts, side by side.

    python benchmarks/speed_vs_cleanrl.py --cleanrl-dir /path/to/cleanrl --pairs 3
    python benchmarks/speed_vs_cleanrl.py --cleanrl-dir /path/to/cleanrl --solve-seeds 10

--cleanrl-dir is a checkout of CleanRL (it holds cleanrl/ppo.py and cleanrl/ppo_continuous_action.py).
CleanRL pins gymnasium 0.29.1, which cannot live beside this project's gymnasium 1.0, so its
scripts run in a venv of their own: --cleanrl-python names one, or the benchmark builds
benchmarks/.venv-cleanrl once (gymnasium 0.29.1, numpy 1.24.4, tyro 0.5.10, tensorboard and the
same torch as this project, so the comparison measures the scripts, not two torch releases).

Each pair runs this project's script, CleanRL's as shipped (torch on every core) and CleanRL's
with OMP_NUM_THREADS=1, same seed and flags, in an order that alternates between pairs, one
process at a time. Wall time is the whole process, start-up included, as a user waits for it;
CPU seconds are user + system time of the process (CleanRL's default uses more than one core).
The ratios are CleanRL's wall time over ours, per pair; the table gives their median and minimum.

--solve-seeds N also runs ppo.py at its defaults on seeds 1..N and reports the wall time until
the mean of the last 100 episodic returns first reaches 475 (from process start, and from the
start of training, which is when the run writes its hyperparameters).
Writes benchmarks/results/speed_vs_cleanrl.md (--out NAME: NAME.md).
"""
import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from cartpole_vs_sb3 import run_ppo
from common import REPO, write_table

CLEANRL_REQUIREMENTS = ["gymnasium==0.29.1", "numpy==1.24.4", "tyro==0.5.10", "tensorboard", "torch==2.13.0"]
SCRIPTS = [  # ours, CleanRL's, the flags both get
    ("ppo.py", "ppo.py", ["--env-id", "CartPole-v1"]),
    ("ppo_continuous_action.py", "ppo_continuous_action.py", ["--env-id", "Pendulum-v1"]),
]


def cleanrl_python(args):
    if args.cleanrl_python:
        return args.cleanrl_python
    venv = REPO / "benchmarks" / ".venv-cleanrl"
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"building {venv} with {' '.join(CLEANRL_REQUIREMENTS)}", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", *CLEANRL_REQUIREMENTS], check=True)
    return str(python)


def timed(command, workdir, env=None):
    """(wall seconds, CPU seconds) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, cwd=workdir, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def compare(ours, theirs, flags, steps, args, python, workdir):
    common = [*flags, "--seed", "1", "--total-timesteps", str(steps)]
    sides = {
        "ours": lambda: timed([sys.executable, str(REPO / ours), *common, "--exp-name", "ours"], workdir),
        "cleanrl_all_cores": lambda: timed([python, str(Path(args.cleanrl_dir) / "cleanrl" / theirs), *common],
                                           workdir),
        "cleanrl_1_thread": lambda: timed([python, str(Path(args.cleanrl_dir) / "cleanrl" / theirs), *common],
                                          workdir, env={**os.environ, "OMP_NUM_THREADS": "1"}),
    }
    results = {side: [] for side in sides}
    for pair in range(args.pairs):
        order = list(sides) if pair % 2 == 0 else list(sides)[::-1]
        for side in order:
            results[side].append(sides[side]())
            print(ours, side, "wall %.1f s, CPU %.1f s" % results[side][-1], flush=True)
    return results


def speed_lines(ours, steps, results, pairs):
    wall = {side: np.array([w for w, _ in runs]) for side, runs in results.items()}
    cpu = {side: np.array([c for _, c in runs]) for side, runs in results.items()}
    lines = []
    for side, name in (("cleanrl_1_thread", "CleanRL, 1 thread"), ("cleanrl_all_cores", "CleanRL as shipped")):
        ratios = wall[side] / wall["ours"]
        lines.append(f"| {ours} | {steps:,} | {name} | {np.median(wall['ours']):.1f} | {np.median(wall[side]):.1f} "
                     f"| {np.median(ratios):.2f} | {ratios.min():.2f} | {np.median(cpu['ours']):.1f} "
                     f"| {np.median(cpu[side]):.1f} | {pairs} |")
    return lines


def solve_times(seeds, workdir):
    """Per seed: (seed, steps to 475, seconds from process start, seconds from training start, SPS)."""
    rows = []
    for seed in range(1, seeds + 1):
        launched = time.time()
        run = run_ppo(seed, 500000, workdir)  # ppo.py's defaults
        seconds = run["solved_seconds"]
        rows.append((seed, run["solved_steps"], None if seconds is None else seconds + run["started"] - launched,
                     seconds, run["sps"]))
        print("solve", rows[-1], flush=True)
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cleanrl-dir", required=True, help="a CleanRL checkout (holds cleanrl/ppo.py)")
    p.add_argument("--cleanrl-python", default=None,
                   help="a Python with CleanRL's requirements (default: build benchmarks/.venv-cleanrl)")
    p.add_argument("--pairs", type=int, default=3, help="runs of each side per script")
    p.add_argument("--cartpole-steps", type=int, default=200000, help="steps of the ppo.py comparison")
    p.add_argument("--pendulum-steps", type=int, default=100000, help="steps of the continuous comparison")
    p.add_argument("--solve-seeds", type=int, default=0, help="also time ppo.py solving CartPole on N seeds")
    p.add_argument("--out", default="speed_vs_cleanrl", help="name of the table in benchmarks/results/")
    args = p.parse_args()
    for script in ("ppo.py", "ppo_continuous_action.py"):
        if not (Path(args.cleanrl_dir) / "cleanrl" / script).is_file():
            sys.exit(f"speed_vs_cleanrl.py: error: no cleanrl/{script} in --cleanrl-dir {args.cleanrl_dir}")
    python = cleanrl_python(args)

    command = "python benchmarks/speed_vs_cleanrl.py " + " ".join(sys.argv[1:])
    lines = [f"Command: `{command}` ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores; this project on "
             f"gymnasium 1.0 with 1 torch thread, CleanRL on gymnasium 0.29.1, the same torch)", "",
             "| script | steps | against | our wall s | their wall s | wall ratio (median) | wall ratio (min) "
             "| our CPU s | their CPU s | pairs |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as workdir:
        for (ours, theirs, flags), steps in zip(SCRIPTS, (args.cartpole_steps, args.pendulum_steps)):
            if steps > 0:
                results = compare(ours, theirs, flags, steps, args, python, workdir)
                lines += speed_lines(ours, steps, results, args.pairs)
        if args.solve_seeds:
            rows = solve_times(args.solve_seeds, workdir)
            fmt = lambda x, f: "never" if x is None else f.format(x)
            lines += ["", "ppo.py at its defaults (CartPole-v1, 500k steps): seconds until the mean of the last "
                      "100 episodic returns first reaches 475.", "",
                      "| seed | steps to 475 | s from process start | s from training start | SPS (whole run) |",
                      "|---|---|---|---|---|"]
            lines += [f"| {seed} | {fmt(steps, '{:,}')} | {fmt(launch, '{:.1f}')} | {fmt(train, '{:.1f}')} "
                      f"| {sps:,.0f} |" for seed, steps, launch, train, sps in rows]
            solved = [r for r in rows if r[1] is not None]
            if solved:
                lines += ["", f"Solved on {len(solved)}/{len(rows)} seeds; median seconds to 475: "
                          f"{np.median([r[2] for r in solved]):.1f} from process start, "
                          f"{np.median([r[3] for r in solved]):.1f} from training start; median steps "
                          f"{np.median([r[1] for r in solved]):,.0f}."]
    write_table(args.out, lines)


if __name__ == "__main__":
    main()
