"""The Chase game as a memory task (godot/chase/chase_memory.x86_64: rules.gd with --target_every=4): each
agent sees its target in every 4th observation of its episode only (the first, then after 4 actions, ...), zeros
in between; a new episode starts with a sighting. And where the demo game, playing alone (main.gd --policy),
resets a recurrent policy's memory."""
import re
import subprocess

import numpy as np
import pytest

from conftest import REPO, needs_godot

GAME = str(REPO / "godot" / "chase" / "chase_memory.x86_64")
STAY = {"move": 0}
REACH = 0.1  # rules.gd's

# A recurrent policy as the game sees one (an exported file with reset()): straight for the target; each call
# prints its instance, the actions taken since its last reset() (its memory) and the distance it observes.
PROBE = """
var memory = 0


func act(obs):
	var plugin = not obs.has("obs")
	var to_target = Vector2(obs["to_target"][0], obs["to_target"][1]) if plugin else Vector2(obs["obs"][2], obs["obs"][3])
	print("act %d memory=%d distance=%f" % [get_instance_id(), memory, to_target.length()])
	memory += 1
	if plugin:
		return {"sprint": 1, "direction": [to_target.normalized().x, to_target.normalized().y]}
	if abs(to_target.x) > abs(to_target.y):
		return {"move": 3 if to_target.x < 0 else 4}
	return {"move": 1 if to_target.y < 0 else 2}


func reset():
	memory = 0
"""


def test_the_target_is_seen_in_every_4th_observation_of_an_episode(game):
    _, reply, play_all = game(GAME)

    def play(action):
        reply = play_all([action] * 16)
        return np.array([agent["obs"] for agent in reply["obs"]]), reply

    first = np.array([agent["obs"] for agent in reply["obs"]])
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


@pytest.mark.parametrize("action_type", ["discrete", "plugin"])
def test_playing_alone_a_recurrent_policy_forgets_where_its_agents_episode_starts_anew(action_type, tmp_path):
    """As ppo_godot_lstm.py's forget() zeroes the state (docs/shipping-your-agent.md, 'A recurrent policy'): the
    first act() of every episode has zero memory. Gymnasium-like (discrete), an episode of L actions is
    followed by the action that only resets the agent, still taken with the old memory (L actions of it)
    on the final observation (a catch: closer than REACH); reset() comes after it. The plugin's way resets
    on the spot, so reset() comes with the episode's end and the observation sent with it starts the next.
    Each agent's acts, in order, must show memory 0, 1, ... over its episodes as the game prints them."""
    needs_godot()
    (tmp_path / "probe.gd").write_text(PROBE)
    game = REPO / "godot" / "chase" / ("chase_plugin.x86_64" if action_type == "plugin" else "chase_discrete.x86_64")
    proc = subprocess.run([str(game), f"--policy={tmp_path / 'probe.gd'}", "--n_agents=4", "--episodes=12",
                           "--env_seed=3", "--no-window", "--disable-render-loop"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    calls = re.findall(r"^act (\d+) memory=(\d+) distance=(\S+)$", proc.stdout, flags=re.M)
    agent_of = {instance: i for i, (instance, _, _) in enumerate(calls[:4])}  # the first action: agents in order
    acts = [[(int(memory), float(distance)) for instance, memory, distance in calls if agent_of[instance] == i]
            for i in range(4)]
    for i in range(4):
        episodes = re.findall(rf"^policy=shared_policy agent={i} episodic_return=\S+ episodic_length=(\d+) \((\S+)\)$",
                              proc.stdout, flags=re.M)
        assert len(episodes) == 3
        expected, final_acts = [], []
        for length, ended in episodes:
            expected += range(int(length))
            if action_type == "discrete":  # then the action that only resets it, from the old memory
                final_acts.append((len(expected), ended))
                expected.append(int(length))
        if action_type == "discrete":
            expected.pop()  # the game stops at the last counted episode's end: no action follows it
            final_acts.pop()
        assert [memory for memory, _ in acts[i][:len(expected)]] == expected
        assert all(distance >= 2 * REACH for memory, distance in acts[i] if memory == 0)  # a new episode's first
        for k, ended in final_acts:  # the old episode's final observation
            assert ended == "time-out" or acts[i][k][1] < REACH
        assert sum(ended == "terminated" for _, ended in episodes) >= 1
