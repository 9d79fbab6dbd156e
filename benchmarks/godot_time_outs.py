"""Time-outs in a game that resets on the spot (the Godot RL Agents plugin's way, issue 60): ppo_godot.py reading
the keys of the plugin's pull request #65 (a time-out bootstraps from V(info["terminal_observation"]), the default
--bootstrap-truncation true) against --bootstrap-truncation false (every time-out terminal, CleanRL's way), on
chase_plugin_time_outs.x86_64 (plugin mode, the keys sent, a time-out after 30 actions), the same seeds and
agent-step budget; then each trained model played (sampled, as in training) in the same game with time-outs off.

    python benchmarks/godot_time_outs.py --seeds 3 --total-timesteps 500000 --jobs 2

The value error at time-outs: each trained model plays the game again with --max_steps=1000 (the launcher's
flags, its 30 replaced: main.gd keeps the last --max_steps it is given, and the launcher puts its own after ours,
so appending one would not do), and at every state where an agent has taken exactly 30 actions in its episode
(the states that were time-outs in training: the observation a time-out sends as terminal_observation) the
critic's V(s) is recorded with the discounted return G (gamma 0.99, the script's default) that followed until the
episode's end; the same at each episode's first state, a control, and (added after the first run, to see where the
bootstrapped critic's error comes from) at 10, 20, 40 and 60 actions, with the episodes' lengths. Both variants
train with --norm-reward false, so that V is in the game's own reward units and V - G reads directly (with reward
normalisation V is in units of a running std that differs between runs).

Prediction, written before the first full run: the observation (position, to_target) holds no time, so read as
terminal, a time-out teaches V(s_29) -> r_30 alone, and since a state at 30 actions looks like states met earlier
in other episodes, V is pulled toward 0 across all such states: at the 30-action states the terminal variant's V
underestimates the G that follows (about 5 of discounted return remains there: the launcher's header); read with
the keys, V's target at a time-out is r + gamma V(s_final), the same as anywhere, and V tracks G. At an episode's
first state the terminal variant's V should be low too, by less. What the agent does should change little: the
margins, set before the first run (issue 60):
  1. at the 30-action states, the bootstrapped variant's mean |V - G| is at most half the terminal variant's,
     seed by seed (seed k against seed k), on every seed;
  2. the terminal variant underestimates there: its mean V - G is -1.0 or lower on every seed;
  3. the bootstrapped variant's mean V - G there is within 0.5 of 0 on every seed;
  4. the return at the end (each seed's last 100 training episodes, in the time-out game) of the bootstrapped
     variant, mean over seeds, is not lower than the terminal variant's by more than 0.5.
The control (--control add, or only; added after the first run, which found the bootstrapped critic overestimating):
the bootstrapped variant trained with no time-outs (the evaluation's launcher, --max_steps=1000, in training too),
the same seeds, budget and evaluation; it asks whether the overestimate comes from bootstrapping at the time-outs
or is a bias of this PPO critic in this game whatever the time-outs. Prediction, written before its run: if the
bootstrap causes the overestimate, the control's mean V - G at 30 actions is within 0.5 of 0 on every seed; if
the control's is also +0.5 or more on every seed, the overestimate is the critic's own, not the time-outs'.

    python benchmarks/godot_time_outs.py --seeds 3 --total-timesteps 500000 --jobs 2 --control only \
        --out godot_time_outs_control   # its tables, moved by hand to the end of results/godot_time_outs.md
Writes benchmarks/results/godot_time_outs.md and benchmarks/figures/godot_time_outs.png (mean and min-max over
seeds).
"""
import argparse
import concurrent.futures
import contextlib
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

import common
from common import REPO, draw_seeds, episode_curve, read_run, save_figure, write_table

sys.path.insert(0, str(REPO))
import ppo_godot  # noqa: E402

GAME = REPO / "godot" / "chase" / "chase_plugin_time_outs.x86_64"
MAX_STEPS = 30  # the launcher's time-out, in actions
NO_TIME_OUT = 1000  # the evaluation's --max_steps: no episode of a trained agent lasts that long
VARIANTS = {"bootstrapped (keys read)": ["--bootstrap-truncation", "true"],
            "terminal (--bootstrap-truncation false)": ["--bootstrap-truncation", "false"]}
CONTROL = "control (bootstrapped, no time-outs in training)"  # trains on no_time_out_launcher's game
ALL = {**VARIANTS, CONTROL: ["--bootstrap-truncation", "true"]}
WINDOW = 100  # episodes at the end, and in the curves' running mean
GAMMA = 0.99  # ppo_godot.py's default --gamma, which both variants train with
AT = (0, 10, 20, MAX_STEPS, 40, 60)  # actions taken in the episode at which V and G are compared (0: its start)


def train(variant, seed, args, workdir, launcher):
    """One training run on the time-out game (the control: on `launcher`'s, without time-outs); (the run's folder,
    its episodes' agent-steps and returns)."""
    folder = Path(workdir) / f"{variant.split()[0]}_{seed}"
    folder.mkdir(parents=True)
    with open(folder / "train.log", "w") as log:  # no --port: each game on a free port that the system picks
        subprocess.run([sys.executable, str(REPO / "ppo_godot.py"),
                        "--env-path", str(launcher if variant == CONTROL else GAME), "--seed", str(seed),
                        "--total-timesteps", str(args.total_timesteps), "--norm-reward", "false",
                        *ALL[variant], *shlex.split(args.ppo_args)],
                       cwd=folder, check=True, stdout=log, stderr=subprocess.STDOUT)
    run_dir = next(folder.glob("runs/*"))
    steps, returns = episode_curve(read_run(run_dir))
    return dict(run_dir=run_dir, steps=steps, returns=returns, final=float(returns[-WINDOW:].mean()))


def no_time_out_launcher(workdir):
    """The time-out game's launcher with --max_steps=NO_TIME_OUT in place of its 30, run from the game's folder."""
    text = GAME.read_text()
    assert text.count(f"--max_steps={MAX_STEPS}") == 1 and text.count('"$(dirname "$0")"') == 1, "launcher changed"
    path = Path(workdir) / "chase_plugin_no_time_outs.x86_64"
    path.write_text(text.replace(f"--max_steps={MAX_STEPS}", f"--max_steps={NO_TIME_OUT}")
                    .replace('"$(dirname "$0")"', shlex.quote(str(GAME.parent))))
    path.chmod(0o755)
    return path


def value_errors(run_dir, launcher, seed, states):
    """The trained model played (sampled) with time-outs off: (V, G) at `states` states where an agent has taken
    exactly MAX_STEPS actions in its episode, and the same at every count of AT in the episodes under way till
    then (0: their first states). G = sum_k gamma^k r_{t+k+1} until the episode ends. Returns {actions taken:
    (V, G) arrays, "lengths": the actions of each episode whose first state was counted}."""
    path = run_dir / "ppo_godot.pt"
    agent = ppo_godot.saved_agent(ppo_godot.load_checkpoint(str(path)), str(path))
    args = ppo_godot.parse_args(["--env-path", str(launcher), "--seed", str(seed), "--norm-reward", "false"])
    envs = ppo_godot.make_envs(args)
    n = envs.num_envs
    found = {at: ([], []) for at in AT}
    value, ret, discount = ({at: np.zeros(n) for at in AT} for _ in range(3))
    active = {at: np.zeros(n, dtype=bool) for at in AT}
    taken = np.zeros(n, dtype=int)  # actions taken in the episode under way
    opened, lengths = 0, []  # MAX_STEPS-action states recorded so far; episode lengths
    with ppo_godot.game_errors("the policy played"), contextlib.closing(envs):
        ppo_godot.check_plays(agent, envs, str(path))
        torch.manual_seed(seed)
        obs, _ = envs.reset(seed=seed)
        while True:
            with torch.inference_mode():
                v = agent.get_value(torch.as_tensor(obs)).flatten().numpy()
            for at in AT:
                start = (taken == at) & (opened < states)
                value[at][start], ret[at][start], discount[at][start], active[at][start] = v[start], 0.0, 1.0, True
            opened += int((active[MAX_STEPS] & (taken == MAX_STEPS)).sum())
            if opened >= states and not any(a.any() for a in active.values()):
                break
            with torch.inference_mode():
                action = agent.get_action(torch.as_tensor(obs))  # sampled, as in training
            obs, reward, terminated, truncated, _ = envs.step(action.numpy())
            done = terminated | truncated
            lengths.extend(taken[active[0] & done] + 1)
            taken = np.where(done, 0, taken + 1)
            for at in AT:
                ret[at] += np.where(active[at], discount[at] * reward, 0.0)
                discount[at] *= GAMMA
                ended = active[at] & done
                found[at][0].extend(value[at][ended])
                found[at][1].extend(ret[at][ended])
                active[at] &= ~done
    return {**{at: (np.array(v), np.array(g)) for at, (v, g) in found.items()}, "lengths": np.array(lengths)}


def margin_lines(rows):
    """The margins judged. rows: {(variant, seed): {"final": ..., actions taken: (V, G)}}."""
    boot, term = list(VARIANTS)
    seeds = sorted({seed for _, seed in rows})
    abs_err = {variant: [np.abs(np.subtract(*rows[variant, s][MAX_STEPS])).mean() for s in seeds]
               for variant in VARIANTS}
    bias = {variant: [np.subtract(*rows[variant, s][MAX_STEPS]).mean() for s in seeds] for variant in VARIANTS}
    ratios = [b / t for b, t in zip(abs_err[boot], abs_err[term])]
    gap = np.mean([rows[boot, s]["final"] for s in seeds]) - np.mean([rows[term, s]["final"] for s in seeds])
    fmt = lambda values, form: ", ".join(f"{v:{form}}" for v in values)  # noqa: E731
    return ["", "The margins, set before the first run (in the docstring of benchmarks/godot_time_outs.py):",
            f"1. at the {MAX_STEPS}-action states, bootstrapped mean |V - G| over terminal's, seed by seed: "
            f"{fmt(ratios, '.2f')} (margin: at most 0.50 on every seed): "
            f"{'met' if max(ratios) <= 0.5 else 'missed'}",
            f"2. terminal's mean V - G there, per seed: {fmt(bias[term], '+.2f')} (margin: -1.0 or lower on every "
            f"seed): {'met' if max(bias[term]) <= -1.0 else 'missed'}",
            f"3. bootstrapped mean V - G there, per seed: {fmt(bias[boot], '+.2f')} (margin: within 0.5 of 0 on "
            f"every seed): {'met' if max(map(abs, bias[boot])) <= 0.5 else 'missed'}",
            f"4. return at the end, bootstrapped minus terminal (means over seeds): {gap:+.2f} (margin: -0.5 or "
            f"higher): {'met' if gap >= -0.5 else 'missed'}"]


def table(rows, command):
    lines = [f"Command: `{command}` ({time.strftime('%Y-%m-%d')}; ppo_godot.py's defaults but --norm-reward false; "
             f"V and G in the game's reward units, gamma {GAMMA})", "",
             f"| variant | seed | return at the end (last {WINDOW} episodes) | {MAX_STEPS}-action states | "
             f"mean V there | mean G there | V - G there (bias) | abs(V - G) there | episode starts | "
             "V - G at the start | abs(V - G) at the start |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    variants = [variant for variant in ALL if any(v == variant for v, _ in rows)]
    for variant in variants:
        seeds = sorted(s for v, s in rows if v == variant)
        cells = []
        for seed in seeds:
            row = rows[variant, seed]
            (v30, g30), (v0, g0) = row[MAX_STEPS], row[0]
            cells.append([row["final"], len(v30), v30.mean(), g30.mean(), (v30 - g30).mean(),
                          np.abs(v30 - g30).mean(), len(v0), (v0 - g0).mean(), np.abs(v0 - g0).mean()])
            lines.append(f"| {variant} | {seed} | {cells[-1][0]:.2f} | {cells[-1][1]} | "
                         + " | ".join(f"{c:.2f}" if i != 6 else f"{c}" for i, c in enumerate(cells[-1][2:], 2))
                         + " |")
        mean = np.mean(cells, axis=0)
        lines.append(f"| {variant} | mean | {mean[0]:.2f} | {mean[1]:.0f} | "
                     + " | ".join(f"{c:.2f}" if i != 6 else f"{c:.0f}" for i, c in enumerate(mean[2:], 2)) + " |")
    lines += ["", f"Mean V - G by the actions an agent has taken in its episode, played with time-outs off; mean over "
              "seeds (min to max); and the episodes' length there (the episodes whose first state was counted):", "",
              "| variant | " + " | ".join(f"{at} actions" + (" (a time-out in training)" if at == MAX_STEPS else "")
                                         for at in AT) + " | episode length: median | episodes over "
              f"{MAX_STEPS} actions |", "|---" * (len(AT) + 3) + "|"]
    for variant in variants:
        seeds = [row for (v, _), row in rows.items() if v == variant]
        cells = []
        for at in AT:
            bias = [np.subtract(*row[at]).mean() for row in seeds]
            cells.append(f"{np.mean(bias):+.2f} ({min(bias):+.2f} to {max(bias):+.2f})")
        lengths = [np.median(row["lengths"]) for row in seeds]
        over = [np.mean(row["lengths"] > MAX_STEPS) for row in seeds]
        cells += [f"{np.mean(lengths):.0f} ({min(lengths):.0f} to {max(lengths):.0f})",
                  f"{np.mean(over):.0%} ({min(over):.0%} to {max(over):.0%})"]
        lines.append(f"| {variant} | " + " | ".join(cells) + " |")
    return lines


def plot(runs, rows, command, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [1.3, 1]})
    variants = [variant for variant in ALL if any(v == variant for v, _ in rows)]
    for variant in variants:
        draw_seeds(left, variant, [(r["steps"], r["returns"]) for (v, _), r in runs.items() if v == variant], WINDOW)
    left.set_xlabel("agent-steps (all 16 agents)")
    left.set_ylabel(f"episodic return, time-out game\n(mean of the last {WINDOW} episodes)")
    left.ticklabel_format(axis="x", style="sci", scilimits=(3, 3))
    left.grid(alpha=0.3)
    left.legend(fontsize=8, loc="lower right")
    left.set_title(f"Learning, a time-out after {MAX_STEPS} actions", fontsize=9)
    for k, variant in enumerate(variants):
        bias = np.array([[np.subtract(*row[at]).mean() for at in AT] for (v, _), row in rows.items() if v == variant])
        mean = bias.mean(axis=0)
        shift = (k - (len(variants) - 1) / 2) * 1.2
        right.errorbar(np.array(AT) + shift, mean, yerr=[mean - bias.min(axis=0), bias.max(axis=0) - mean],
                       fmt="o-", capsize=4, color=f"C{k}", label=variant)
    right.axhline(0, color="gray", linewidth=1)
    right.axvline(MAX_STEPS, color="gray", linestyle="--", linewidth=1,
                  label=f"{MAX_STEPS} actions: a time-out in training")
    right.set_xticks(AT)
    right.set_xlabel("actions the agent has taken in its episode")
    right.set_ylabel("mean V(s) - G (game's reward units)")
    right.grid(alpha=0.3)
    right.legend(fontsize=8)
    right.set_title(f"Critic's error, played with time-outs off (max {NO_TIME_OUT} actions)", fontsize=9)
    fig.suptitle("Time-outs read as terminal or bootstrapped from the terminal observation (chase_plugin_time_outs): "
                 "point/line, mean over seeds; band/bar, min-max over seeds", fontsize=9)
    save_figure(fig, out, command)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=3, help="seeds 1..N of each variant")
    p.add_argument("--total-timesteps", type=int, default=500_000, help="agent-steps of each run, all agents")
    p.add_argument("--eval-states", type=int, default=1000,
                   help=f"{MAX_STEPS}-action states per trained model at which V and G are compared")
    p.add_argument("--jobs", type=int, default=2, help="trainings at once (each a game and a trainer)")
    p.add_argument("--ppo-args", default="", help="more flags for both variants, quoted")
    p.add_argument("--control", choices=("off", "add", "only"), default="off",
                   help="the control, trained without time-outs: off, added to the two variants, or alone")
    p.add_argument("--out", default="godot_time_outs", help="results/<out>.md and figures/<out>.png")
    p.add_argument("--workdir", default=None, help="keep the runs here (default: a temporary folder)")
    args = p.parse_args(argv)
    command = "python benchmarks/godot_time_outs.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    variants = {"off": list(VARIANTS), "add": list(ALL), "only": [CONTROL]}[args.control]
    jobs = [(variant, seed) for seed in range(1, args.seeds + 1) for variant in variants]
    with tempfile.TemporaryDirectory() as temporary:
        workdir = args.workdir or temporary
        launcher = no_time_out_launcher(workdir)
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            runs = dict(zip(jobs, pool.map(lambda job: train(*job, args, workdir, launcher), jobs)))
        rows = {}
        for (variant, seed), run in runs.items():  # one at a time, in this process: the games' guards use signals
            rows[variant, seed] = {"final": run["final"],
                                   **value_errors(run["run_dir"], launcher, 1000 + seed, args.eval_states)}
            v, g = rows[variant, seed][MAX_STEPS]
            print(f"{variant}, seed {seed}: return at the end {run['final']:.2f}, at {MAX_STEPS} actions "
                  f"V - G {np.mean(v - g):+.2f} over {len(v)} states", flush=True)
    margins = margin_lines(rows) if args.control != "only" else []  # they judge the two variants
    write_table(args.out, table(rows, command) + margins)
    plot(runs, rows, command, common.REPO / "benchmarks" / "figures" / f"{args.out}.png")
    return rows


if __name__ == "__main__":
    main()
