"""Pixels or positions: the Chase game from its camera (chase_camera: a 36 x 36 RGB image of the arena, no
positions) with ppo_godot_camera.py, and from its position vector (chase_discrete: 4 floats) with ppo_godot.py,
with the same seeds and flags; and where the camera run's time goes.

    xvfb-run -a python benchmarks/pixels_or_positions.py --seeds 3 --total-timesteps 300000

The bar (issue 26): the camera policy reaches 80% of the position policy's final return (the mean of
its last 200 episodes, mean over seeds) within 3x the position policy's agent-steps. Both games are
one process of 16 agents with discrete moves; the camera game needs a display (xvfb-run). The time
split is measured apart from training, on the same machine: a client that only plays random moves
(the game's share: physics, drawing, reading the image back, hex and JSON; and Python's decoding),
the policy's forward on 16 rows, and one update on a 1,024-row rollout. Writes
benchmarks/results/pixels_or_positions.md, benchmarks/figures/pixels_or_positions.png and, with
--picture, benchmarks/figures/chase_camera_view.png (the game's window next to what agent 0's camera
sends).
"""
import argparse
import json
import shlex
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from common import REPO, episode_curve, plot_returns, read_run, running_mean, write_table

sys.path.insert(0, str(REPO))
import ppo_godot_camera  # noqa: E402  (its env and Agent take both games)

GAMES = {"positions": REPO / "godot" / "chase" / "chase_discrete.x86_64",
         "camera": REPO / "godot" / "chase" / "chase_camera.x86_64"}
SCRIPTS = {"positions": "ppo_godot.py", "camera": "ppo_godot_camera.py"}
WINDOW = 200  # episodes in a running mean


def train(kind, seed, args):
    with tempfile.TemporaryDirectory() as workdir:
        subprocess.run([sys.executable, str(REPO / SCRIPTS[kind]), "--env-path", str(GAMES[kind]), "--seed", str(seed),
                        "--port", str(args.port), "--total-timesteps", str(args.total_timesteps),
                        *shlex.split(args.ppo_args)], cwd=workdir, check=True, stdout=subprocess.DEVNULL)
        acc = read_run(next(Path(workdir).glob("runs/*")))
    return dict(curve=episode_curve(acc), sps=acc.Scalars("charts/SPS")[-1].value)


def first_crossing(curves, threshold):
    """The first agent-step at which the mean over seeds of the running mean reaches threshold, or None."""
    grid = np.linspace(0, min(steps.max() for steps, _ in curves), 400)
    mean = np.mean([np.interp(grid, steps, running_mean(returns, WINDOW)) for steps, returns in curves], axis=0)
    above = np.flatnonzero(mean >= threshold)
    return int(grid[above[0]]) if len(above) else None


def time_split(kind, port, steps=300):
    """Milliseconds per step of 16 agents: the game's share, decoding, the policy's forward; and one
    update of a 64-step rollout."""
    envs = ppo_godot_camera.GodotVecEnv(ppo_godot_camera.parse_args(["--env-path", str(GAMES[kind]), "--port", str(port)]))
    try:
        envs.reset()
        game, replies, start = envs.games[0], [], None
        for step in range(steps + 20):
            if step == 20:  # start-up left out
                start = time.perf_counter()
            game._send_as_json({"type": "action", "action": [{"move": int(m)} for m in np.random.randint(0, 5, 16)]})
            replies.append(ppo_godot_camera.await_reply(game, 10))
        game_ms = (time.perf_counter() - start) / steps * 1000
        # the camera game's own clock: drawing and reading the image back, then hex-encoding it
        drawing_ms, hex_ms = (np.mean([reply["info"][0].get("camera_usec", [0, 0]) for reply in replies[20:]], axis=0)
                              / 1000)
        start = time.perf_counter()
        for reply in replies[20:]:
            json.loads(json.dumps(reply))
        json_ms = (time.perf_counter() - start) / steps * 1000  # parsing each reply in Python, about
        start = time.perf_counter()
        rows = [envs.observations([reply]) for reply in replies[20:]]
        decode_ms = (time.perf_counter() - start) / steps * 1000
        torch.manual_seed(0)
        agent = ppo_godot_camera.Agent(envs.obs_layout, envs.action_heads)
        start = time.perf_counter()
        with torch.inference_mode():
            for row in rows:
                agent.get_action(torch.as_tensor(row, dtype=torch.float32))
        forward_ms = (time.perf_counter() - start) / steps * 1000
        ppo_args = ppo_godot_camera.parse_args([])
        ppo_args.num_envs, ppo_args.num_steps = 16, 64
        storage = ppo_godot_camera.make_storage(ppo_args, envs)
        storage.obs[:] = np.stack([rows[i % len(rows)] for i in range(64)])
        storage.is_transition[:] = True
        optimizer = torch.optim.Adam(agent.parameters(), lr=1e-4, eps=1e-5, fused=True)
        zeros = np.zeros((64, 16), dtype=np.float32)
        start = time.perf_counter()
        advantages = np.random.randn(64, 16).astype(np.float32)
        ppo_godot_camera.ppo_update(ppo_args, agent, optimizer, storage, zeros, zeros, advantages, zeros, "cpu")
        update_ms = (time.perf_counter() - start) * 1000
    finally:
        envs.close()
    return dict(drawing=drawing_ms, hex=hex_ms, game=game_ms - drawing_ms - hex_ms, json=json_ms, decode=decode_ms,
                forward=forward_ms, update=update_ms)


def picture(port):
    """The game's window (agent 0's arena, drawn 8x larger) beside the 36 x 36 image its camera sends,
    decoded as ppo_godot_camera.py decodes it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with tempfile.TemporaryDirectory() as workdir:
        screenshot = Path(workdir) / "window.png"
        with socket.socket() as listener:  # listening before the game starts, as ppo_godot_camera.connect does
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # the last game's connection may linger
            listener.bind(("127.0.0.1", port))
            listener.listen(1)
            proc = subprocess.Popen([str(GAMES["camera"]), f"--port={port}", f"--screenshot={screenshot}"],
                                    start_new_session=True, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
            game = ppo_godot_camera.GuardedGodotEnv(listener, proc, 60)
        game._send_as_json({"type": "reset"})
        reply = ppo_godot_camera.await_reply(game, 10)
        image = np.frombuffer(bytes.fromhex(reply["obs"][0]["camera_2d"]), np.uint8).reshape(36, 36, 3)
        game._send_as_json({"type": "close"})
        proc.wait(timeout=10)
        window = plt.imread(screenshot)
    fig, (left, right) = plt.subplots(1, 2, figsize=(6.4, 3.4))
    left.imshow(window)
    left.set_title(f"the game's window ({window.shape[1]} x {window.shape[0]})", fontsize=9)
    right.imshow(image, interpolation="nearest")
    right.set_title("what agent 0's camera sends (36 x 36 RGB),\ndecoded by ppo_godot_camera.py", fontsize=9)
    for ax in (left, right):
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle("Chase, camera mode: walls grey, target red, agent blue", fontsize=10)
    fig.tight_layout()
    out = REPO / "benchmarks" / "figures" / "chase_camera_view.png"
    fig.savefig(out, dpi=80)
    plt.close(fig)
    print(f"figure: {out}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--total-timesteps", type=int, default=300000, help="agent-steps of each run, both kinds")
    p.add_argument("--seeds", type=int, default=3, help="seeds 1..N")
    p.add_argument("--ppo-args", default="", help="more flags for both scripts")
    p.add_argument("--port", type=int, default=12508)
    p.add_argument("--picture", action="store_true", help="also draw benchmarks/figures/chase_camera_view.png")
    args = p.parse_args()
    torch.set_num_threads(1)  # as ppo_godot.py's --torch-threads default: the time split is the training run's
    if args.picture:
        picture(args.port)
    split = {kind: time_split(kind, args.port) for kind in GAMES}
    runs = {kind: [] for kind in GAMES}
    for seed in range(1, args.seeds + 1):
        for kind in GAMES:
            runs[kind].append(train(kind, seed, args))
            print(f"seed {seed}, {kind}: {runs[kind][-1]['sps']:,.0f} agent-steps/s", flush=True)

    curves = {kind: [r["curve"] for r in runs[kind]] for kind in GAMES}
    final = {kind: [running_mean(returns, WINDOW)[-1] for _, returns in curves[kind]] for kind in GAMES}
    threshold = 0.8 * np.mean(final["positions"])
    reached = {kind: first_crossing(curves[kind], threshold) for kind in GAMES}
    bar = 3 * args.total_timesteps
    passed = reached["camera"] is not None and reached["camera"] <= bar
    command = "xvfb-run -a python benchmarks/pixels_or_positions.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    checkpoints = np.linspace(0, args.total_timesteps, 7)[1:].astype(int)
    lines = [f"Command: `{command}` ({time.strftime('%Y-%m-%d')}; one game process x 16 agents, discrete moves, "
             f"the same seeds 1-{args.seeds} and flags for both)", "",
             "| agent-steps | positions: mean of the last 200 episodes (min-max over seeds) | camera: the same |",
             "|---|---|---|"]
    for step in checkpoints:
        cells = []
        for kind in GAMES:
            values = np.array([running_mean(returns[steps <= step], WINDOW)[-1] for steps, returns in curves[kind]])
            cells.append(f"{values.mean():.2f} ({values.min():.2f} to {values.max():.2f})")
        lines.append(f"| {step:,} | {cells[0]} | {cells[1]} |")
    crossing = {kind: "never" if reached[kind] is None else f"{reached[kind]:,}" for kind in GAMES}
    lines += ["", f"Final return (mean of the last 200 episodes, mean over seeds): positions "
              f"{np.mean(final['positions']):.2f}, camera {np.mean(final['camera']):.2f}. 80% of the positions' "
              f"final return is {threshold:.2f}: the mean curve reaches it at {crossing['positions']} agent-steps "
              f"from positions, at {crossing['camera']} from the camera. Bar: the camera within "
              f"{bar:,} (3x the positions' {args.total_timesteps:,}): {'met' if passed else 'NOT met'}.", "",
              "| | positions | camera |", "|---|---|---|",
              "| training, agent-steps/s (median over seeds) | "
              + " | ".join(f"{np.median([r['sps'] for r in runs[kind]]):,.0f}" for kind in GAMES) + " |"]
    for part, label in [("drawing", "the game drawing the arenas and reading the image back (ms a step)"),
                        ("hex", "the game hex-encoding the images (ms a step)"),
                        ("game", "the rest of the round trip: physics, the game's JSON, the socket, Python's JSON "
                                 "parse (ms a step)"),
                        ("json", "of which Python's JSON parse of the reply, about (ms a step)"),
                        ("decode", "decoding in Python: JSON lists to one array, hex to bytes (ms a step)"),
                        ("forward", "the policy's forward, 16 rows (ms a step)"),
                        ("update", "one update: 4 epochs of 4 minibatches over 1,024 rows (ms, once every 64 steps)")]:
        lines.append(f"| {label} | " + " | ".join(f"{split[kind][part]:.2f}" for kind in GAMES) + " |")
    per_step = {kind: sum(split[kind][k] for k in ("drawing", "hex", "game", "decode", "forward"))
                + split[kind]["update"] / 64 for kind in GAMES}
    lines.append("| all of it, per step of 16 agents (ms; the update spread over its 64 steps) | "
                 + " | ".join(f"{per_step[kind]:.2f}" for kind in GAMES) + " |")
    lines.append("| the agent-steps/s that makes | " + " | ".join(f"{16000 / per_step[kind]:,.0f}" for kind in GAMES)
                 + " |")
    write_table("pixels_or_positions", lines)
    plot_returns("pixels_or_positions", {"positions (4 floats)": curves["positions"],
                                         "camera (36 x 36 RGB, a CNN)": curves["camera"]},
                 "Chase: pixels or positions (ppo_godot_camera.py, ppo_godot.py), one game x 16 agents", command, window=WINDOW,
                 lines=[(threshold, "80% of the positions' final return")])


if __name__ == "__main__":
    main()
