"""What every experiment shares: run seeds x settings of a script (as many processes at a time as
the machine has cores), each logging to runs/<experiment>/<setting>__..., so that

    tensorboard --logdir runs/<experiment>

overlays them; then read the runs back with TensorBoard's reader and draw the mean and the spread
over seeds of the return and of the diagnostics the theory is about, as one PNG."""
import argparse
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
FIGURES = REPO / "experiments" / "figures"
LOG_SCALE = {"losses/approx_kl", "losses/old_approx_kl", "losses/value_loss", "diagnostics/grad_norm"}


def parse_args(description, more=()):
    """The flags every experiment takes; more: [(name, add_argument's keywords)] of its own."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true", help="the short version: fewer seeds and steps (minutes)")
    p.add_argument("--seeds", type=int, default=None, help="seeds per setting (default: 3 quick, 5 full)")
    p.add_argument("--total-timesteps", type=int, default=None, help="steps per run (default: the experiment's)")
    p.add_argument("--jobs", type=int, default=os.cpu_count(), help="runs at a time")
    p.add_argument("--runs-dir", default="runs", help="where runs/<experiment>/ goes")
    p.add_argument("--figure", default=None, help="the PNG to write (default: experiments/figures/<name>.png)")
    p.add_argument("--plot-only", action="store_true", help="draw the figure from the runs already there")
    for name, keywords in more:
        p.add_argument(name, **keywords)
    return p.parse_args()


def run_experiment(name, script, settings, common_flags, total_timesteps, tags, args, quick_timesteps,
                   jobs=None, seeds=None, plot_figure=True):
    """settings: {label: [flags]}, the flags of `script`, or [another script, its flags]. Runs every
    (label, seed), then plots; returns {label: {tag: curves}}."""
    seeds = args.seeds or seeds or (3 if args.quick else 5)
    steps = args.total_timesteps or (quick_timesteps if args.quick else total_timesteps)
    log_dir = Path(args.runs_dir) / name
    runs = [(label, seed) for seed in range(1, seeds + 1) for label in settings]
    started = time.time()

    def one(run):
        label, seed = run
        flags = settings[label]
        own_script, flags = (flags[0], flags[1:]) if flags and flags[0].endswith(".py") else (script, flags)
        command = [sys.executable, str(REPO / own_script), *common_flags, *flags, "--seed", str(seed),
                   "--total-timesteps", str(steps), "--log-dir", str(log_dir), "--exp-name", label]
        proc = subprocess.run(command, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{proc.stderr[-2000:]}")

    if not args.plot_only:
        shutil.rmtree(log_dir, ignore_errors=True)  # a rerun replaces the runs it overlays
        with ThreadPoolExecutor(max_workers=jobs or args.jobs) as pool:
            list(pool.map(one, runs))
    print(f"{len(runs)} runs of {script} in {(time.time() - started) / 60:.1f} min; tensorboard --logdir {log_dir}")
    curves = {label: read_curves(log_dir, label, tags) for label in settings}
    if plot_figure:
        figure = Path(args.figure) if args.figure else FIGURES / f"{name}.png"
        command = "python " + " ".join([f"experiments/{name}.py"] + (["--quick"] if args.quick else []))
        scripts = sorted({flags[0] if flags and flags[0].endswith(".py") else script for flags in settings.values()})
        title = f"{name}: {' and '.join(scripts)}, {seeds} seeds x {steps:,} steps (mean and min-max)"
        plot([(title, curves)], tags, figure, caption=command)
        print(f"figure: {figure}")
    return curves


def read_series(log_dir, label, tag):
    """[(steps, values)] of a tag, one pair per run (seed) of a setting."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    series = []
    for run in sorted(p for p in Path(log_dir).iterdir() if p.is_dir() and p.name.split("__")[1] == label):
        acc = EventAccumulator(str(run), size_guidance={"scalars": 0})
        acc.Reload()
        events = acc.Scalars(tag) if tag in acc.Tags()["scalars"] else []
        series.append((np.array([e.step for e in events]), np.array([e.value for e in events])))
    return series


def read_curves(log_dir, label, tags):
    """{tag: (steps, values of shape (seeds, steps))} of the runs of one setting, on a common grid."""
    out = {}
    for tag in tags:
        series = read_series(log_dir, label, tag)
        grid = np.linspace(0, min(s.max() for s, _ in series), 100)
        if tag == "charts/episodic_return":  # one point per episode: the mean of the last 20 episodes
            series = [(s, np.array([v[max(0, i - 19):i + 1].mean() for i in range(len(v))])) for s, v in series]
        out[tag] = (grid, np.stack([np.interp(grid, s, v) for s, v in series]))
    return out


def plot(rows, tags, figure, caption):
    """rows: [(title, curves)], one row of panels (one per tag) each."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(rows), len(tags), figsize=(4.2 * len(tags), 3.6 * len(rows)), squeeze=False)
    for row_axes, (title, curves) in zip(axes, rows):
        for ax, tag in zip(row_axes, tags):
            for label, by_tag in curves.items():
                steps, values = by_tag[tag]
                if tag in LOG_SCALE:  # an estimate of KL can come out a hair below 0
                    values = np.maximum(values, 1e-6)
                line, = ax.plot(steps, values.mean(axis=0), label=label)
                ax.fill_between(steps, values.min(axis=0), values.max(axis=0), color=line.get_color(), alpha=0.2)
            if tag in LOG_SCALE:
                ax.set_yscale("log")
            ax.set_title(tag + (" (log scale)" if tag in LOG_SCALE else ""), fontsize=10)
            ax.set_xlabel("env steps")
            ax.ticklabel_format(axis="x", style="sci", scilimits=(3, 3))
            ax.grid(alpha=0.3)
        row_axes[0].legend(fontsize=8)
    inch = 1 / fig.get_figheight()  # in figure coordinates
    fig.tight_layout(rect=(0, 0.25 * inch, 1, 1 - 0.3 * inch), h_pad=4)
    for row_axes, (title, _) in zip(axes, rows):  # each row's title, above its panels' titles
        fig.text(0.01, row_axes[0].get_position().y1 + 0.3 * inch, title, fontsize=10)
    if any(tag == "charts/episodic_return" for tag in tags):
        fig.text(0.99, 0.05 * inch, "returns: the mean of each run's last 20 episodes", fontsize=7, color="gray",
                 ha="right")
    fig.text(0.01, 0.05 * inch, caption, fontsize=7, color="gray")
    figure.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(figure, dpi=80)
    plt.close(fig)
