"""ppo.py lands LunarLander-v3, beside Stable-Baselines3 at RL Baselines3 Zoo's LunarLander settings.

    python benchmarks/lunarlander.py --seeds 10 --sb3-seeds 4                # ~60 min on 2 cores
    python benchmarks/lunarlander.py --script skeleton --seeds 3 --jobs 1    # the finished skeleton, same flags

ppo.py runs with LANDING's flags (the README's command), seeds one after the other on one core;
with --sb3-seeds K, SB3's PPO at the Zoo's settings runs seeds 1..K on the other core at the same
time, so both see the same load (one torch thread each). Without it, --jobs seeds run at a time.
Reports each run's wall minutes from launch, SPS, the env steps and seconds from launch until the
mean of its last 100 training episodes first reaches 200 (LunarLander's "solved"), and the greedy
policy's mean return over 100 episodes after training (one loop for both: the most likely action,
one env, reset with the run's seed). Writes benchmarks/results/<out>.md and benchmarks/figures/<out>.png.
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from common import (REPO, draw_seeds, episode_curve, first_reach, fmt, read_run, sb3_episodes,
                    without_curves, write_table)

THRESHOLD = 200.0
FIGURES = REPO / "benchmarks" / "figures"
# the README's command; ppo.py's defaults for everything else (learning rate 2.5e-4 annealed, entropy 0.01)
LANDING = ["--env-id", "LunarLander-v3", "--total-timesteps", "1000000", "--num-envs", "16", "--num-steps", "1024",
           "--num-minibatches", "256", "--gamma", "0.999", "--gae-lambda", "0.98", "--norm-reward"]
# RL Baselines3 Zoo's hyperparams/ppo.yml for LunarLander; SB3's defaults otherwise (learning rate 3e-4, constant)
ZOO = dict(n_envs=16, n_timesteps=1_000_000, n_steps=1024, batch_size=64, n_epochs=4, gamma=0.999,
           gae_lambda=0.98, ent_coef=0.01)


def greedy_returns(act, seed, episodes):
    """Returns of `episodes` episodes of act(obs) -> action on one LunarLander-v3, seeded once."""
    env = gym.make("LunarLander-v3")
    obs, _ = env.reset(seed=seed)
    returns, total = [], 0.0
    while len(returns) < episodes:
        obs, reward, terminated, truncated, _ = env.step(act(obs))
        total += reward
        if terminated or truncated:
            returns.append(total)
            total = 0.0
            obs, _ = env.reset()
    env.close()
    return returns


def load_module(path):
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def script_result(script, seed, workdir, launched, elapsed, eval_episodes):
    """The run's curve, SPS and greedy return, read from its TensorBoard logs and its saved weights."""
    run_dir = next((Path(workdir) / "runs").glob(f"*__bench__{seed}__*"))
    acc = read_run(run_dir)
    steps, returns = episode_curve(acc)
    times = np.array([e.wall_time for e in acc.Scalars("charts/episodic_return")]) - launched
    reach_steps, reach_seconds = first_reach(steps, returns, times, THRESHOLD)
    module = load_module(script)
    agent = module.Agent(8, 4)
    saved = torch.load(run_dir / "bench.pt", map_location="cpu", weights_only=True)
    agent.load_state_dict(saved.get("model", saved))  # ppo.py's checkpoint holds more; the skeleton's is the weights

    def act(obs):
        with torch.inference_mode():
            return int(agent.policy(torch.as_tensor(obs, dtype=torch.float32)).argmax())

    if "charts/SPS" in acc.Tags()["scalars"]:
        sps = acc.Scalars("charts/SPS")[-1].value
    else:  # the skeleton logs no SPS: its steps over its whole run
        sps = acc.Scalars("losses/value_loss")[-1].step / elapsed
    return dict(minutes=elapsed / 60, sps=sps, reach_steps=reach_steps,
                reach_seconds=reach_seconds, greedy=float(np.mean(greedy_returns(act, seed, eval_episodes))),
                curve=(steps, returns), time_curve=(times, returns))


def sb3_worker(seed, out, total_timesteps, eval_episodes):
    """Runs in its own process: SB3 PPO at the Zoo's settings, one torch thread; writes its result to out."""
    torch.set_num_threads(1)
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    launched = float(os.environ["LAUNCHED"])
    settings = {k: v for k, v in ZOO.items() if k not in ("n_envs", "n_timesteps")}
    model = PPO("MlpPolicy", make_vec_env("LunarLander-v3", n_envs=ZOO["n_envs"], seed=seed), seed=seed,
                device="cpu", **settings)
    callback = sb3_episodes()
    start = time.time()
    model.learn(total_timesteps=total_timesteps, callback=callback)
    sps = model.num_timesteps / (time.time() - start)
    elapsed = time.time() - launched
    times = np.array(callback.times) - launched
    reach_steps, reach_seconds = first_reach(callback.steps, callback.returns, times, THRESHOLD)
    greedy = greedy_returns(lambda obs: int(model.predict(obs, deterministic=True)[0]), seed, eval_episodes)
    Path(out).write_text(json.dumps(dict(
        minutes=elapsed / 60, sps=sps, reach_steps=reach_steps,
        reach_seconds=reach_seconds, greedy=float(np.mean(greedy)), steps=callback.steps,
        returns=[float(r) for r in callback.returns], times=times.tolist())))


def run_ours(seed, script, workdir, args):
    launched = time.time()
    subprocess.run([sys.executable, script, *LANDING, "--total-timesteps", str(args.total_timesteps), "--seed",
                    str(seed), "--exp-name", "bench"], cwd=workdir, stdout=subprocess.DEVNULL, check=True)
    return script_result(script, seed, workdir, launched, time.time() - launched, args.eval_episodes)


def run_sb3(seed, workdir, args):
    out = Path(workdir) / f"sb3_{seed}.json"
    subprocess.run([sys.executable, __file__, "--sb3-worker", str(seed), str(out), str(args.sb3_timesteps),
                    str(args.eval_episodes)], check=True, env=dict(os.environ, LAUNCHED=str(time.time())))
    result = json.loads(out.read_text())
    result["curve"] = np.array(result.pop("steps")), np.array(result["returns"])
    result["time_curve"] = np.array(result.pop("times")), np.array(result.pop("returns"))
    return result


def figure(name, rows, sides, command):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for side, label in sides.items():
        done = [r[side] for r in rows if side in r]
        label = "SB3 PPO, Zoo settings" if side == "sb3" else label
        draw_seeds(axes[0], label, [r["curve"] for r in done], 100)
        draw_seeds(axes[1], label, [(t / 60, v) for t, v in (r["time_curve"] for r in done)], 100)
    minutes = "wall minutes from launch" + (" (one core each, side by side)" if "sb3" in sides else "")
    for ax, xlabel in zip(axes, ["env steps", minutes]):
        ax.axhline(THRESHOLD, color="gray", linestyle="--", linewidth=1, label="200 (solved)")
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    axes[0].ticklabel_format(axis="x", style="sci", scilimits=(3, 3))
    axes[0].set_ylabel("episodic return\n(mean of the last 100 training episodes)")
    fig.suptitle("LunarLander-v3 while training; line: mean over seeds, band: min-max over seeds", fontsize=9)
    fig.text(0.01, 0.01, command, fontsize=7, color="gray")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    out = FIGURES / f"{name}.png"
    fig.savefig(out, dpi=80)
    plt.close(fig)
    print(f"figure: {out}")


def table(rows, sides, command, eval_episodes):
    """The result as markdown lines: a row per seed, then a line per side and SB3's ratio."""
    header = "| seed |" + "".join(f" {label} {c} |" for label in sides.values()
                                  for c in ("minutes", "SPS", "steps to 200", "s to 200", "greedy return"))
    lines = [f"Command: `{command}` ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, one torch thread "
             f"each; {sides['ours']}: `{' '.join(LANDING)}`" + (f"; SB3: {ZOO}" if "sb3" in sides else "") + ")", "",
             header, "|---" * (1 + 5 * len(sides)) + "|"]

    def cells(result):
        if result is None:
            return " | | | | |"
        return (f" {result['minutes']:.1f} | {fmt(result['sps'])} | {fmt(result['reach_steps'])} |"
                f" {fmt(result['reach_seconds'])} | {result['greedy']:.1f} |")

    lines += [f"| {r['seed']} |" + "".join(cells(r.get(side)) for side in sides) for r in rows]
    lines.append("")
    for side, label in sides.items():
        done = [r[side] for r in rows if side in r]
        reached = [r for r in done if r["reach_seconds"] is not None]
        lines.append(
            f"{label}: greedy mean return >= 200 over {eval_episodes} episodes on "
            f"{sum(r['greedy'] >= THRESHOLD for r in done)}/{len(done)} seeds (lowest {min(r['greedy'] for r in done):.1f});"
            f" longest run {max(r['minutes'] for r in done):.1f} min; the training mean reached 200 on "
            f"{len(reached)}/{len(done)} seeds" + (
                f", median {np.median([r['reach_seconds'] for r in reached]) / 60:.1f} min from launch and "
                f"{np.median([r['reach_steps'] for r in reached]):,.0f} steps." if reached else "."))
    pairs = [r for r in rows if "sb3" in r and r["ours"]["reach_seconds"]]
    if pairs:  # where SB3 never reached 200, its whole run bounds its time to 200 from below
        ratios = [(r["sb3"]["reach_seconds"] or r["sb3"]["minutes"] * 60) / r["ours"]["reach_seconds"] for r in pairs]
        never = sum(r["sb3"]["reach_seconds"] is None for r in pairs)
        lines.append(f"Wall time to 200, SB3 / {sides['ours']}, seed by seed: median {np.median(ratios):.1f}, lowest "
                     f"{min(ratios):.1f}" + (f" ({never} of {len(pairs)} SB3 runs never reached 200: their whole "
                                            f"run counts, so the ratio is at least that)" if never else "") + ".")
    return lines


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=10, help="seeds 1..N")
    p.add_argument("--first-seed", type=int, default=1, help="start at this seed (seeds first..first+N-1)")
    p.add_argument("--script", choices=["ppo", "skeleton"], default="ppo",
                   help="ppo.py, or the reference completion of ppo_scratch_skeleton.py")
    p.add_argument("--sb3-seeds", type=int, default=0,
                   help="also train SB3 at the Zoo's settings on the first K seeds, on the other core")
    p.add_argument("--jobs", type=int, default=2, help="without --sb3-seeds: seeds trained at a time")
    p.add_argument("--out", default=None, help="name of the table and figure (default: lunarlander_<script>)")
    p.add_argument("--total-timesteps", type=int, default=int(LANDING[LANDING.index("--total-timesteps") + 1]),
                   help="ours: its budget (default: the README's)")
    p.add_argument("--sb3-timesteps", type=int, default=ZOO["n_timesteps"], help="SB3's budget (default: the Zoo's)")
    p.add_argument("--eval-episodes", type=int, default=100, help="greedy episodes after training")
    p.add_argument("--sb3-worker", nargs=4, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.sb3_worker:
        seed, out, total_timesteps, eval_episodes = args.sb3_worker
        return sb3_worker(int(seed), out, int(total_timesteps), int(eval_episodes))

    command = "python benchmarks/lunarlander.py " + " ".join(sys.argv[1:])
    name = args.out or f"lunarlander_{args.script}"
    label = {"ppo": "ppo.py", "skeleton": "finished skeleton"}[args.script]
    with tempfile.TemporaryDirectory() as workdir:
        script = str(REPO / "ppo.py")
        if args.script == "skeleton":
            sys.path.insert(0, str(REPO / "tests"))
            from scratch_reference import complete
            script = str(Path(workdir) / "ppo_scratch_reference.py")
            Path(script).write_text(complete())
        seeds = range(args.first_seed, args.first_seed + args.seeds)

        def lane(runs):  # one core's queue of runs, one after the other
            results = []
            for kind, seed in runs:
                results.append((kind, seed, run_sb3(seed, workdir, args) if kind == "sb3" else run_ours(seed, script, workdir, args)))
                print(json.dumps(dict(kind=kind, seed=seed, **without_curves({"r": results[-1][2]})["r"])), flush=True)
            return results

        if args.sb3_seeds:  # one core trains ours, the other SB3, each seed after the other
            lanes = [[("ours", s) for s in seeds], [("sb3", s) for s in seeds[:args.sb3_seeds]]]
        else:  # --jobs seeds at a time
            lanes = [[("ours", s) for s in seeds[i::args.jobs]] for i in range(args.jobs)]
        with ThreadPoolExecutor(max_workers=len(lanes)) as pool:
            results = [r for rs in pool.map(lane, lanes) for r in rs]
    by_seed = {}
    for kind, seed, result in results:
        by_seed.setdefault(seed, dict(seed=seed))[kind] = result
    rows = [by_seed[s] for s in sorted(by_seed)]

    sides = {"ours": label} | ({"sb3": "SB3"} if args.sb3_seeds else {})
    write_table(name, table(rows, sides, command, args.eval_episodes))
    figure(name, rows, sides, command)


if __name__ == "__main__":
    main()
