"""ppo_lstm.py on CartPoleNoVel-v1 (CartPole without its velocities), against PPO without memory
and against SB3-contrib's RecurrentPPO with the RL Zoo's hyperparameters.

    python benchmarks/lstm_cartpole_novel.py --seeds 10 --sb3-seeds 3   # ~70 min on 2 cores
    python benchmarks/lstm_cartpole_novel.py --seeds 10 --sb3-seeds 0 --saved-sb3   # ~30 min
    python benchmarks/lstm_cartpole_novel.py --seeds 0 --sb3-seeds 4-5  # RecurrentPPO alone, kept

--seeds and --sb3-seeds take N (seeds 1..N) or A-B. RecurrentPPO's rows are kept, one per seed, in
benchmarks/results/lstm_cartpole_novel_recurrent_ppo.json: at 10-19 minutes a seed they are not
rerun when only the three scripts change; --saved-sb3 puts the kept rows in the table, dated.

For each seed, one process at a time: ppo_lstm.py at its defaults; ppo.py at its defaults on the
same env (no memory); ppo.py on CartPoleNoVelStack4-v1 (the last 4 observations stacked, the classic
way without memory); then RecurrentPPO (8 envs x 32 steps, batch 256, 20 epochs, gamma 0.98,
lambda 0.8, lr 1e-3 and clip range 0.2 annealed, no entropy bonus, observation normalisation,
separate 64-unit LSTMs for actor and critic: the RL Zoo's CartPoleNoVel-v1 entry), which stops once
solved. Reports the env steps and the seconds from the start of training until the mean of the last
100 episodic returns first reaches 475, and the mean of the last 100 returns at the end. Writes
benchmarks/results/lstm_cartpole_novel.md and benchmarks/figures/lstm_cartpole_novel.png.
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

from cartpole_vs_sb3 import THRESHOLD, fmt, solve_point
from common import REPO, episode_curve, plot_returns, read_run, sb3_episodes, without_curves, write_table

RUNS = {  # label: (script, flags); each at its defaults otherwise
    "ppo_lstm.py": ("ppo_lstm.py", ["--env-id", "CartPoleNoVel-v1"]),
    "ppo.py (no memory)": ("ppo.py", ["--env-id", "ppo_lstm:CartPoleNoVel-v1"]),
    "ppo.py, 4 stacked obs": ("ppo.py", ["--env-id", "experiments.frame_stack:CartPoleNoVelStack4-v1"]),
}


def run_script(label, seed, total_timesteps, workdir):
    script, flags = RUNS[label]
    exp_name = f"bench{list(RUNS).index(label)}"
    subprocess.run([sys.executable, str(REPO / script), *flags, "--seed", str(seed), "--exp-name", exp_name,
                    "--total-timesteps", str(total_timesteps), "--log-dir", workdir], cwd=workdir, check=True,
                   stdout=subprocess.DEVNULL)
    run_dir = next(Path(workdir).glob(f"*__{exp_name}__{seed}__*"))
    acc = read_run(run_dir)
    start = acc.Tensors("hyperparameters/text_summary")[0].wall_time  # written as training starts
    steps, returns = episode_curve(acc)
    times = [e.wall_time for e in acc.Scalars("charts/episodic_return")]
    solved_steps, solved_seconds = solve_point(steps, returns, times, start)
    return dict(sps=acc.Scalars("charts/SPS")[-1].value, solved_steps=solved_steps, solved_seconds=solved_seconds,
                final_return=float(np.mean(returns[-100:])), curve=(steps, returns))


def run_sb3(seed, total_timesteps):
    out = subprocess.run([sys.executable, __file__, "--sb3-worker", "--seeds", str(seed),
                          "--total-timesteps", str(total_timesteps)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def sb3_worker(seed, total_timesteps):
    """In its own process: RecurrentPPO with the RL Zoo's CartPoleNoVel-v1 hyperparameters, until solved."""
    import torch
    from sb3_contrib import RecurrentPPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    sys.path.insert(0, str(REPO))
    import ppo_lstm  # noqa: F401 (registers CartPoleNoVel-v1, the env ppo_lstm.py trains on)

    env = VecNormalize(make_vec_env("CartPoleNoVel-v1", n_envs=8, seed=seed), norm_reward=False)
    model = RecurrentPPO("MlpLstmPolicy", env, seed=seed, device="cpu", n_steps=32, batch_size=256, n_epochs=20,
                         gamma=0.98, gae_lambda=0.8, ent_coef=0.0, learning_rate=lambda left: left * 1e-3,
                         clip_range=lambda left: left * 0.2,
                         policy_kwargs=dict(ortho_init=False, activation_fn=torch.nn.ReLU, lstm_hidden_size=64,
                                            enable_critic_lstm=True, net_arch=dict(pi=[64], vf=[64])))
    callback = sb3_episodes(until=lambda returns: len(returns) >= 100 and np.mean(returns[-100:]) >= THRESHOLD)
    start = time.time()
    model.learn(total_timesteps=total_timesteps, callback=callback)
    elapsed = time.time() - start
    solved_steps, solved_seconds = solve_point(callback.steps, callback.returns, callback.times, start)
    print(json.dumps(dict(sps=model.num_timesteps / elapsed, solved_steps=solved_steps, solved_seconds=solved_seconds,
                          threads=torch.get_num_threads(), final_return=float(np.mean(callback.returns[-100:])))))


def median(rows, label, key):
    values = [r[label][key] for r in rows if r[label].get(key) is not None]
    return np.median(values) if values else None


SAVED_SB3 = REPO / "benchmarks" / "results" / "lstm_cartpole_novel_recurrent_ppo.json"


def seed_list(text):
    """'N': seeds 1..N ('0': none); 'A-B': seeds A..B."""
    first, _, last = text.partition("-")
    return list(range(int(first), int(last) + 1)) if last else list(range(1, int(first) + 1))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="10", help="the three scripts' seeds: N (1..N) or A-B")
    p.add_argument("--total-timesteps", type=int, default=200_000, help="steps of each run of the three scripts")
    p.add_argument("--sb3-timesteps", type=int, default=300_000, help="RecurrentPPO's budget (it stops once solved)")
    p.add_argument("--sb3-seeds", default=None, help="RecurrentPPO's seeds, N or A-B (default: --seeds; 0: none)")
    p.add_argument("--saved-sb3", action="store_true", help="RecurrentPPO's kept rows for the seeds it does not run")
    p.add_argument("--out", default="lstm_cartpole_novel", help="name of the table and figure")
    p.add_argument("--sb3-worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.sb3_worker:
        return sb3_worker(int(args.seeds), args.total_timesteps)

    command = "python benchmarks/lstm_cartpole_novel.py " + " ".join(sys.argv[1:])
    script_seeds = seed_list(args.seeds)
    sb3_seeds = script_seeds if args.sb3_seeds is None else seed_list(args.sb3_seeds)
    saved = json.loads(SAVED_SB3.read_text()) if SAVED_SB3.exists() else {}
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for seed in sorted(set(script_seeds) | set(sb3_seeds)):
            row = {"seed": seed}
            if seed in script_seeds:
                for label in RUNS:
                    row[label] = run_script(label, seed, args.total_timesteps, workdir)
            if seed in sb3_seeds:
                row["RecurrentPPO"] = run_sb3(seed, args.sb3_timesteps)
                saved[str(seed)] = dict(row["RecurrentPPO"], date=time.strftime("%Y-%m-%d"), command=command)
                SAVED_SB3.write_text(json.dumps(saved, indent=1) + "\n")
            elif args.saved_sb3 and str(seed) in saved:
                row["RecurrentPPO"] = saved[str(seed)]
            if seed in script_seeds:
                rows.append(row)
            print(json.dumps(without_curves(row)), flush=True)
    if not rows:
        return print(f"RecurrentPPO's rows kept in {SAVED_SB3.relative_to(REPO)}")

    ran_sb3 = [r for r in rows if "RecurrentPPO" in r]
    kept = {}  # (command, date) of kept RecurrentPPO rows: [seeds]
    for r in ran_sb3:
        if r["seed"] not in sb3_seeds:
            kept.setdefault((r["RecurrentPPO"]["command"], r["RecurrentPPO"]["date"]), []).append(str(r["seed"]))
    labels = list(RUNS) + (["RecurrentPPO"] if ran_sb3 else [])
    lines = [f"Command: `{command}` ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, one process at a time; "
             f"the scripts with 1 torch thread"
             + (f", RecurrentPPO with {ran_sb3[0]['RecurrentPPO']['threads']}" if ran_sb3 else "")
             + "".join(f"; RecurrentPPO's rows of seeds {', '.join(seeds)} kept from `{c}` ({d})"
                       for (c, d), seeds in kept.items()) + ")", "",
             "| seed | " + " | ".join(f"{label} steps to 475 | {label} s to 475" for label in labels) + " |",
             "|---" * (1 + 2 * len(labels)) + "|"]
    for r in rows:
        lines.append(f"| {r['seed']} | " + " | ".join(
            f"{fmt(r[label]['solved_steps'])} | {fmt(r[label]['solved_seconds'])}" if label in r
            else "not run | not run" for label in labels) + " |")
    lines.append("")
    for label in labels:
        ran = [r for r in rows if label in r]
        solved = sum(r[label]["solved_steps"] is not None for r in ran)
        steps, seconds = median(ran, label, "solved_steps"), median(ran, label, "solved_seconds")
        lines.append(f"- {label}: solved (100-episode mean >= 475) on {solved}/{len(ran)} seeds; "
                     + (f"median {fmt(steps)} steps and {fmt(seconds)} s to solve (over the seeds that solved); "
                        if solved else "") + f"SPS {fmt(median(ran, label, 'sps'))}; final 100-episode mean "
                     f"{np.mean([r[label]['final_return'] for r in ran]):.1f} (mean over seeds"
                     + (", RecurrentPPO's where it stopped: once solved)." if label == "RecurrentPPO" else ")."))
    if ran_sb3:
        pairs = [(r["ppo_lstm.py"], r["RecurrentPPO"]) for r in ran_sb3]
        both = [(a, b) for a, b in pairs if a["solved_seconds"] is not None and b["solved_seconds"] is not None]
        if both:
            time_ratios = [b["solved_seconds"] / a["solved_seconds"] for a, b in both]
            step_ratios = [b["solved_steps"] / a["solved_steps"] for a, b in both]
            lines.append(f"- ppo_lstm.py against RecurrentPPO, per seed where both solved ({len(both)}): "
                         f"{np.median(time_ratios):.1f}x less wall time to solve (median; min "
                         f"{min(time_ratios):.1f}x), {np.median(step_ratios):.2f}x fewer steps (median; min "
                         f"{min(step_ratios):.2f}x).")
    write_table(args.out, lines)
    plot_returns(args.out, {label: [r[label]["curve"] for r in rows] for label in RUNS},
                 "CartPoleNoVel-v1 (no velocities): memory, no memory, 4 stacked observations", command,
                 lines=[(THRESHOLD, "475 (solved)")])


if __name__ == "__main__":
    main()
