"""The Chase game as a memory task (godot/chase/chase_memory.x86_64: rules.gd with --target_every=4): each
agent sees its target in every 4th observation of its episode only (the first, then after 4 actions, ...), zeros
in between; a new episode starts with a sighting."""
import subprocess

import numpy as np

import ppo_godot
from conftest import REPO, game_pids, needs_godot

GAME = str(REPO / "godot" / "chase" / "chase_memory.x86_64")
STAY = {"move": 0}


def test_the_target_is_seen_in_every_4th_observation_of_an_episode(port):
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
        assert first.shape == (16, 4) and (np.abs(first[:, 2:]).sum(axis=1) > 0.2).all()  # every target seen
        seen = [True]
        for step in range(1, 101):  # staying put: all time out at the 100th action
            obs, reply = play(STAY)
            np.testing.assert_array_equal(obs[:, :2], first[:, :2])  # positions always seen
            shown = np.abs(obs[:, 2:]).sum(axis=1) > 0
            assert shown.all() or not shown.any()
            seen.append(bool(shown.all()))
            if shown.all():  # the same vector each time: nobody moved
                np.testing.assert_allclose(obs[:, 2:], first[:, 2:], atol=1e-6)
        assert seen[:100] == [step % 4 == 0 for step in range(100)]
        assert all(reply["done"]) and all(info["truncated"] for info in reply["info"])
        obs, reply = play(STAY)  # the step that only resets: a new episode's first observation
        assert all(info["autoreset"] for info in reply["info"])
        assert (np.abs(obs[:, 2:]).sum(axis=1) > 0.2).all()
        obs, _ = play(STAY)
        assert (obs[:, 2:] == 0).all()
    finally:
        game._send_as_json({"type": "close"})
        proc.wait(timeout=10)
    assert not game_pids(port)
