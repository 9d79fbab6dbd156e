"""ppo_godot.py on the Chase demo game over N seeds: agent-steps per second with 2 game processes x
16 agents, and the learning curve against a scripted near-optimal policy.

    python benchmarks/godot_chase.py --kind discrete --total-timesteps 300000 --seeds 3

The scripted policy heads straight for the target (continuous: along the unit vector to it;
discrete: along the axis with the larger distance), which is optimal up to the discrete game's
axis-aligned moves. Writes the table to benchmarks/results/godot_chase_<kind>.md and the learning
curves to benchmarks/figures/godot_chase_<kind>.png.
"""
import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from common import REPO, episode_curve, plot_returns, read_run, running_mean, write_table

sys.path.insert(0, str(REPO))
import ppo_godot  # noqa: E402


def scripted_action(obs, kind):
    to_target = obs[:, 2:4]
    if kind == "continuous":
        return to_target / np.linalg.norm(to_target, axis=1, keepdims=True)
    horizontal = np.abs(to_target[:, 0]) > np.abs(to_target[:, 1])
    # discrete moves: 0 stay, 1 up (-y), 2 down (+y), 3 left (-x), 4 right (+x)
    move = np.where(horizontal, np.where(to_target[:, 0] < 0, 3, 4), np.where(to_target[:, 1] < 0, 1, 2))
    return move[:, None]


def scripted_return(env_path, kind, port, steps=1000):
    envs = ppo_godot.GodotVecEnv(ppo_godot.parse_args(["--env-path", env_path, "--port", str(port)]))
    try:
        obs, _ = envs.reset()
        returns = []
        for _ in range(steps):
            obs, _, _, _, infos = envs.step(scripted_action(obs, kind))
            if "episode" in infos:
                returns.extend(infos["episode"]["r"][infos["_episode"]])
        return float(np.mean(returns))
    finally:
        envs.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kind", default="discrete", choices=["discrete", "multidiscrete", "continuous"])
    p.add_argument("--total-timesteps", type=int, default=300000)
    p.add_argument("--seeds", type=int, default=3, help="seeds 1..N")
    p.add_argument("--port", type=int, default=12008)
    args = p.parse_args()
    env_path = str(REPO / "godot" / "chase" / f"chase_{args.kind}.x86_64")

    best = scripted_return(env_path, args.kind, args.port)
    runs = []
    for seed in range(1, args.seeds + 1):
        with tempfile.TemporaryDirectory() as workdir:
            start = time.time()
            subprocess.run([sys.executable, str(REPO / "ppo_godot.py"), "--env-path", env_path, "--n-parallel", "2",
                            "--port", str(args.port), "--seed", str(seed),
                            "--total-timesteps", str(args.total_timesteps)],
                           cwd=workdir, check=True, stdout=subprocess.DEVNULL)
            acc = read_run(next(Path(workdir).glob("runs/*")))
        runs.append(dict(minutes=(time.time() - start) / 60, sps=acc.Scalars("charts/SPS")[-1].value,
                         curve=episode_curve(acc)))
        print(f"seed {seed}: {runs[-1]['sps']:,.0f} agent-steps/s", flush=True)
    checkpoints = np.linspace(0, args.total_timesteps, 7)[1:].astype(int)
    # at each checkpoint, each seed's mean of the last 200 episodes
    curve = np.array([[running_mean(returns[steps <= step], 200)[-1] for steps, returns in (r["curve"] for r in runs)]
                      for step in checkpoints])
    reached = next((s for s, r in zip(checkpoints, curve.mean(axis=1)) if r >= 0.9 * best), None)

    command = "python benchmarks/godot_chase.py " + " ".join(sys.argv[1:])
    lines = [f"Command: `{command}` ({time.strftime('%Y-%m-%d')}; 2 game processes x 16 agents, "
             f"godot3-server {subprocess.run(['godot3-server', '--version'], capture_output=True, text=True).stdout.strip()})",
             "", f"Agent-steps per second (whole run, training included), median of {len(runs)} seeds: "
             f"{np.median([r['sps'] for r in runs]):,.0f}. Wall-clock: {np.median([r['minutes'] for r in runs]):.1f} min a seed.",
             f"Scripted near-optimal policy: {best:.2f} per episode. Random play: about -1.", "",
             "| agent-steps | mean of the last 200 episodes (mean over seeds) | min-max over seeds | share of near-optimal |",
             "|---|---|---|---|"]
    lines += [f"| {s:,} | {r.mean():.2f} | {r.min():.2f} to {r.max():.2f} | {r.mean() / best:.0%} |"
              for s, r in zip(checkpoints, curve)]
    lines += ["", f"90% of near-optimal first reached by {reached:,} steps." if reached else
              "90% of near-optimal not reached."]
    write_table(f"godot_chase_{args.kind}", lines)
    plot_returns(f"godot_chase_{args.kind}", {"ppo_godot.py": [r["curve"] for r in runs]},
                 f"Godot Chase game ({args.kind} actions): ppo_godot.py, 2 games x 16 agents", command, window=200,
                 lines=[(best, "scripted near-optimal"), (0.9 * best, "90% of it")])


if __name__ == "__main__":
    main()
