"""The Chase game as a memory task (godot/chase/chase_memory.x86_64: rules.gd with --target_shown=1): each
agent sees its target in its episode's first observation only, zeros after, and again when a new episode
starts."""
import subprocess

import numpy as np

import ppo_godot
from conftest import REPO, game_pids, needs_godot

GAME = str(REPO / "godot" / "chase" / "chase_memory.x86_64")
STAY = {"move": 0}


def test_the_target_is_shown_in_an_episodes_first_observation_only(port):
    needs_godot()
    proc = subprocess.Popen([GAME, f"--port={port}", "--env_seed=3"], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    game = ppo_godot.GuardedGodotEnv(port, proc, 30)
    try:
        def play(action):
            game._send_as_json({"type": "action", "action": [action] * 16})
            reply = ppo_godot.await_reply(game, 10)
            return np.array([agent["obs"] for agent in reply["obs"]]), reply

        game._send_as_json({"type": "reset"})
        first = np.array([agent["obs"] for agent in ppo_godot.await_reply(game, 10)["obs"]])
        assert first.shape == (16, 4) and (np.abs(first[:, 2:]).sum(axis=1) > 0.2).all()  # every target shown
        obs, _ = play(STAY)
        np.testing.assert_array_equal(obs[:, :2], first[:, :2])  # positions still seen
        assert (obs[:, 2:] == 0).all()  # the targets hidden
        for _ in range(99):  # staying put: all time out at the 100th action
            obs, reply = play(STAY)
        assert all(reply["done"]) and all(info["truncated"] for info in reply["info"])
        assert (obs[:, 2:] == 0).all()
        obs, reply = play(STAY)  # the step that only resets: a new episode's first observation
        assert all(info["autoreset"] for info in reply["info"])
        assert (np.abs(obs[:, 2:]).sum(axis=1) > 0.2).all()
        obs, _ = play(STAY)
        assert (obs[:, 2:] == 0).all()
    finally:
        game._send_as_json({"type": "close"})
        proc.wait(timeout=10)
    assert not game_pids(port)
