"""The course's last stretch goal: is training faster with 8 headless games than with 4 windowed ones?

    xvfb-run -a -s "-screen 0 640x480x24" python benchmarks/godot_headless_windowed.py --seeds 3 --total-timesteps 131072

Trains ppo_godot.py on the discrete Chase game (16 agents a game) with --n-parallel 1, 2, 4 and 8,
each twice: headless (Debian's godot3-server, which draws nothing) and windowed (godot3-runner with
--show-window, drawing every frame into the X display that xvfb-run gives: Mesa's software renderer,
on the same CPU cores as the games and the trainer). Every run has the same agent-steps and flags
otherwise, so more games mean a larger batch (16 x games x --num-steps 64) and fewer updates.
Reports agent-steps per second and the return reached per wall-clock second, and a camera game
(which a headless engine cannot draw; ppo_godot_camera.py) windowed at 1, 2, 4 and 8 games, one seed,
speed only.
Writes benchmarks/results/godot_headless_windowed.md and benchmarks/figures/godot_headless_windowed.png.

Prediction, written before the first run: on this 2-core machine, the games and the trainer share two
cores, so more processes add no compute: agent-steps/s rises from 1 to 2 games (one game leaves a core
idle while the trainer learns) and is flat or falls after that; windowed games are 2-4x slower than
headless at every count (software rendering costs more CPU than the game's physics); so 8 headless
games beat 4 windowed on agent-steps/s, but 8 games' 8,192-row batch gives 8x fewer updates for the
same steps, so 1-2 headless games reach a given return soonest in wall-clock time.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from common import REPO, read_run, running_mean, save_figure, write_table

GAMES = [1, 2, 4, 8]
CHASE = REPO / "godot" / "chase"
# The windowed engine on the same project: the launchers run godot3-server, which draws nothing
WINDOWED = """#!/bin/sh
LANG=en_US.UTF-8 exec godot3-runner --path "{project}" "$@" --action_type=discrete {extra}
"""


def launcher(folder, name, extra=""):
    path = Path(folder) / f"{name}.x86_64"
    path.write_text(WINDOWED.format(project=CHASE, extra=extra))
    path.chmod(0o755)
    return path


def train(env_path, games, seed, total_timesteps, port, windowed, script="ppo_godot.py"):
    """One run: its agent-steps/s, the last 100 episodes' mean return, its wall seconds, and its curve
    of (wall seconds since the command started, running mean of 100 episodes)."""
    with tempfile.TemporaryDirectory() as workdir:
        started = time.time()
        subprocess.run([sys.executable, str(REPO / script), "--env-path", str(env_path), "--godot-version",
                        "3", "--n-parallel", str(games), "--seed", str(seed), "--port", str(port),
                        "--total-timesteps", str(total_timesteps), *(["--show-window"] if windowed else [])],
                       cwd=workdir, check=True, stdout=subprocess.DEVNULL)
        seconds = time.time() - started
        acc = read_run(next(Path(workdir).glob("runs/*")))
    episodes = acc.Scalars("charts/episodic_return") if "charts/episodic_return" in acc.Tags()["scalars"] else []
    return dict(sps=acc.Scalars("charts/SPS")[-1].value, seconds=seconds, **returns_of(episodes, started))


def returns_of(episodes, started):
    """The run's return at its end, final (the mean of its last 100 episodes; nan without any), and its
    curve: (wall seconds since started, the running mean of 100 episodes) at each episode."""
    returns = np.array([e.value for e in episodes])
    return dict(final=float(returns[-100:].mean()) if len(returns) else float("nan"),
                curve=(np.array([e.wall_time - started for e in episodes]),
                       running_mean(returns, 100) if len(returns) else returns))


def spread(values, digits=0):
    values = np.asarray(values, dtype=float)
    return f"{values.mean():,.{digits}f} ({values.min():,.{digits}f}-{values.max():,.{digits}f})"


def seconds_to(curve_runs, target):
    """Each seed's wall seconds until its running mean of 100 episodes first reaches target (None: never)."""
    return [next((t for t, r in zip(times, means) if r >= target), None) for times, means in curve_runs]


def plot(results, camera, command, target):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (speed, learning) = plt.subplots(1, 2, figsize=(11, 4.2))
    for mode, style in (("headless", "-"), ("windowed", "--")):
        sps = np.array([[r["sps"] for r in results[mode, n]] for n in GAMES])
        line, = speed.plot(GAMES, sps.mean(axis=1), style, marker="o", label=f"{mode} ({sps.shape[1]} seeds)")
        speed.fill_between(GAMES, sps.min(axis=1), sps.max(axis=1), color=line.get_color(), alpha=0.2)
    if camera:
        speed.plot(GAMES, [camera[n] for n in GAMES], ":", marker="s", color="gray", label="camera, windowed (1 seed)")
    speed.set_xscale("log", base=2)
    speed.set_xticks(GAMES, [str(n) for n in GAMES])
    speed.set_xlabel("games (--n-parallel), 16 agents each")
    speed.set_ylabel("agent-steps per second")
    speed.set_ylim(bottom=0)
    speed.legend(fontsize=8)
    speed.grid(alpha=0.3)
    speed.set_title("agent-steps per second\nline: mean over seeds, band: min-max", fontsize=9)

    colors = dict(zip(GAMES, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    for (mode, n), runs in results.items():
        grid = np.linspace(0, min(r["curve"][0].max() for r in runs), 200)
        means = np.stack([np.interp(grid, *r["curve"], left=np.nan) for r in runs])  # nan before a seed's first episode
        learning.plot(grid, np.nanmean(means, axis=0), "-" if mode == "headless" else "--", color=colors[n],
                      label=f"{n} {mode}")
    learning.axhline(target, color="gray", linewidth=1, linestyle=":", label=f"return {target}")
    learning.set_xlabel("wall-clock seconds (the games' start-up included)")
    learning.set_ylabel("episodic return\n(mean of the last 100 episodes)")
    learning.legend(fontsize=7, ncol=2)
    learning.grid(alpha=0.3)
    learning.set_title("return against wall-clock time, mean over seeds\n(solid: headless, dashed: windowed)", fontsize=9)
    save_figure(fig, REPO / "benchmarks" / "figures" / "godot_headless_windowed.png", command)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=3, help="seeds 1..N")
    p.add_argument("--total-timesteps", type=int, default=131072)
    p.add_argument("--camera-timesteps", type=int, default=16384, help="the camera game's runs (0: none)")
    p.add_argument("--target", type=float, default=8.0, help="the return whose wall-clock time is tabled")
    p.add_argument("--port", type=int, default=15008)
    args = p.parse_args()
    if not os.environ.get("DISPLAY") or not shutil.which("godot3-runner"):
        sys.exit("godot_headless_windowed.py: the windowed games need a display and godot3-runner: run it under "
                 "xvfb-run -a (apt-get install godot3-server godot3-runner xvfb)")

    results, camera = {}, {}
    with tempfile.TemporaryDirectory() as folder:
        env_paths = {"headless": CHASE / "chase_discrete.x86_64", "windowed": launcher(folder, "chase_windowed")}
        for seed in range(1, args.seeds + 1):  # seeds outermost: a slow spell of the shared machine hits every cell
            for n in GAMES:
                for mode in ("headless", "windowed"):
                    row = train(env_paths[mode], n, seed, args.total_timesteps, args.port, mode == "windowed")
                    results.setdefault((mode, n), []).append(row)
                    print(f"{mode} {n} games seed {seed}: {row['sps']:,.0f} agent-steps/s, {row['seconds']:.0f} s, "
                          f"return {row['final']:.2f}", flush=True)
        if args.camera_timesteps:
            camera_path = launcher(folder, "chase_camera", "--observation=camera")
            for n in GAMES:
                camera[n] = train(camera_path, n, 1, args.camera_timesteps, args.port, True, "ppo_godot_camera.py")["sps"]
                print(f"camera windowed {n} games: {camera[n]:,.0f} agent-steps/s", flush=True)

    command = (f'xvfb-run -a -s "-screen 0 640x480x24" python benchmarks/godot_headless_windowed.py --seeds {args.seeds} '
               f"--total-timesteps {args.total_timesteps} --camera-timesteps {args.camera_timesteps} --target {args.target}")
    lines = [f"Command: `{command}` ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores; chase_discrete, 16 agents a "
             "game, ppo_godot.py's defaults otherwise)", "",
             f"| games | engine | batch | agent-steps/s | wall seconds | return at the end | seconds to return "
             f"{args.target} |", "|---|---|---|---|---|---|---|"]
    for n in GAMES:
        for mode in ("headless", "windowed"):
            runs = results[mode, n]
            reach = seconds_to([r["curve"] for r in runs], args.target)
            reached = [t for t in reach if t is not None]
            cell = (spread(reached) if len(reached) == len(reach) else
                    f"{len(reached)} of {len(reach)} seeds" + (f": {spread(reached)}" if reached else ""))
            lines.append(f"| {n} | {mode} | {16 * n * 64:,} | {spread([r['sps'] for r in runs])} | "
                         f"{spread([r['seconds'] for r in runs])} | {spread([r['final'] for r in runs], 2)} | {cell} |")
    lines += ["", f"Each cell: mean over {args.seeds} seeds (min-max). Wall seconds include starting the games."]
    if camera:
        lines += ["", f"The camera game (36 x 36 RGB, a CNN), windowed, seed 1, {args.camera_timesteps:,} agent-steps: " +
                  ", ".join(f"{n} games {camera[n]:,.0f} agent-steps/s" for n in GAMES) +
                  ". Headless it cannot run: godot3-server's viewport returns no image."]
    write_table("godot_headless_windowed", lines)
    plot(results, camera, command, args.target)


if __name__ == "__main__":
    main()
