"""What a healthy run's diagnostics look like, and what a sick one's do: approx_kl, clipfrac,
entropy, explained_variance and grad_norm of each training script on its default env, at its
defaults, with the learning rate 10x, and with no clipping.

    python experiments/healthy_ranges.py --quick    # 3 seeds, short runs: 5 minutes on 2 cores
    python experiments/healthy_ranges.py            # 5 seeds (HalfCheetah 3), longer runs: 20 minutes

A run's value of a diagnostic is its median over the run's updates, the first 10% of the run left
out; the table gives the median of those over seeds and their range (min-max), and replaces the
one between the healthy-ranges markers of course/README.md (--table FILE: that file's instead).
"no clipping" is --clip-coef 1000, which also lifts the value-loss clip; --max-grad-norm stays.
"""
import sys
from pathlib import Path

import numpy as np

from runner import REPO, parse_args, plot, read_series, run_experiment

TAGS = ["charts/episodic_return", "losses/approx_kl", "losses/clipfrac", "losses/entropy",
        "losses/explained_variance", "diagnostics/grad_norm"]
# each script on its default env: (flags, default learning rate, steps full / quick, seeds full, runs at a time)
SCRIPTS = {
    "ppo.py": (["--env-id", "CartPole-v1"], 2.5e-4, 500_000, 100_000, 5, None),
    "ppo_continuous_action.py": (["--env-id", "HalfCheetah-v4"], 3e-4, 200_000, 50_000, 3, None),
    # the two game processes of a run use both cores, and its ports: one run at a time
    "ppo_godot.py": (["--env-path", str(REPO / "godot" / "chase" / "chase_discrete.x86_64"), "--n-parallel", "2"],
                     1e-3, 300_000, 100_000, 5, 1),
}
MARKERS = ("<!-- healthy ranges: python experiments/healthy_ranges.py -->", "<!-- end of healthy ranges -->")


def settings(learning_rate):
    return {"defaults": [], "lr_x10": ["--learning-rate", f"{10 * learning_rate:g}"], "no_clip": ["--clip-coef", "1000"]}


def run_value(steps, values):
    """A run's median over its updates, its first 10% left out (the entropy starts at its maximum)."""
    return float(np.median(values[steps > 0.1 * steps.max()]))


def number(x):
    return f"{x:.0f}" if abs(x) >= 10 else f"{x:.2g}"


def cell(values):
    return f"{number(np.median(values))} ({number(min(values))} to {number(max(values))})"


def table(log_dirs):
    """Markdown: a row per script and diagnostic, a column per setting."""
    lines = ["| script (env) | diagnostic | " + " | ".join(settings(1)) + " |", "|---" * (2 + len(settings(1))) + "|"]
    for script, log_dir in log_dirs.items():
        env = SCRIPTS[script][0][1] if SCRIPTS[script][0][0] == "--env-id" else "Chase (Godot)"
        for tag in TAGS:
            cells = [cell([run_value(s, v) for s, v in read_series(log_dir, label, tag)]) for label in settings(1)]
            lines.append(f"| {script} ({env}) | {tag.split('/')[1]} | " + " | ".join(cells) + " |")
    return lines


def replace_table(page, lines):
    text = page.read_text()
    if MARKERS[0] not in text or MARKERS[1] not in text:
        sys.exit(f"{page} has no healthy-ranges markers ({MARKERS[0]} ... {MARKERS[1]})")
    head, rest = text.split(MARKERS[0])
    page.write_text(head + MARKERS[0] + "\n" + "\n".join(lines) + "\n" + MARKERS[1] + rest.split(MARKERS[1])[1])


if __name__ == "__main__":
    args = parse_args(__doc__.splitlines()[0], more=[
        ("--scripts", dict(nargs="+", default=list(SCRIPTS), choices=list(SCRIPTS), help="the scripts to run")),
        ("--table", dict(default=str(REPO / "course" / "README.md"), help="the page whose table is replaced"))])
    rows, log_dirs = [], {}
    for script in args.scripts:
        flags, learning_rate, steps, quick_steps, seeds, jobs = SCRIPTS[script]
        name = "healthy_ranges_" + script[:-3]
        curves = run_experiment(name, script, settings(learning_rate), flags, steps, TAGS, args, quick_steps,
                                jobs=jobs, seeds=None if args.quick else seeds, plot_figure=False)
        rows.append((f"{script} on {flags[1] if flags[0] == '--env-id' else 'the Chase game'}", curves))
        log_dirs[script] = f"{args.runs_dir}/{name}"
    figure = Path(args.figure) if args.figure else REPO / "experiments" / "figures" / "healthy_ranges.png"
    plot(rows, TAGS, figure, caption="python experiments/healthy_ranges.py" + (" --quick" if args.quick else ""))
    replace_table(Path(args.table), table(log_dirs))
    print(f"figure: {figure}; table: {args.table}")
