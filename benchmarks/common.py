"""What the benchmark scripts share: where results go, how a run's scalars are read, and how
learning curves are drawn."""
import textwrap
from pathlib import Path

import numpy as np
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

REPO = Path(__file__).resolve().parent.parent


def read_run(run_dir):
    """An EventAccumulator holding every scalar and text event of the run."""
    acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    return acc


def sb3_episodes(until=None):
    """An SB3 callback that records (steps, return, wall time) of every finished episode; with until,
    it stops training once until(returns) is true. Imported late: only the SB3 worker processes need SB3."""
    import time

    from stable_baselines3.common.callbacks import BaseCallback

    class Episodes(BaseCallback):
        def __init__(self):
            super().__init__()
            self.steps, self.returns, self.times = [], [], []

        def _on_step(self):
            for info in self.locals["infos"]:
                if "episode" in info:
                    self.steps.append(self.num_timesteps)
                    self.returns.append(info["episode"]["r"])
                    self.times.append(time.time())
            return until is None or not until(self.returns)

    return Episodes()


def first_reach(steps, returns, times, threshold, window=100):
    """(steps, seconds) at which the mean of the last `window` episodic returns first reaches threshold,
    as plain numbers (the rows are printed as JSON); (None, None) if it never does."""
    for i in range(window - 1, len(returns)):
        if np.mean(returns[i - window + 1:i + 1]) >= threshold:
            return int(steps[i]), float(times[i])
    return None, None


def fmt(x, digits=0):
    """A table cell: the number, or "never" for a threshold not reached."""
    return "never" if x is None else f"{x:,.{digits}f}"


def write_table(name, lines):
    """Print the result and keep it in benchmarks/results/<name>.md (benchmarks/README.md quotes it)."""
    table = "\n".join(lines)
    out = REPO / "benchmarks" / "results" / f"{name}.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(table + "\n")
    print(table)


def episode_curve(acc):
    """(env steps, episodic returns) of a run, one point per finished episode."""
    episodes = acc.Scalars("charts/episodic_return")
    return np.array([e.step for e in episodes]), np.array([e.value for e in episodes])


def without_curves(row):
    """A result row as printed while a benchmark runs: its curves left out."""
    return {key: {k: v for k, v in value.items() if not k.endswith("curve")} if isinstance(value, dict) else value
            for key, value in row.items()}


def running_mean(returns, window):
    """At each episode, the mean of the last `window` episodes (fewer at the start)."""
    sums = np.convolve(returns, np.ones(window))[:len(returns)]
    return sums / np.minimum(np.arange(1, len(returns) + 1), window)


def draw_seeds(ax, label, runs, window):
    """On ax, the mean over seeds of each seed's running mean of its last `window` values, with the
    min-max band over seeds. runs: [(steps, values) of each seed]."""
    grid = np.linspace(0, min(steps.max() for steps, _ in runs), 200)
    values = np.stack([np.interp(grid, steps, running_mean(v, window)) for steps, v in runs])
    line, = ax.plot(grid, values.mean(axis=0), label=f"{label} ({len(runs)} seeds)")
    ax.fill_between(grid, values.min(axis=0), values.max(axis=0), color=line.get_color(), alpha=0.2)


def plot_returns(name, curves, title, command, window=100, lines=()):
    """Learning curves as benchmarks/figures/<name>.png: for each label, the mean over its seeds of
    the mean of the last `window` episodes, with the min-max band over seeds.
    curves: {label: [(steps, returns) of each seed]}; lines: [(y, label)], gray reference lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    for label, runs in curves.items():
        draw_seeds(ax, label, runs, window)
    for (y, label), style in zip(lines, ["--", ":", "-."]):
        ax.axhline(y, color="gray", linestyle=style, linewidth=1, label=label)
    ax.set_xlabel("env steps")
    ax.set_ylabel(f"episodic return\n(mean of the last {window} episodes)")
    ax.ticklabel_format(axis="x", style="sci", scilimits=(3, 3))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title + "\nline: mean over seeds; band: min-max over seeds", fontsize=9)
    save_figure(fig, REPO / "benchmarks" / "figures" / f"{name}.png", command)


def save_figure(fig, out, command, width=120, legend_rows=0):
    """The figure as `out`, the command that made it written under it, on as many lines as it needs, and room
    above it for a figure legend of `legend_rows` rows."""
    import matplotlib.pyplot as plt

    caption = textwrap.wrap(command, width)
    fig.text(0.01, 0.01, "\n".join(caption), fontsize=7, color="gray")
    fig.tight_layout(rect=(0, 0.03 * len(caption) + 0.035 * legend_rows, 1, 1))
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=80)
    plt.close(fig)
    print(f"figure: {out}")
