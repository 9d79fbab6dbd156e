"""The reference points of the Chase game's tag mode (godot/chase/tag.gd), before any training: how
often an untrained chaser catches the game's scripted runner, and how long an untrained runner lasts
against its scripted chaser; beside them, the game's own scripts played from Python.

    python benchmarks/chase_tag_baselines.py --steps 2000

"Untrained" is what an untrained ppo_godot.py network plays: uniform over the chaser's 5 moves, N(0, 1)
moves for the runner. Writes benchmarks/results/chase_tag_baselines.md.
"""
import argparse
import socket
import subprocess
import sys
import time

import numpy as np

from common import REPO, write_table
from godot_chase import scripted_action

sys.path.insert(0, str(REPO))
import ppo_godot  # noqa: E402

GAME = str(REPO / "godot" / "chase" / "chase_tag.x86_64")


def play(scripted, policy, port, steps, seed):
    """(mean episode length, share of episodes that ended in a catch, episodes) of the 8 agents the
    trainer plays, against the side the game plays (--scripted). scripted None: the game plays neither
    side, policy is (the chasers', the runners'), and each pair's episode counts once (its chaser's)."""
    with socket.socket() as listener:  # listening before the game starts, as ppo_godot.connect does
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # the last game's connection may linger
        listener.bind(("127.0.0.1", port))
        listener.listen(1)
        proc = subprocess.Popen([GAME, f"--port={port}", f"--env_seed={seed}", "--fixed-fps", "60",
                                 *([f"--scripted={scripted}"] if scripted else [])], start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        game = ppo_godot.GuardedGodotEnv(listener, proc, 30)
    try:
        game._send_as_json({"type": "reset"})
        reply = ppo_godot.await_reply(game, 10)
        rng = np.random.default_rng(seed)
        lengths, caught, length = [], 0, np.zeros(len(reply["obs"]))
        for _ in range(steps):
            obs = [agent["obs"] for agent in reply["obs"]]
            if scripted:
                actions = policy(np.array(obs), rng)
            else:  # chaser 0, its runner 1, chaser 2, ...
                chasers, runners = policy[0](np.array(obs[0::2]), rng), policy[1](np.array(obs[1::2]), rng)
                actions = [action for pair in zip(chasers, runners) for action in pair]
            game._send_as_json({"type": "action", "action": actions})
            reply = ppo_godot.await_reply(game, 10)
            for i in range(0, len(reply["done"]), 1 if scripted else 2):
                if reply["info"][i]["autoreset"]:  # a step that only reset the pair
                    continue
                length[i] += 1
                if reply["done"][i]:
                    lengths.append(length[i])
                    length[i] = 0
                    caught += not reply["info"][i]["truncated"]
    finally:
        game._send_as_json({"type": "close"})
        proc.wait(timeout=10)
    return float(np.mean(lengths)), caught / len(lengths), len(lengths)


def untrained_chaser(obs, rng):
    return [{"move": int(m)} for m in rng.integers(0, 5, len(obs))]


def heading_chaser(obs, rng):
    """The game's script: along the axis with the larger distance to the runner, as godot_chase.py's
    scripted policy heads for a target (the chaser observes [x, y, to its runner], that game's layout)."""
    return [{"move": int(move)} for move in scripted_action(obs, "discrete")[:, 0]]


def untrained_runner(obs, rng):
    return [{"move": rng.normal(size=2).tolist()} for _ in obs]


def fleeing_runner(obs, rng):  # the game's script: straight away from the chaser, sliding along a wall
    moves = []
    for x, y, away_x, away_y, _ in obs:
        away = np.array([away_x, away_y]) / (np.hypot(away_x, away_y) + 1e-9)
        for axis, position in enumerate((x, y)):
            if abs(position) > 0.95 and np.sign(away[axis]) == np.sign(position):
                away[axis] = 0.0
        if np.linalg.norm(away) < 0.01:
            away = np.array([-np.sign(y), np.sign(x)])
        moves.append({"move": (away / (np.linalg.norm(away) + 1e-9)).tolist()})
    return moves


ROWS = [("untrained chaser", "runner", untrained_chaser),
        ("heading chaser (the game's script)", "runner", heading_chaser),
        ("untrained runner", "chaser", untrained_runner),
        ("fleeing runner (the game's script)", "chaser", fleeing_runner)]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=2000, help="actions of each match-up, 8 agents each")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--port", type=int, default=12808)
    args = p.parse_args()
    command = "python benchmarks/chase_tag_baselines.py " + " ".join(sys.argv[1:])
    lines = [f"Command: `{command}` ({time.strftime('%Y-%m-%d')}; 8 agents, env_seed {args.seed})", "",
             "| the trainer's side | against the game's scripted | mean episode length (time-out 100) | caught "
             "| episodes |", "|---|---|---|---|---|"]
    for label, scripted, policy in ROWS:
        length, caught, episodes = play(scripted, policy, args.port, args.steps, args.seed)
        lines.append(f"| {label} | {scripted} | {length:.1f} | {caught:.0%} | {episodes} |")
    write_table("chase_tag_baselines", lines)


if __name__ == "__main__":
    main()
