"""Start-up of ppo_godot.py and of godot-rl's Stable-Baselines3 path on fast Chase (issue 61: the time to 90% on
fast Chase is mostly start-up). Each of 3 fresh interpreters a trainer times its imports, then its 2 games
launched and connected (the first reset's reply).

    python benchmarks/trainer_startup.py
"""
import subprocess
import sys

from common import REPO

GAME = REPO / "godot" / "chase" / "chase_discrete.x86_64"
CODE = {
    "ppo_godot.py": f"""
import sys, time; t0 = time.perf_counter(); sys.path.insert(0, {str(REPO)!r})
import ppo_godot
t1 = time.perf_counter()
envs = ppo_godot.GodotVecEnv(ppo_godot.parse_args(["--env-path", {str(GAME)!r}, "--n-parallel", "2"]))
envs.reset(seed=1)
print("seconds", t1 - t0, time.perf_counter() - t1, flush=True); envs.close()
""",
    "SB3 (godot-rl)": f"""
import sys, time; t0 = time.perf_counter(); sys.path.insert(0, {str(REPO / "benchmarks")!r})
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import VecMonitor
from godot_rl_fixes import stable_baselines_games
t1 = time.perf_counter()
env = VecMonitor(stable_baselines_games({str(GAME)!r}, 2, 1, None, framerate=60)); env.reset()
print("seconds", t1 - t0, time.perf_counter() - t1, flush=True); env.close()
""",
}

if __name__ == "__main__":
    print("| trainer | importing (s) | 2 games launched and connected (s) |\n|---|---|---|")
    for name, code in CODE.items():
        outputs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                  cwd=REPO).stdout for _ in range(3)]
        times = [next(line.split()[1:] for line in out.splitlines() if line.startswith("seconds ")) for out in outputs]
        print(f"| {name} | {', '.join(f'{float(t[0]):.2f}' for t in times)} "
              f"| {', '.join(f'{float(t[1]):.2f}' for t in times)} |")
