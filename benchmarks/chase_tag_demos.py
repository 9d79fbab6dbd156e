"""Does learning from demonstrations help, and does it collapse when PPO starts? The Chase game's tag mode,
the chaser trained against the game's scripted runner: PPO alone (ppo_godot.py) against behaviour cloning
then PPO (ppo_godot_bc.py) on the scripted chaser's recorded play, with the game's shaped reward and with a
sparse one (1 for a catch, nothing else: chase_tag_sparse_scripted_runner.x86_64); then, for the collapse,
ppo_godot_bc.py's first 100k agent-steps with its critic warm-up, without it, and without it or the BC loss
beside PPO's (cloning then plain PPO, what users of SB3 and ML-Agents report collapsing).

    python benchmarks/chase_tag_demos.py --seeds 3 --jobs 2

The demonstrations: --demo-episodes episodes of the game's scripted chaser against its scripted runner,
recorded by the game itself (main.gd --record_demos, the plugin's format and rules), seed 1000. A catch ends
an episode before its 100 actions, so an episode's length says whether it was a catch: the catch rate is
the share of training episodes (sampled actions) that end before 100 actions, over the last 100 episodes.
The scripted chaser itself catches 43.8% against the scripted runner (benchmarks/results/chase_tag_baselines.md).

Margins, written before the first run:
- shaped reward: BC then PPO reaches a 40% catch rate in at most half the agent-steps PPO alone needs, on
  every seed (PPO alone: 23-42% greedy after 300k in chase_tag_learning.md, so it may not reach 40% at all);
- sparse reward: PPO alone stays under 10% over the whole budget on every seed (random play: no catch in 80
  episodes), BC then PPO ends at 30% or more on every seed;
- the collapse: without the warm-up or the BC loss, the lowest catch rate of the first 100k agent-steps
  (running over 50 episodes) falls below half the rate of the first 50 episodes on at least 2 of 3 seeds;
  with both (the defaults), it stays above half on every seed.
Writes benchmarks/results/chase_tag_demos.md and benchmarks/figures/chase_tag_demos.png.
"""
import argparse
import concurrent.futures
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from common import REPO, draw_seeds, first_reach, read_run, running_mean, save_figure, write_table

GAMES = REPO / "godot" / "chase"
MAX_STEPS = 100  # tag.gd's time-out, in actions
WINDOW = 100  # episodes in a running catch rate
COLLAPSE_WINDOW, COLLAPSE_STEPS = 50, 100_000


def record_demos(path, episodes, seed=1000):
    subprocess.run([str(GAMES / "chase_tag.x86_64"), f"--record_demos={path}", f"--episodes={episodes}",
                    f"--env_seed={seed}", "--fixed-fps", "60"], check=True, capture_output=True)
    return json.loads(Path(path).read_text())


def train(job):
    """One run; its (agent-steps, 1 for a catch else 0) of every training episode."""
    label, script, game, flags, seed, steps, workdir = job
    folder = Path(workdir) / f"{label.replace(' ', '_').replace(',', '')}_{seed}"
    done = list(folder.glob("runs/*/*.pt"))  # a former call's finished run (--workdir): played, not trained again
    if done and torch.load(done[0], weights_only=True)["global_step"] >= steps - 2048:
        return label, seed, catch_curve(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "train.log", "w") as log:
        subprocess.run([sys.executable, str(REPO / script), "--env-path", str(GAMES / f"{game}.x86_64"),
                        "--godot-version", "3", "--seed", str(seed), "--total-timesteps",  # games on free ports
                        str(steps), *flags], cwd=folder, check=True, stdout=log, stderr=subprocess.STDOUT)
    return label, seed, catch_curve(folder)


def catch_curve(folder):
    lengths = read_run(next(folder.glob("runs/*"))).Scalars("charts/episodic_length")
    return np.array([e.step for e in lengths]), np.array([float(e.value < MAX_STEPS) for e in lengths])


def first_step_at(curve, rate, window=WINDOW):
    """The agent-steps at which the catch rate over the last `window` episodes first reaches rate, or None."""
    steps, catches = curve
    return first_reach(steps, catches, np.zeros(len(steps)), rate, window)[0]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--total-timesteps", type=int, default=300_000)
    p.add_argument("--demo-episodes", type=int, default=50)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--workdir", default=None,
                   help="keep the runs here; a second call with the same folder tables and plots them without training")
    args = p.parse_args()
    started = time.time()
    workdir = args.workdir or tempfile.mkdtemp(prefix="chase_tag_demos_")
    Path(workdir).mkdir(parents=True, exist_ok=True)
    demos = Path(workdir) / "demos.json"
    episodes = record_demos(demos, args.demo_episodes)
    demo_steps = sum(len(actions) for _, actions in episodes)
    demo_catches = sum(len(actions) < MAX_STEPS for _, actions in episodes)
    bc = ["--demos", str(demos)]
    arms = {  # label: script, game, flags, budget
        "PPO alone, shaped": ("ppo_godot.py", "chase_tag_scripted_runner", [], args.total_timesteps),
        "BC then PPO, shaped": ("ppo_godot_bc.py", "chase_tag_scripted_runner", bc, args.total_timesteps),
        "PPO alone, sparse": ("ppo_godot.py", "chase_tag_sparse_scripted_runner", [], args.total_timesteps),
        "BC then PPO, sparse": ("ppo_godot_bc.py", "chase_tag_sparse_scripted_runner", bc, args.total_timesteps),
        "no warm-up": ("ppo_godot_bc.py", "chase_tag_scripted_runner", bc + ["--critic-warmup", "0"], COLLAPSE_STEPS),
        "no warm-up, no BC loss": ("ppo_godot_bc.py", "chase_tag_scripted_runner",
                                   bc + ["--critic-warmup", "0", "--bc-strength", "0"], COLLAPSE_STEPS),
    }
    jobs = [(label, script, game, flags, seed, steps, workdir)
            for seed in range(1, args.seeds + 1) for label, (script, game, flags, steps) in arms.items()]
    curves = {}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for label, seed, curve in pool.map(train, jobs):
            curves.setdefault(label, {})[seed] = curve
            print(f"{label} seed {seed}: {len(curve[0])} episodes, last {WINDOW} caught "
                  f"{curve[1][-WINDOW:].mean():.0%}", flush=True)
    seeds = range(1, args.seeds + 1)

    command = (f"python benchmarks/chase_tag_demos.py --seeds {args.seeds} --total-timesteps {args.total_timesteps} "
               f"--demo-episodes {args.demo_episodes} --jobs {args.jobs}")
    lines = [f"Command: `{command}` ({time.strftime('%Y-%m-%d')}, {(time.time() - started) / 60:.0f} minutes, 2 "
             f"cores). Demonstrations: {args.demo_episodes} episodes of the scripted chaser ({demo_steps} steps, "
             f"{demo_catches} of them catches), recorded by the game (seed 1000). Catch rate: the share of training "
             f"episodes (sampled actions) that end in a catch, over the last {WINDOW}.", "",
             "| reward | how trained | seed | agent-steps to a 40% catch rate | catch rate at the end |",
             "|---|---|---|---|---|"]
    for reward in ("shaped", "sparse"):
        for how in ("PPO alone", "BC then PPO"):
            for seed in seeds:
                curve = curves[f"{how}, {reward}"][seed]
                reached = first_step_at(curve, 0.4)
                lines.append(f"| {reward} | {how} | {seed} | {'never' if reached is None else f'{reached:,}'} | "
                             f"{curve[1][-WINDOW:].mean():.0%} |")
    lines += ["", f"The collapse: the first {COLLAPSE_STEPS:,} agent-steps of ppo_godot_bc.py, the shaped reward; "
              f"catch rates running over {COLLAPSE_WINDOW} episodes.", "",
              f"| run | seed | first {COLLAPSE_WINDOW} episodes | lowest in the first {COLLAPSE_STEPS:,} | "
              f"at {COLLAPSE_STEPS:,} | below half the first |", "|---|---|---|---|---|---|"]
    collapse = {"with warm-up and BC loss (defaults)": "BC then PPO, shaped", "no warm-up": "no warm-up",
                "no warm-up, no BC loss": "no warm-up, no BC loss"}
    verdicts = {}
    for name, label in collapse.items():
        for seed in seeds:
            steps, catches = curves[label][seed]
            early = steps <= COLLAPSE_STEPS
            rates = running_mean(catches[early], COLLAPSE_WINDOW)[COLLAPSE_WINDOW - 1:]
            first = catches[:COLLAPSE_WINDOW].mean()
            fell = bool(rates.min() < first / 2)
            verdicts.setdefault(name, []).append(fell)
            lines.append(f"| {name} | {seed} | {first:.0%} | {rates.min():.0%} | {rates[-1]:.0%} | "
                         f"{'yes' if fell else 'no'} |")
    shaped_bc = [first_step_at(curves["BC then PPO, shaped"][s], 0.4) for s in seeds]
    shaped_ppo = [first_step_at(curves["PPO alone, shaped"][s], 0.4) for s in seeds]
    lines += ["", "Margins, as the docstring set them before the first run:",
              f"- shaped: BC then PPO at 40% in at most half PPO alone's steps: "
              f"{sum(b is not None and (p is None or b <= p / 2) for b, p in zip(shaped_bc, shaped_ppo))} of "
              f"{len(seeds)} seeds.",
              f"- sparse: PPO alone under 10% throughout: "
              f"{sum(running_mean(curves['PPO alone, sparse'][s][1], WINDOW).max() < 0.1 for s in seeds)} of "
              f"{len(seeds)}; "
              f"BC then PPO ending at 30% or more: "
              f"{sum(curves['BC then PPO, sparse'][s][1][-WINDOW:].mean() >= 0.3 for s in seeds)} of {len(seeds)}.",
              f"- collapse: without warm-up or BC loss, below half on {sum(verdicts['no warm-up, no BC loss'])} of "
              f"{len(seeds)} seeds (predicted at least 2); with both, on "
              f"{sum(verdicts['with warm-up and BC loss (defaults)'])} (predicted 0)."]
    write_table("chase_tag_demos", lines)
    plot(curves, command, demo_steps)


def full_windows(runs, window):
    """Each run's running catch rate from its window-th episode on: before it, the first episodes to end are
    the short ones, the catches."""
    return [(steps[window - 1:], running_mean(catches, window)[window - 1:]) for steps, catches in runs]


def plot(curves, command, demo_steps):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for ax, reward in zip(axes, ("shaped", "sparse")):
        for how in ("PPO alone", "BC then PPO"):
            draw_seeds(ax, how, full_windows(curves[f"{how}, {reward}"].values(), WINDOW), 1)
        ax.axhline(0.438, color="gray", linestyle=":", linewidth=1, label="the scripted chaser (43.8%)")
        ax.set_title(f"{reward} reward: the chaser against the scripted runner", fontsize=9)
    for name, label in (("warm-up and BC loss (defaults)", "BC then PPO, shaped"), ("no warm-up", "no warm-up"),
                        ("no warm-up, no BC loss", "no warm-up, no BC loss")):
        runs = [(steps[steps <= COLLAPSE_STEPS], catches[steps <= COLLAPSE_STEPS])
                for steps, catches in curves[label].values()]
        draw_seeds(axes[2], name, full_windows(runs, COLLAPSE_WINDOW), 1)
    axes[2].set_title(f"the collapse: BC then PPO's first {COLLAPSE_STEPS // 1000}k agent-steps (shaped)", fontsize=9)
    for i, ax in enumerate(axes):
        ax.set_xlabel("agent-steps")
        ax.set_ylabel(f"catch rate (last {COLLAPSE_WINDOW if i == 2 else WINDOW} training episodes)")
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        ax.ticklabel_format(axis="x", style="sci", scilimits=(3, 3))
    fig.suptitle(f"Chase tag mode: behaviour cloning on {demo_steps} steps of the scripted chaser, then PPO "
                 f"(line: mean over seeds; band: min-max)", fontsize=10)
    save_figure(fig, REPO / "benchmarks" / "figures" / "chase_tag_demos.png", command, width=150)


if __name__ == "__main__":
    main()
