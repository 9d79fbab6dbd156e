"""ppo_godot.py on the Chase demo game over N seeds: its speed against the game's own limit, and
its learning curve against a scripted near-optimal policy.

    python benchmarks/godot_chase.py --kind discrete --total-timesteps 300000 --seeds 3

The limit: the agent-steps per second a scripted client (no network, no learning) gets from the same
2 game processes x 16 agents through the same GodotVecEnv, measured before and after the training
runs, side by side with them. The scripted policy heads straight for the target (continuous and
plugin: along the unit vector to it, at full speed; discrete: along the axis with the larger
distance), which is optimal up to the discrete game's axis-aligned moves. Each trained model is
also played greedily (its most likely action) for --eval-episodes. Writes the table to
benchmarks/results/godot_chase_<kind><tag>.md and the learning curves to
benchmarks/figures/godot_chase_<kind><tag>.png.
"""
import argparse
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from common import REPO, episode_curve, plot_returns, read_run, running_mean, write_table

sys.path.insert(0, str(REPO))
import ppo_godot  # noqa: E402

N_PARALLEL = 2  # game processes, 16 agents each


def scripted_action(obs, kind):
    to_target = obs[:, 2:4]  # discrete, continuous: [x, y, to_target]; plugin: position, to_target (sorted keys)
    direction = to_target / np.linalg.norm(to_target, axis=1, keepdims=True)
    if kind == "continuous":
        return direction
    if kind == "plugin":  # the declared order: sprint (1: full speed), then direction
        return np.concatenate([np.ones((len(obs), 1)), direction], axis=1)
    horizontal = np.abs(to_target[:, 0]) > np.abs(to_target[:, 1])
    # discrete moves: 0 stay, 1 up (-y), 2 down (+y), 3 left (-x), 4 right (+x)
    move = np.where(horizontal, np.where(to_target[:, 0] < 0, 3, 4), np.where(to_target[:, 1] < 0, 1, 2))
    return move[:, None]


def scripted_client(env_path, kind, port, steps=6000):
    """The scripted policy's mean return, and the agent-steps per second the games give a client that
    only plays (the first 100 steps, start-up, are not timed)."""
    args = ppo_godot.parse_args(["--env-path", env_path, "--port", str(port), "--n-parallel", str(N_PARALLEL)])
    envs = ppo_godot.RecordEpisodes(ppo_godot.GodotVecEnv(args))
    try:
        obs, _ = envs.reset()
        returns = []
        for step in range(steps):
            if step == 100:
                start = time.perf_counter()
            obs, _, _, _, infos = envs.step(scripted_action(obs, kind))
            if "episode" in infos:
                returns.extend(infos["episode"]["r"][infos["_episode"]])
        return float(np.mean(returns)), (steps - 100) * envs.num_envs / (time.perf_counter() - start)
    finally:
        envs.close()


def train_and_play(env_path, seed, args):
    with tempfile.TemporaryDirectory() as workdir:
        game = ["--env-path", env_path, "--n-parallel", str(N_PARALLEL), "--port", str(args.port)]
        start = time.time()
        subprocess.run([sys.executable, str(REPO / "ppo_godot.py"), *game, "--seed", str(seed), "--save-model",
                        "--total-timesteps", str(args.total_timesteps), *shlex.split(args.ppo_args)],
                       cwd=workdir, check=True, stdout=subprocess.DEVNULL)
        minutes = (time.time() - start) / 60
        run_dir = next(Path(workdir).glob("runs/*"))
        acc = read_run(run_dir)
        played = subprocess.run([sys.executable, str(REPO / "ppo_godot.py"), *game, "--seed", str(100 + seed),
                                 "--eval-checkpoint", str(run_dir / "ppo_godot.pt"),
                                 "--eval-episodes", str(args.eval_episodes)],
                                cwd=workdir, check=True, capture_output=True, text=True).stdout
    greedy = float(re.search(r"greedy policy: mean_return=(-?[\d.]+)", played).group(1))
    return dict(minutes=minutes, sps=acc.Scalars("charts/SPS")[-1].value, curve=episode_curve(acc), greedy=greedy,
                explained_variance=float(np.median([e.value for e in acc.Scalars("losses/explained_variance")][-20:])),
                entropy=acc.Scalars("losses/entropy")[-1].value)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kind", default="discrete", choices=["discrete", "multidiscrete", "continuous", "plugin"])
    p.add_argument("--total-timesteps", type=int, default=300000)
    p.add_argument("--seeds", type=int, default=3, help="seeds 1..N")
    p.add_argument("--eval-episodes", type=int, default=320, help="greedy episodes of each trained model")
    p.add_argument("--ppo-args", default="", help='more flags for ppo_godot.py, e.g. "--learning-rate 1e-3"')
    p.add_argument("--tag", default="", help="appended to the result files' names")
    p.add_argument("--port", type=int, default=12008)
    args = p.parse_args()
    env_path = str(REPO / "godot" / "chase" / f"chase_{args.kind}.x86_64")

    best, limit_before = scripted_client(env_path, args.kind, args.port)
    runs = []
    for seed in range(1, args.seeds + 1):
        runs.append(train_and_play(env_path, seed, args))
        print(f"seed {seed}: {runs[-1]['sps']:,.0f} agent-steps/s, greedy {runs[-1]['greedy']:.2f}", flush=True)
    _, limit_after = scripted_client(env_path, args.kind, args.port)
    limit = (limit_before + limit_after) / 2
    checkpoints = np.linspace(0, args.total_timesteps, 7)[1:].astype(int)
    # at each checkpoint, each seed's mean of the last 200 episodes
    curve = np.array([[running_mean(returns[steps <= step], 200)[-1] for steps, returns in (r["curve"] for r in runs)]
                      for step in checkpoints])
    sps = np.median([r["sps"] for r in runs])
    greedy = np.array([r["greedy"] for r in runs])

    command = "python benchmarks/godot_chase.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    version = subprocess.run(["godot3-server", "--version"], capture_output=True, text=True).stdout.strip()
    lines = [f"Command: `{command}` ({time.strftime('%Y-%m-%d')}; {N_PARALLEL} game processes x 16 agents, "
             f"godot3-server {version})", "",
             f"Speed: training (whole run, updates included) {sps:,.0f} agent-steps/s, median of {len(runs)} seeds; "
             f"the games' limit (a scripted client, no learning) {limit_before:,.0f} before and {limit_after:,.0f} "
             f"after the training runs. Training runs at {sps / limit:.0%} of the limit. "
             f"Wall-clock: {np.median([r['minutes'] for r in runs]):.1f} min a seed.",
             f"Scripted near-optimal policy: {best:.2f} per episode. Random play: about -1.", "",
             "| agent-steps | mean of the last 200 training episodes (mean over seeds) | min-max over seeds "
             "| share of near-optimal |", "|---|---|---|---|"]
    lines += [f"| {s:,} | {r.mean():.2f} | {r.min():.2f} to {r.max():.2f} | {r.mean() / best:.0%} |"
              for s, r in zip(checkpoints, curve)]
    lines += ["", f"The trained models played greedily ({args.eval_episodes} episodes each): mean {greedy.mean():.2f} "
              f"({greedy.min():.2f} to {greedy.max():.2f}), {greedy.mean() / best:.0%} of near-optimal. "
              f"At the end of training: entropy {np.median([r['entropy'] for r in runs]):.2f}, explained variance "
              f"{np.median([r['explained_variance'] for r in runs]):.2f} (medians over seeds)."]
    name = f"godot_chase_{args.kind}{args.tag}"
    write_table(name, lines)
    game = ("plugin-like: mixed actions, reset on the spot" if args.kind == "plugin" else f"{args.kind} actions")
    plot_returns(name, {"ppo_godot.py": [r["curve"] for r in runs]},
                 f"Godot Chase game ({game})\nppo_godot.py, {N_PARALLEL} games x 16 agents {args.ppo_args}",
                 command, window=200,
                 lines=[(best, "scripted near-optimal"), (0.95 * best, "95% of it")])


if __name__ == "__main__":
    main()
