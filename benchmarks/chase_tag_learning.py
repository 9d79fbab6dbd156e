"""Do both policies of the Chase game's tag mode learn? ppo_godot_multi_policy.py trains the chaser and the
runner, then each plays the game's scripted other side, beside the untrained networks of
benchmarks/chase_tag_baselines.py. (The results of 2026-12-02 came from ppo_godot.py at 153f0a8, which
trained several policies then; ppo_godot_multi_policy.py logs the same, benchmarks/same_logs_as_revision.py.)

    python benchmarks/chase_tag_learning.py --seeds 3 --total-timesteps 300000

For each seed, three runs: the two policies together in one game (chase_tag: 8 chasers and 8
runners, two policy names), the chaser alone against the scripted runner, the runner alone against
the scripted chaser. After training, each trained policy plays its greedy action (what the plugin's
ONNX inference plays) against the game's script for --eval-steps steps of 8 agents
(chase_tag_baselines.play).

The margins, set from chase_tag_baselines before this was run: a trained chaser catches the scripted
runner in at least 25% of episodes (untrained: 0%), and a trained runner lasts at least 70 steps on
average against the scripted chaser (untrained: 53.7); on every seed. Writes
benchmarks/results/chase_tag_learning.md and benchmarks/figures/chase_tag_learning.png (each policy's
return over training, for each way it was trained).
"""
import argparse
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from chase_tag_baselines import play, untrained_chaser, untrained_runner
from common import REPO, draw_seeds, read_run, save_figure, write_table

sys.path.insert(0, str(REPO))
import ppo_godot_multi_policy  # noqa: E402

GAMES = REPO / "godot" / "chase"
# (how trained, the game, the policies the run trains)
TRAININGS = [("together", "chase_tag", ["chaser", "runner"]),
             ("against the script", "chase_tag_scripted_runner", ["chaser"]),
             ("against the script", "chase_tag_scripted_chaser", ["runner"])]
SCRIPTED = {"chaser": "runner", "runner": "chaser"}  # the side the game plays against each learner
CHASER_MARGIN, RUNNER_MARGIN = 0.25, 70.0
WINDOW = 100  # episodes in a running mean
FIGURE = REPO / "benchmarks" / "figures" / "chase_tag_learning.png"


def train(game, seed, args, workdir):
    """Trains on the game; returns the run's folder."""
    folder = Path(workdir) / f"{game}_{seed}"
    folder.mkdir()
    subprocess.run([sys.executable, str(REPO / "ppo_godot_multi_policy.py"),
                    "--env-path", str(GAMES / f"{game}.x86_64"),
                    "--seed", str(seed), "--port", str(args.port), "--total-timesteps", str(args.total_timesteps),
                    *shlex.split(args.ppo_args)], cwd=folder, check=True, stdout=subprocess.DEVNULL)
    return next(folder.glob("runs/*"))


def curves_of(run_dir, name, several):
    """{"return": (agent-steps, values), "length": ...} of one policy's episodes in a run."""
    acc, tag = read_run(run_dir), f"/{name}" if several else ""
    return {measure: (np.array([e.step for e in acc.Scalars(f"charts/episodic_{measure}{tag}")]),
                      np.array([e.value for e in acc.Scalars(f"charts/episodic_{measure}{tag}")]))
            for measure in ("return", "length")}


def greedy(checkpoint, name, sample=False):
    """The saved policy `name` as chase_tag_baselines.play takes a policy: observations -> game actions, its
    most likely ones (what the plugin's ONNX inference plays), or with sample drawn from pi as in training
    (torch's generator)."""
    saved = ppo_godot_multi_policy.saved_policies(torch.load(checkpoint, weights_only=True), checkpoint)
    obs_layout, action_heads, weights = saved.get(name, next(iter(saved.values())))
    agent = ppo_godot_multi_policy.Agent(obs_layout, action_heads)
    agent.load_state_dict(weights)

    def policy(obs, rng):
        with torch.inference_mode():
            rows = agent.get_action(torch.as_tensor(obs, dtype=torch.float32), greedy=not sample).numpy()
        return [ppo_godot_multi_policy.to_game_action(row, action_heads) for row in rows]

    return policy


def meets_margin(name, length, caught):
    return caught >= CHASER_MARGIN if name == "chaser" else length >= RUNNER_MARGIN


def plot(curves, command, out):
    """Each policy's return (top) and episode length (bottom) over training, a column per policy
    (chaser, runner), a line per way it was trained."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(curves), figsize=(max(4.8 * len(curves), 7.2), 6.6), sharex="col", squeeze=False)
    for row, measure in enumerate(("return", "length")):
        for ax, name in zip(axes[row], curves):
            for how, runs in curves[name].items():
                draw_seeds(ax, how, [run[measure] for run in runs], WINDOW)
            if measure == "return":
                ax.axhline(0, color="gray", linewidth=0.8)
                ax.set_title(f"the {name} (its opponent: its co-learner, or the game's script)", fontsize=9)
            else:
                ax.set_xlabel("agent-steps of the run (all its agents)")
            better = {("chaser", "length"): ": lower is better", ("runner", "length"): ": higher is better"}
            ax.set_ylabel(f"episodic {measure}{better.get((name, measure), '')}\n(mean of the last {WINDOW} episodes)",
                          fontsize=9)
            ax.ticklabel_format(axis="x", style="sci", scilimits=(3, 3))
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
    fig.suptitle("Chase tag mode: " + ", ".join(f"the {name} trained {', '.join(runs)}" for name, runs in curves.items())
                 + "\nline: mean over seeds; band: min-max over seeds; a time-out ends an episode at 100 steps",
                 fontsize=9)
    save_figure(fig, out, command, width=150)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--total-timesteps", type=int, default=300000, help="agent-steps of each run, all agents")
    p.add_argument("--eval-steps", type=int, default=2000, help="actions of each match-up after training, 8 agents")
    p.add_argument("--ppo-args", default="", help="more flags for ppo_godot_multi_policy.py, quoted")
    p.add_argument("--port", type=int, default=12818)
    p.add_argument("--games", default=",".join(game for _, game, _ in TRAININGS),
                   help="the trainings to run, by game, comma-separated (default: all three)")
    p.add_argument("--out", default="chase_tag_learning",
                   help="the name of the results table and figure (results/<out>.md, figures/<out>.png)")
    args = p.parse_args()
    trainings = [training for training in TRAININGS if training[1] in args.games.split(",")]
    command = "python benchmarks/chase_tag_learning.py " + " ".join(sys.argv[1:])
    started = time.time()
    learners = [name for name in ("chaser", "runner") if any(name in names for _, _, names in trainings)]
    untrained = {name: play(SCRIPTED[name], {"chaser": untrained_chaser, "runner": untrained_runner}[name],
                            args.port, args.eval_steps, 7) for name in learners}
    rows, curves = [], {"chaser": {}, "runner": {}}
    with tempfile.TemporaryDirectory() as workdir:
        for seed in range(1, args.seeds + 1):
            for how, game, names in trainings:
                run_dir = train(game, seed, args, workdir)
                for name in names:
                    curves[name].setdefault(how, []).append(curves_of(run_dir, name, len(names) > 1))
                    length, caught, episodes = play(SCRIPTED[name], greedy(run_dir / "ppo_godot_multi_policy.pt", name),
                                                    args.port, args.eval_steps, 100 + seed)
                    rows.append(dict(seed=seed, name=name, how=how, length=length, caught=caught,
                                     episodes=episodes, sps=read_run(run_dir).Scalars("charts/SPS")[-1].value))
                    print(rows[-1], flush=True)
    lines = [f"Command: `{command}` ({time.strftime('%Y-%m-%d')}, {(time.time() - started) / 60:.0f} minutes). "
             f"After training, each policy plays its greedy action against the game's script: {args.eval_steps} "
             f"steps of 8 agents. Margins set before measuring: a chaser catches >= {CHASER_MARGIN:.0%}, a runner "
             f"lasts >= {RUNNER_MARGIN:.0f} steps on average, on every seed.", "",
             "| policy | trained | seed | against the game's scripted | mean episode length (time-out 100) | caught "
             "| episodes | margin met | SPS of the run |", "|---|---|---|---|---|---|---|---|---|"]
    for name in learners:
        length, caught, episodes = untrained[name]
        lines.append(f"| {name} | untrained | - | {SCRIPTED[name]} | {length:.1f} | {caught:.0%} | {episodes} | - | - |")
        for row in rows:
            if row["name"] == name:
                lines.append(f"| {name} | {row['how']} | {row['seed']} | {SCRIPTED[name]} | {row['length']:.1f} | "
                             f"{row['caught']:.0%} | {row['episodes']} | "
                             f"{'yes' if meets_margin(name, row['length'], row['caught']) else 'no'} | "
                             f"{row['sps']:,.0f} |")
    lines.append("")
    for name in learners:
        for how in ("together", "against the script"):
            mine = [row for row in rows if row["name"] == name and row["how"] == how]
            if not mine:
                continue
            measure = "caught" if name == "chaser" else "length"
            values = [row[measure] for row in mine]
            shown = [f"{v:.0%}" if name == "chaser" else f"{v:.1f}" for v in values]
            lines.append(f"- {name}, trained {how}: {measure} {', '.join(shown)} over seeds; margin met on "
                         f"{sum(meets_margin(name, row['length'], row['caught']) for row in mine)}/{len(mine)} seeds.")
    write_table(args.out, lines)
    plot({name: runs for name, runs in curves.items() if runs}, command, FIGURE.with_name(f"{args.out}.png"))


if __name__ == "__main__":
    main()
