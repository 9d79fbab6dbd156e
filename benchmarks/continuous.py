"""ppo_continuous_action.py on N seeds: final return, evaluation of the saved model with and
without its observation statistics, and (with --sb3-timesteps) SPS against SB3's PPO side by side.

    python benchmarks/continuous.py --env-id Pendulum-v1 --seeds 5 --total-timesteps 500000
    python benchmarks/continuous.py --env-id HalfCheetah-v4 --seeds 3 --total-timesteps 1000000 \
        --sb3-timesteps 100000
    python benchmarks/continuous.py --env-id LunarLanderContinuous-v3 --seeds 2 --total-timesteps 1000000 \
        --eval-episodes 100 --num-envs 16 --num-steps 1024 ...   # flags it does not know go to the script

"final" is the mean training return of the last --final-episodes episodes (default 100);
"eval" the mean of --eval-episodes (default 20) with the saved model's mean action. SB3 runs with the same
hyperparameters (and VecNormalize for the same observation / reward scaling), right after
ppo_continuous_action.py for the same seed, for --sb3-timesteps steps: enough to measure its
SPS, not to train it. Writes the table to benchmarks/results/continuous_<env>.md and the
learning curves to benchmarks/figures/continuous_<env>.png.
"""
import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from common import REPO, episode_curve, plot_returns, read_run, without_curves, write_table

sys.path.insert(0, str(REPO))
# ppo_continuous_action.py's defaults, which SB3 is given too
HP = dict(num_steps=2048, num_minibatches=32, update_epochs=10, learning_rate=3e-4, gamma=0.99,
          gae_lambda=0.95, clip_coef=0.2, ent_coef=0.0, vf_coef=0.5, max_grad_norm=0.5)


def run_ppo(env_id, seed, total_timesteps, workdir, final_episodes, eval_episodes, script_flags=()):
    start = time.time()
    subprocess.run([sys.executable, str(REPO / "ppo_continuous_action.py"), "--env-id", env_id,
                    "--seed", str(seed), "--exp-name", "bench", "--total-timesteps", str(total_timesteps),
                    "--save-model", *script_flags], cwd=workdir, check=True, stdout=subprocess.DEVNULL)
    minutes = (time.time() - start) / 60
    run_dir = next((Path(workdir) / "runs").glob(f"*__bench__{seed}__*"))
    acc = read_run(run_dir)
    steps, returns = episode_curve(acc)
    import ppo_continuous_action  # here, not at the top: the SB3 worker process does not need it

    checkpoint = str(run_dir / "bench.pt")
    with contextlib.redirect_stdout(io.StringIO()):
        with_stats = ppo_continuous_action.evaluate(checkpoint, eval_episodes, seed=100 + seed)
        without_stats = ppo_continuous_action.evaluate(checkpoint, eval_episodes, seed=100 + seed,
                                                       use_obs_rms=False)
    return dict(sps=acc.Scalars("charts/SPS")[-1].value, minutes=minutes,
                final_return=float(np.mean(returns[-final_episodes:])), eval_return=float(np.mean(with_stats)),
                eval_without_stats=float(np.mean(without_stats)), curve=(steps, returns))


def run_sb3(env_id, seed, total_timesteps):
    out = subprocess.run([sys.executable, __file__, "--sb3-worker", "--env-id", env_id, "--seeds", str(seed),
                          "--sb3-timesteps", str(total_timesteps)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def sb3_worker(env_id, seed, total_timesteps):
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    env = VecNormalize(make_vec_env(env_id, n_envs=1, seed=seed), gamma=HP["gamma"], clip_obs=10, clip_reward=10)
    model = PPO("MlpPolicy", env, seed=seed, device="cpu", n_steps=HP["num_steps"],
                batch_size=HP["num_steps"] // HP["num_minibatches"], n_epochs=HP["update_epochs"],
                learning_rate=lambda left: left * HP["learning_rate"], gamma=HP["gamma"],
                gae_lambda=HP["gae_lambda"], clip_range=HP["clip_coef"], clip_range_vf=HP["clip_coef"],
                ent_coef=HP["ent_coef"], vf_coef=HP["vf_coef"], max_grad_norm=HP["max_grad_norm"],
                policy_kwargs=dict(net_arch=dict(pi=[64, 64], vf=[64, 64]), activation_fn=torch.nn.Tanh))
    start = time.time()
    model.learn(total_timesteps=total_timesteps)
    print(json.dumps(dict(sps=model.num_timesteps / (time.time() - start), threads=torch.get_num_threads())))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env-id", default="Pendulum-v1")
    p.add_argument("--seeds", type=int, default=5, help="seeds 1..N")
    p.add_argument("--total-timesteps", type=int, default=500000)
    p.add_argument("--final-episodes", type=int, default=100, help="training episodes averaged as 'final'")
    p.add_argument("--eval-episodes", type=int, default=20, help="evaluation episodes of the saved model")
    p.add_argument("--sb3-timesteps", type=int, default=0, help="SB3 steps per seed for its SPS (0: no SB3)")
    p.add_argument("--sb3-worker", action="store_true", help=argparse.SUPPRESS)
    args, script_flags = p.parse_known_args()
    if args.sb3_worker:
        return sb3_worker(args.env_id, args.seeds, args.sb3_timesteps)

    command = "python benchmarks/continuous.py " + " ".join(sys.argv[1:])
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for seed in range(1, args.seeds + 1):
            row = dict(seed=seed, ppo=run_ppo(args.env_id, seed, args.total_timesteps, workdir,
                                              args.final_episodes, args.eval_episodes, script_flags))
            if args.sb3_timesteps:
                row["sb3"] = run_sb3(args.env_id, seed, args.sb3_timesteps)
            rows.append(row)
            print(json.dumps(without_curves(row)), flush=True)

    sb3 = bool(args.sb3_timesteps)
    header = (f"| seed | final return (last {args.final_episodes}) | eval, {args.eval_episodes} episodes "
              "(saved obs stats) | eval (no obs stats) | minutes |")
    if sb3:
        header += " SPS | SB3 SPS | ratio |"
    lines = [f"Command: `{command}` ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores)", "", header,
             "|---" * header.count(" |") + "|"]
    for r in rows:
        a = r["ppo"]
        line = (f"| {r['seed']} | {a['final_return']:.1f} | {a['eval_return']:.1f} | "
                f"{a['eval_without_stats']:.1f} | {a['minutes']:.1f} |")
        if sb3:
            line += f" {a['sps']:,.0f} | {r['sb3']['sps']:,.0f} | {a['sps'] / r['sb3']['sps']:.2f} |"
        lines.append(line)
    finals = [r["ppo"]["final_return"] for r in rows]
    lines += ["", f"Final return: mean {np.mean(finals):.1f}, std {np.std(finals):.1f}, "
              f"worst {min(finals):.1f} over {len(rows)} seeds."]
    if sb3:
        ratios = [r["ppo"]["sps"] / r["sb3"]["sps"] for r in rows]
        lines[-1] += (f" SPS ratio to SB3 (SB3 with {rows[0]['sb3']['threads']} torch threads, "
                      f"ppo_continuous_action.py with 1): median {np.median(ratios):.2f}.")
    write_table(f"continuous_{args.env_id}", lines)
    plot_returns(f"continuous_{args.env_id}", {"ppo_continuous_action.py": [r["ppo"]["curve"] for r in rows]},
                 f"{args.env_id}: ppo_continuous_action.py" + (" with the flags below" if script_flags else
                                                                " at its defaults"), command, window=args.final_episodes)


if __name__ == "__main__":
    main()
