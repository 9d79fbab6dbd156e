"""How many steps the reference completion of ppo_scratch_skeleton.py needs to solve CartPole-v1
(first 100-episode mean >= 475), with the skeleton's flags at their defaults (ppo.py's), on N seeds.

    python benchmarks/scratch_solve.py --seeds 5

Writes the table to benchmarks/results/scratch_reference.md.
"""
import argparse
import contextlib
import importlib.util
import io
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from common import REPO, read_run, write_table

sys.path.insert(0, str(REPO / "tests"))
from scratch_reference import complete  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=5, help="seeds 1..N")
    args = p.parse_args()

    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        path = Path(workdir) / "ppo_scratch_reference.py"
        path.write_text(complete())
        spec = importlib.util.spec_from_file_location("ppo_scratch_reference", path)
        reference = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(reference)
        for seed in range(1, args.seeds + 1):
            run_args = reference.parse_args(["--seed", str(seed), "--log-dir", str(Path(workdir) / "runs")])
            with contextlib.redirect_stdout(io.StringIO()), contextlib.chdir(workdir):
                run_dir = reference.train(run_args)
            acc = read_run(run_dir)
            episodes = acc.Scalars("charts/episodic_return")
            returns = np.array([e.value for e in episodes])
            solved = next((episodes[i].step for i in range(99, len(returns))
                           if returns[i - 99:i + 1].mean() >= 475), None)
            rows.append((seed, solved, returns[-100:].mean()))
            print(rows[-1], flush=True)

    lines = [f"Command: `python benchmarks/scratch_solve.py --seeds {args.seeds}` "
             f"({time.strftime('%Y-%m-%d')}; {run_args.total_timesteps:,} steps per run)", "",
             "| seed | steps to a 100-episode mean >= 475 | last 100 episodes |", "|---|---|---|"]
    lines += [f"| {seed} | {'never' if s is None else f'{s:,}'} | {final:.1f} |" for seed, s, final in rows]
    solved = [s for _, s, _ in rows if s is not None]
    lines += ["", f"Solved on {len(solved)}/{len(rows)} seeds"
              + (f"; steps to solve: median {np.median(solved):,.0f}, range {min(solved):,}-{max(solved):,}."
                 if solved else ".")]
    write_table("scratch_reference", lines)


if __name__ == "__main__":
    main()
