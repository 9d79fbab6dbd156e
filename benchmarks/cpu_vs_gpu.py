"""The default device: each script's default network on the CPU (--cuda false) and on the GPU
(--cuda true), run alternately, same seed and flags. Needs a machine where torch sees a CUDA GPU.

    python benchmarks/cpu_vs_gpu.py --pairs 2

Reports the median wall time and SPS of each side and the GPU / CPU speed ratio, per script and
env. Writes the table to benchmarks/results/cpu_vs_gpu.md (--out NAME: NAME.md).
"""
import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from common import REPO, read_run, write_table

RUNS = [  # script, env id, env steps (a few iterations of each script's default batch)
    ("ppo.py", "CartPole-v1", 61440),
    ("ppo_continuous_action.py", "Pendulum-v1", 20480),
    ("ppo_continuous_action.py", "HalfCheetah-v4", 10240),  # skipped where MuJoCo is missing
]


def run(script, env_id, steps, cuda, workdir):
    exp_name = f"{'gpu' if cuda else 'cpu'}{time.time_ns()}"
    start = time.time()
    subprocess.run([sys.executable, str(REPO / script), "--env-id", env_id, "--total-timesteps", str(steps),
                    "--cuda", str(cuda).lower(), "--exp-name", exp_name], cwd=workdir, check=True,
                   stdout=subprocess.DEVNULL)
    wall = time.time() - start
    run_dir = next((Path(workdir) / "runs").glob(f"*__{exp_name}__*"))
    return wall, read_run(run_dir).Scalars("charts/SPS")[-1].value


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=2, help="CPU/GPU pairs per script and env")
    p.add_argument("--out", default="cpu_vs_gpu", help="name of the table in benchmarks/results/")
    args = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("cpu_vs_gpu.py: error: torch sees no CUDA GPU on this machine")

    command = "python benchmarks/cpu_vs_gpu.py " + " ".join(sys.argv[1:])
    lines = [f"Command: `{command}` ({time.strftime('%Y-%m-%d')}; {torch.cuda.get_device_name()}, "
             f"{os.cpu_count()} CPU cores ({platform.processor() or platform.machine()}), "
             f"torch {torch.__version__}; CPU runs use 1 torch thread, the scripts' default)", "",
             "| script | env | steps | CPU wall s | GPU wall s | CPU SPS | GPU SPS | GPU speed / CPU speed |",
             "|---|---|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as workdir:
        for script, env_id, steps in RUNS:
            try:
                gym.make(env_id).close()
            except Exception as e:  # MuJoCo missing or broken on this machine
                print(f"skipping {env_id}: {e}")
                continue
            result = {False: [], True: []}
            for pair in range(args.pairs):
                for cuda in ((False, True) if pair % 2 == 0 else (True, False)):
                    result[cuda].append(run(script, env_id, steps, cuda, workdir))
                    print(script, env_id, "GPU" if cuda else "CPU", result[cuda][-1], flush=True)
            cpu_wall, cpu_sps = np.median(result[False], axis=0)
            gpu_wall, gpu_sps = np.median(result[True], axis=0)
            lines.append(f"| {script} | {env_id} | {steps:,} | {cpu_wall:.1f} | {gpu_wall:.1f} | "
                         f"{cpu_sps:,.0f} | {gpu_sps:,.0f} | {gpu_sps / cpu_sps:.2f} |")
    write_table(args.out, lines)


if __name__ == "__main__":
    main()
