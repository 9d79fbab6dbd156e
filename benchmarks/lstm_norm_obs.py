"""Does ppo_lstm.py need its observation normalisation? ppo_lstm.py on CartPoleNoVel-v1 at its defaults
(--norm-obs true) and with --norm-obs false, same seeds, one run at a time.

    python benchmarks/lstm_norm_obs.py --seeds 5     # ~10 min on 2 cores

The observation normalisation is most of what `diff ppo.py ppo_lstm.py` shows beyond memory; this
measures what it buys. Reports, per seed, the env steps at which the mean of the last 100 episodic
returns first reaches 475 (as benchmarks/lstm_cartpole_novel.py) and that mean at the end. Writes
benchmarks/results/lstm_norm_obs.md.
"""
import argparse
import tempfile

import numpy as np

import lstm_cartpole_novel
from common import write_table

LABELS = ["ppo_lstm.py", "--norm-obs false"]


def measure(seed, total_timesteps, workdir):
    """{label: lstm_cartpole_novel.run_script's result} of both runs of one seed."""
    lstm_cartpole_novel.RUNS.setdefault("--norm-obs false", ("ppo_lstm.py", ["--env-id", "CartPoleNoVel-v1",
                                                                             "--norm-obs", "false"]))
    return {label: lstm_cartpole_novel.run_script(label, seed, total_timesteps, workdir) for label in LABELS}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="5", help="N (seeds 1..N) or A-B")
    p.add_argument("--total-timesteps", type=int, default=200_000)
    args = p.parse_args()
    rows = []
    seeds = lstm_cartpole_novel.seed_list(args.seeds)
    for seed in seeds:
        with tempfile.TemporaryDirectory() as workdir:
            rows.append(measure(seed, args.total_timesteps, workdir))
        print(seed, {label: (r["solved_steps"], round(r["final_return"], 1)) for label, r in rows[-1].items()},
              flush=True)
    lines = [f"`python benchmarks/lstm_norm_obs.py --seeds {args.seeds}` ({args.total_timesteps:,} steps a run)", "",
             "| seed | " + " | ".join(f"{label}: solved at | final" for label in LABELS) + " |",
             "|---|" + "---|---|" * len(LABELS)]
    for seed, row in zip(seeds, rows):
        cells = [f"{r['solved_steps']:,}" if r["solved_steps"] else "never" for r in row.values()]
        finals = [f"{r['final_return']:.0f}" for r in row.values()]
        lines.append(f"| {seed} | " + " | ".join(f"{c} | {f}" for c, f in zip(cells, finals)) + " |")
    for label in LABELS:
        solved = [row[label]["solved_steps"] for row in rows if row[label]["solved_steps"]]
        lines.append(f"\n{label}: solved {len(solved)} of {len(rows)}"
                     + (f", median {int(np.median(solved)):,} steps" if solved else ""))
    write_table("lstm_norm_obs", lines)


if __name__ == "__main__":
    main()
