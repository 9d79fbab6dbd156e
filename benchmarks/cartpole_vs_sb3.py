"""ppo.py against Stable-Baselines3's PPO on CartPole-v1, same hyperparameters, side by side.

    python benchmarks/cartpole_vs_sb3.py --seeds 10            # ~30 min on 2 cores
    python benchmarks/cartpole_vs_sb3.py --seeds 10 --cleanrl /path/to/cleanrl/cleanrl/ppo.py

For each seed it runs ppo.py, then SB3 (then CleanRL's ppo.py, if given: SPS only, since under
gymnasium 1.0 it logs no episodes), one at a time, so the SPS ratio is measured under the same
machine load. Reports SPS, the env steps and wall-clock seconds until the mean of the last 100
episodic returns first reaches 475, and the mean of the last 100 returns at the end.
Writes the table to benchmarks/results/cartpole_vs_sb3.md and the learning curves to
benchmarks/figures/cartpole_vs_sb3.png (--out NAME: NAME.md, NAME.png).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from common import (REPO, episode_curve, first_reach, fmt, plot_returns, read_run, sb3_episodes,
                    without_curves, write_table)

THRESHOLD = 475.0
# CleanRL's / ppo.py's defaults, which SB3 is given too
HP = dict(num_envs=4, num_steps=128, num_minibatches=4, update_epochs=4, learning_rate=2.5e-4,
          gamma=0.99, gae_lambda=0.95, clip_coef=0.2, ent_coef=0.01, vf_coef=0.5, max_grad_norm=0.5)


def solve_point(steps, returns, times, start):
    """(steps, seconds from start) at which the mean of the last 100 episodic returns first reaches 475."""
    return first_reach(steps, returns, np.asarray(times) - start, THRESHOLD)


def run_ppo(seed, total_timesteps, workdir):
    subprocess.run([sys.executable, str(REPO / "ppo.py"), "--seed", str(seed), "--exp-name", "bench",
                    "--total-timesteps", str(total_timesteps)], cwd=workdir, check=True,
                   stdout=subprocess.DEVNULL)
    run_dir = next((Path(workdir) / "runs").glob(f"*__bench__{seed}__*"))
    acc = read_run(run_dir)
    start = acc.Tensors("hyperparameters/text_summary")[0].wall_time  # written as training starts
    steps, returns = episode_curve(acc)
    times = [e.wall_time for e in acc.Scalars("charts/episodic_return")]
    solved_steps, solved_seconds = solve_point(steps, returns, times, start)
    return dict(sps=acc.Scalars("charts/SPS")[-1].value, solved_steps=solved_steps,
                solved_seconds=solved_seconds, final_return=float(np.mean(returns[-100:])), started=start,
                curve=(steps, returns))


def run_cleanrl(path, seed, total_timesteps, workdir):
    subprocess.run([sys.executable, path, "--seed", str(seed), "--exp-name", "cleanrl",
                    "--total-timesteps", str(total_timesteps)], cwd=workdir, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run_dir = next((Path(workdir) / "runs").glob(f"*__cleanrl__{seed}__*"))
    acc = read_run(run_dir)
    return dict(sps=acc.Scalars("charts/SPS")[-1].value)


def run_sb3(seed, total_timesteps):
    out = subprocess.run([sys.executable, __file__, "--sb3-worker", "--seeds", str(seed),
                          "--total-timesteps", str(total_timesteps)], check=True,
                         capture_output=True, text=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["curve"] = np.array(result.pop("steps")), np.array(result.pop("returns"))
    return result


def sb3_worker(seed, total_timesteps):
    """Runs in its own process: SB3 PPO with ppo.py's hyperparameters, SB3's own defaults otherwise."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    env = make_vec_env("CartPole-v1", n_envs=HP["num_envs"], seed=seed)
    model = PPO("MlpPolicy", env, seed=seed, device="cpu", n_steps=HP["num_steps"],
                batch_size=HP["num_envs"] * HP["num_steps"] // HP["num_minibatches"],
                n_epochs=HP["update_epochs"], learning_rate=lambda left: left * HP["learning_rate"],
                gamma=HP["gamma"], gae_lambda=HP["gae_lambda"], clip_range=HP["clip_coef"],
                clip_range_vf=HP["clip_coef"], ent_coef=HP["ent_coef"], vf_coef=HP["vf_coef"],
                max_grad_norm=HP["max_grad_norm"],
                policy_kwargs=dict(net_arch=dict(pi=[64, 64], vf=[64, 64]), activation_fn=torch.nn.Tanh))
    callback = sb3_episodes()
    start = time.time()
    model.learn(total_timesteps=total_timesteps, callback=callback)
    elapsed = time.time() - start
    solved_steps, solved_seconds = solve_point(callback.steps, callback.returns, callback.times, start)
    print(json.dumps(dict(sps=model.num_timesteps / elapsed, solved_steps=solved_steps,
                          solved_seconds=solved_seconds, threads=torch.get_num_threads(),
                          final_return=float(np.mean(callback.returns[-100:])),
                          steps=callback.steps, returns=[float(r) for r in callback.returns])))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=10, help="seeds 1..N")
    p.add_argument("--total-timesteps", type=int, default=500000)
    p.add_argument("--cleanrl", default=None, help="path to CleanRL's ppo.py, for an SPS column")
    p.add_argument("--out", default="cartpole_vs_sb3", help="name of the table in benchmarks/results/")
    p.add_argument("--sb3-worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.sb3_worker:
        return sb3_worker(args.seeds, args.total_timesteps)

    command = "python benchmarks/cartpole_vs_sb3.py " + " ".join(sys.argv[1:])
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for seed in range(1, args.seeds + 1):
            row = dict(seed=seed, ppo=run_ppo(seed, args.total_timesteps, workdir),
                       sb3=run_sb3(seed, args.total_timesteps))
            if args.cleanrl:
                row["cleanrl"] = run_cleanrl(args.cleanrl, seed, args.total_timesteps, workdir)
            rows.append(row)
            print(json.dumps(without_curves(row)), flush=True)

    cleanrl = " CleanRL SPS |" if args.cleanrl else ""
    lines = [f"Command: `{command}` ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, "
             f"SB3 with {rows[0]['sb3']['threads']} torch threads, ppo.py with 1)", "",
             "| seed | ppo.py SPS | SB3 SPS | SPS ratio |" + cleanrl +
             " ppo.py steps to 475 | SB3 steps to 475 | ppo.py s to 475 | SB3 s to 475 "
             "| ppo.py final | SB3 final |",
             "|---" * (10 + bool(args.cleanrl)) + "|"]
    for r in rows:
        a, b = r["ppo"], r["sb3"]
        lines.append(f"| {r['seed']} | {fmt(a['sps'])} | {fmt(b['sps'])} | {a['sps'] / b['sps']:.2f} |"
                     + (f" {fmt(r['cleanrl']['sps'])} |" if args.cleanrl else "")
                     + f" {fmt(a['solved_steps'])} | {fmt(b['solved_steps'])} |"
                     f" {fmt(a['solved_seconds'])} | {fmt(b['solved_seconds'])} |"
                     f" {a['final_return']:.1f} | {b['final_return']:.1f} |")

    def summary(key, side):
        values = [r[side][key] for r in rows if r[side].get(key) is not None]
        return f"{np.median(values):,.0f}" if values else "n/a"

    solved = {side: sum(r[side]["solved_steps"] is not None for r in rows) for side in ("ppo", "sb3")}
    ratios = [r["ppo"]["sps"] / r["sb3"]["sps"] for r in rows]
    lines += ["", f"ppo.py reached a 100-episode mean >= 475 on {solved['ppo']}/{len(rows)} seeds, "
              f"SB3 on {solved['sb3']}/{len(rows)}. Medians: SPS {summary('sps', 'ppo')} vs "
              f"{summary('sps', 'sb3')} (ratio {np.median(ratios):.2f}, min {min(ratios):.2f}); steps "
              f"to 475 {summary('solved_steps', 'ppo')} vs {summary('solved_steps', 'sb3')}; seconds "
              f"to 475 {summary('solved_seconds', 'ppo')} vs {summary('solved_seconds', 'sb3')}."]
    if args.cleanrl:
        cl = [r["ppo"]["sps"] / r["cleanrl"]["sps"] for r in rows]
        lines[-1] += f" ppo.py / CleanRL SPS ratio: median {np.median(cl):.2f}, min {min(cl):.2f}."
    write_table(args.out, lines)
    plot_returns(args.out, {"ppo.py": [r["ppo"]["curve"] for r in rows], "SB3 PPO": [r["sb3"]["curve"] for r in rows]},
                 "CartPole-v1: ppo.py and Stable-Baselines3, same hyperparameters", command,
                 lines=[(THRESHOLD, "475 (solved)")])


if __name__ == "__main__":
    main()
