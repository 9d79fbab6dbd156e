"""Does self-play make opposing policies learn where learning together fails? The Chase game's tag mode
(godot/chase/tag.gd): ppo_godot_self_play.py trains the chaser and the runner with self-play, and
ppo_godot_multi_policy.py without it (together), on the same budgets and seeds; beside them, each side
trained alone against the game's script. No script is in sight while the two-policy runs train.

    python benchmarks/chase_tag_self_play.py --seeds 3 --total-timesteps 1000000 --jobs 2
    python benchmarks/chase_tag_self_play.py --seeds 3 --total-timesteps 1000000 --jobs 2 \
        --self-play-args "--self-play-save-steps 20000 --self-play-team-change 100000" \
        --out chase_tag_self_play_ml_agents

After training, every policy plays its greedy action (what the plugin's ONNX inference plays) in a
cross-play table: chasers {self-play, trained against the script, trained together, untrained, the
game's script} x runners {the same five}, each cell the share of episodes that end in a catch and the
mean episode length (a time-out ends one at 100 steps), over --eval-steps steps of 8 pairs for each
seed (seed s's chaser against seed s's runner; "untrained" is a new network of seed s). A cell with
one scripted side is played by the game's own script (--scripted); the one with two by their Python
copies (benchmarks/chase_tag_baselines.py).

The margins, written before this was run (from benchmarks/results/chase_tag_learning.md and
chase_tag_baselines.md): with self-play, on every seed, the chaser catches the game's scripted runner
in at least 25% of episodes (trained together at 300k: 0-6%; untrained: 0%), and the runner lasts at
least 70 steps on average against the scripted chaser (untrained: 53.7).

Writes benchmarks/results/<out>.md and benchmarks/figures/<out>.png (each policy's return and ELO
rating over training, mean and min-max band over seeds). The second command trains self-play with
ML-Agents' save_steps and team_change, five times the script's defaults (which these two runs
chose). --workdir keeps the runs: a second call with the same folder plays and plots them without
training again (--plot-only: plots them alone).
"""
import argparse
import concurrent.futures
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from chase_tag_baselines import fleeing_runner, heading_chaser, play
from chase_tag_learning import greedy
from common import REPO, draw_seeds, read_run, save_figure, write_table

sys.path.insert(0, str(REPO))
import ppo_godot_multi_policy  # noqa: E402

GAMES = REPO / "godot" / "chase"
SELF_PLAY = ["--self-play-outcome", "terminated=chaser"]  # every other setting: the script's default
# (how trained, the game, the policies the run trains, flags); self-play's runs are ppo_godot_self_play.py's, the
# others ppo_godot_multi_policy.py's
TRAININGS = [("self-play", "chase_tag", ["chaser", "runner"], SELF_PLAY),
             ("together", "chase_tag", ["chaser", "runner"], []),
             ("against the script", "chase_tag_scripted_runner", ["chaser"], []),
             ("against the script", "chase_tag_scripted_chaser", ["runner"], [])]
KINDS = ["self-play", "against the script", "together", "untrained", "the game's script"]
LEARNED, SCRIPT = KINDS[:3], KINDS[4]
CHASER_MARGIN, RUNNER_MARGIN = 0.25, 70.0
WINDOW = 100  # episodes in a running mean
FIGURE = REPO / "benchmarks" / "figures" / "chase_tag_self_play.png"


def train(how, game, flags, seed, args, workdir):
    """Trains on the game (or finds the run a former call made); returns the run's folder."""
    folder = Path(workdir) / f"{how.replace(' ', '_')}_{game}_{seed}"
    script = "ppo_godot_self_play" if how == "self-play" else "ppo_godot_multi_policy"
    done = list(folder.glob(f"runs/*/{script}.pt"))
    if done and torch.load(done[0], weights_only=True)["global_step"] >= args.total_timesteps - 2048:
        return done[0].parent
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "train.log", "w") as log:
        subprocess.run([sys.executable, str(REPO / f"{script}.py"),
                        "--env-path", str(GAMES / f"{game}.x86_64"), "--seed", str(seed),  # games on free ports
                        "--total-timesteps", str(args.total_timesteps), *flags, *shlex.split(args.ppo_args)],
                       cwd=folder, check=True, stdout=log, stderr=subprocess.STDOUT)
    return next(folder.glob("runs/*"))


def untrained(name, seed):
    """A new network's greedy action for `name`, seeded."""
    layouts = {"chaser": ([("obs", (4,))], [("move", "discrete", 5)]),
               "runner": ([("obs", (5,))], [("move", "continuous", 2)])}
    torch.manual_seed(seed)
    agent = ppo_godot_multi_policy.Agent(*layouts[name])

    def policy(obs, rng):
        with torch.inference_mode():
            rows = agent.get_action(torch.as_tensor(obs, dtype=torch.float32), greedy=True).numpy()
        return [ppo_godot_multi_policy.to_game_action(row, layouts[name][1]) for row in rows]

    return policy


def match(chaser, runner, port, steps, seed):
    """One cell's game for one seed: a side that is None is the game's script."""
    if chaser is None and runner is None:  # the scripts' Python copies
        return play(None, (heading_chaser, fleeing_runner), port, steps, seed)
    if chaser is None:
        return play("chaser", runner, port, steps, seed)
    if runner is None:
        return play("runner", chaser, port, steps, seed)
    return play(None, (chaser, runner), port, steps, seed)


def contestant(kind, name, seed, runs):
    if kind == "the game's script":
        return None
    if kind == "untrained":
        return untrained(name, seed)
    return greedy(next(runs[(kind, name, seed)].glob("*.pt")), name)


def as_in_training(run_dir, name, seed):
    """The trained policy `name` of the run as it acted in training: a ~ pi, torch's generator seeded."""
    torch.manual_seed(seed)
    return greedy(next(run_dir.glob("*.pt")), name, sample=True)


def spread(values, form):
    """median (worst-best) over seeds."""
    return f"{form(np.median(values))} ({form(min(values))}-{form(max(values))})"


def spread_tables(caught, length, sampled, curves, seeds):
    """Against the game's script, over seeds: each way of training's chaser (catches) and runner (episode
    length), greedy and as in training; how often self-play ends below training against the script; and, seed
    by seed, self-play's two final ELO ratings beside its chaser's catches."""
    percent, steps = "{:.0%}".format, "{:.1f}".format
    lines = ["", f"## Over the {len(seeds)} seeds, against the game's script: median (worst-best)", "",
             "| trained | chaser caught, greedy | chaser caught, sampled as in training | runner length, greedy | "
             "runner length, sampled |", "|---|---|---|---|---|"]
    for how in LEARNED:
        lines.append(f"| {how} | {spread(caught[(how, SCRIPT)], percent)} | "
                     f"{spread([sampled[(how, 'chaser', s)] for s in seeds], percent)} | "
                     f"{spread(length[(SCRIPT, how)], steps)} | "
                     f"{spread([sampled[(how, 'runner', s)] for s in seeds], steps)} |")
    below = {measure: sum(a < b for a, b in pairs) for measure, pairs in (
        ("greedy", zip(caught[("self-play", SCRIPT)], caught[("against the script", SCRIPT)])),
        ("sampled", [(sampled[("self-play", "chaser", s)], sampled[("against the script", "chaser", s)])
                     for s in seeds]))}
    lines += ["", f"The self-play chaser catches the scripted runner less often than the chaser trained against it on "
              f"{below['greedy']} of {len(seeds)} seeds greedy, {below['sampled']} of {len(seeds)} sampled "
              f"(seed s against seed s).", "",
              "| self-play, seed | chaser caught, greedy | sampled | chaser's final ELO | runner's final ELO | "
              "runner length, greedy |", "|---|---|---|---|---|---|"]
    for i, seed in enumerate(seeds):
        elo = {name: curves[("self-play", name)][i]["elo"][1][-1] for name in ("chaser", "runner")}
        lines.append(f"| {seed} | {caught[('self-play', SCRIPT)][i]:.0%} | "
                     f"{sampled[('self-play', 'chaser', seed)]:.0%} | {elo['chaser']:.0f} | {elo['runner']:.0f} | "
                     f"{length[(SCRIPT, 'self-play')][i]:.1f} |")
    return lines


def curves_of(run_dir, name):
    """{"return": (agent-steps, values), "elo": ...} of one policy of a two-policy run."""
    acc = read_run(run_dir)
    tags = {"return": f"charts/episodic_return/{name}", "elo": f"self_play/elo/{name}"}
    return {measure: (np.array([e.step for e in acc.Scalars(tag)]), np.array([e.value for e in acc.Scalars(tag)]))
            for measure, tag in tags.items() if tag in acc.Tags()["scalars"]}


def plot(curves, command, out):
    """Top: each policy's episodic return, with self-play and together; bottom: its ELO rating (self-play)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10.4, 6.8), sharex=True)
    for column, name in enumerate(("chaser", "runner")):
        ax = axes[0, column]
        for how in ("self-play", "together"):
            draw_seeds(ax, how, [run["return"] for run in curves[(how, name)]], WINDOW)
        ax.axhline(0, color="gray", linewidth=0.8)
        other = "runner" if name == "chaser" else "chaser"
        ax.set_title(f"the {name}'s return against the {other} it meets\n(self-play: a snapshot of the {other}; "
                     f"together: the {other} as it learns)", fontsize=9)
        ax.set_ylabel(f"episodic return\n(mean of the last {WINDOW} episodes)", fontsize=9)
        ax = axes[1, column]
        draw_seeds(ax, "self-play", [run["elo"] for run in curves[("self-play", name)]], 1)
        ax.axhline(1200, color="gray", linestyle="--", linewidth=0.8, label="initial rating, 1200")
        ax.set_title(f"the {name}'s ELO rating (K 16): moves only in its turns to learn", fontsize=9)
        ax.set_ylabel("ELO rating", fontsize=9)
        ax.set_xlabel("agent-steps of the run (all its agents)")
        for ax in axes[:, column]:
            ax.ticklabel_format(axis="x", style="sci", scilimits=(3, 3))
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
    fig.suptitle("Chase tag mode, chaser and runner learning in one game: with self-play (ppo_godot_self_play.py) "
                 "and without it (together)\nline: mean over seeds; band: min-max over seeds; together has no "
                 "snapshots, so no rating", fontsize=9)
    save_figure(fig, out, command, width=150)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--total-timesteps", type=int, default=1000000, help="agent-steps of each run, all agents")
    p.add_argument("--eval-steps", type=int, default=2000, help="actions of each match after training, 8 pairs")
    p.add_argument("--ppo-args", default="", help="more flags for every training run, quoted")
    p.add_argument("--self-play-args", default="", help="more flags for the self-play runs alone, quoted")
    p.add_argument("--jobs", type=int, default=1, help="trainings at once (each a game and a trainer)")
    p.add_argument("--port", type=int, default=12858)
    p.add_argument("--workdir", default=None, help="keep the runs here (default: a temporary folder)")
    p.add_argument("--plot-only", action="store_true", help="draw the figure from the runs in --workdir, no games")
    p.add_argument("--out", default="chase_tag_self_play",
                   help="the name of the results table and figure (results/<out>.md, figures/<out>.png)")
    args = p.parse_args()
    command = "python benchmarks/chase_tag_self_play.py " + shlex.join(sys.argv[1:])
    started = time.time()
    with tempfile.TemporaryDirectory() as temporary:
        workdir = args.workdir or temporary
        jobs = [(how, game, names, flags + (shlex.split(args.self_play_args) if how == "self-play" else []), seed)
                for seed in range(1, args.seeds + 1) for how, game, names, flags in TRAININGS]
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:  # the trainings at once, each on free ports
            folders = list(pool.map(lambda i: train(*jobs[i][:2], jobs[i][3], jobs[i][4], args, workdir),
                                    range(len(jobs))))
        runs, curves = {}, {}
        for (how, game, names, flags, seed), folder in zip(jobs, folders):
            for name in names:
                runs[(how, name, seed)] = folder
                if len(names) == 2:
                    curves.setdefault((how, name), []).append(curves_of(folder, name))
        trained_minutes = (time.time() - started) / 60
        if args.plot_only:
            return plot(curves, command.replace(" --plot-only", ""), FIGURE.with_name(f"{args.out}.png"))
        seeds = range(1, args.seeds + 1)
        cells = {}
        for chaser_kind in KINDS:
            for runner_kind in KINDS:
                results = [match(contestant(chaser_kind, "chaser", seed, runs),
                                 contestant(runner_kind, "runner", seed, runs), args.port, args.eval_steps, 100 + seed)
                           for seed in seeds]
                cells[(chaser_kind, runner_kind)] = results
                print(chaser_kind, "x", runner_kind, results, flush=True)
        # against the game's script, each trained policy as it acted in training too: a ~ pi, not its greedy action
        sampled = {}
        for how in LEARNED:
            for seed in seeds:
                for name in ("chaser", "runner"):
                    policy = as_in_training(runs[(how, name, seed)], name, seed)
                    length_, caught_, _ = match(*((policy, None) if name == "chaser" else (None, policy)), args.port,
                                                args.eval_steps, 100 + seed)
                    sampled[(how, name, seed)] = caught_ if name == "chaser" else length_
                print(how, "sampled", seed, sampled[(how, "chaser", seed)], sampled[(how, "runner", seed)], flush=True)
    caught = {kinds: [c for _, c, _ in results] for kinds, results in cells.items()}
    length = {kinds: [n for n, _, _ in results] for kinds, results in cells.items()}
    lines = [f"Command: `{command}` ({time.strftime('%Y-%m-%d')}; training {trained_minutes:.0f} minutes, "
             f"{args.jobs} at a time on 2 cores). Every policy plays its greedy action; each cell: {args.eval_steps} "
             f"steps of 8 pairs for each of {args.seeds} seeds (seed s against seed s). Margins set before "
             f"measuring: with self-play, the chaser catches the scripted runner in >= {CHASER_MARGIN:.0%} of "
             f"episodes and the runner lasts >= {RUNNER_MARGIN:.0f} steps against the scripted chaser, on every seed.",
             "", "## The margins, seed by seed (against the game's script)", "",
             "| trained | chaser: caught, scripted runner | runner: mean length, scripted chaser | margins met |",
             "|---|---|---|---|"]
    for how in ("self-play", "together", "against the script"):
        for i, seed in enumerate(seeds):
            c, n = caught[(how, "the game's script")][i], length[("the game's script", how)][i]
            met = c >= CHASER_MARGIN and n >= RUNNER_MARGIN
            lines.append(f"| {how}, seed {seed} | {c:.0%} | {n:.1f} | {'both' if met else 'no'} |")
    lines += spread_tables(caught, length, sampled, curves, seeds)
    lines += ["", "## Cross-play: chasers (rows) x runners (columns), caught / mean episode length, mean over seeds",
              "", "| chaser \\ runner | " + " | ".join(KINDS) + " |", "|---" * (len(KINDS) + 1) + "|"]
    for chaser_kind in KINDS:
        lines.append(f"| {chaser_kind} | " + " | ".join(
            f"{np.mean(caught[(chaser_kind, r)]):.0%} / {np.mean(length[(chaser_kind, r)]):.1f}" for r in KINDS) + " |")
    lines += ["", "Against the trained opponents each never met (the other two ways of training), means over cells:"]
    for how in LEARNED:
        others = [kind for kind in LEARNED if kind != how]
        as_chaser = np.mean([np.mean(caught[(how, runner)]) for runner in others])
        as_runner = np.mean([np.mean(length[(chaser, how)]) for chaser in others])
        lines.append(f"- {how}: its chaser catches {as_chaser:.0%} of the episodes against the runners trained "
                     f"{' and '.join(others)}; its runner lasts {as_runner:.1f} steps against their chasers.")
    write_table(args.out, lines)
    plot(curves, command, FIGURE.with_name(f"{args.out}.png"))


if __name__ == "__main__":
    main()
