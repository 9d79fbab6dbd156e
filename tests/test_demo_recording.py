"""The demo game records demonstrations as the Godot RL Agents plugin's RECORD_EXPERT_DEMOS mode does
(godot/chase/main.gd --record_demos): the game's own script plays, agent 0 is recorded at every action,
its episode's final observation comes with no action, and the file is one JSON array of [observations,
actions] per episode, written when the game quits. Checked on the real engine (Debian's Godot 3)."""
import json
import math
import subprocess

import numpy as np
import pytest

from conftest import REPO, needs_godot

GAMES = REPO / "godot" / "chase"
DEMOS = GAMES / "demos"
REACH, MAX_STEPS = 0.1, 100  # main.gd's: a catch or a target reached, and the time-out in actions
# What each game's script does, from the observation it acts on: [x, y, dx, dy] toward the target (Chase)
# or the runner (tag's chaser); discrete moves 0 stay, 1 up, 2 down, 3 left, 4 right
RULES = {
    "discrete": lambda obs: [(3 if obs[2] < 0 else 4) if abs(obs[2]) > abs(obs[3]) else (1 if obs[3] < 0 else 2)],
    "continuous": lambda obs: list(np.array(obs[2:4]) / math.hypot(obs[2], obs[3])),
    "multidiscrete": lambda obs: [int(np.sign(obs[2])) + 1, int(np.sign(obs[3])) + 1],
    "tag": lambda obs: [0] if obs[2] == obs[3] == 0 else RULES["discrete"](obs),
}


def record(kind, path, *flags, episodes=10, seed=1):
    """episodes None: the game's default (--episodes left out)."""
    needs_godot()
    proc = subprocess.run([str(GAMES / f"chase_{kind}.x86_64"), f"--record_demos={path}", f"--env_seed={seed}",
                           *([f"--episodes={episodes}"] if episodes else []), "--fixed-fps", "60", *flags],
                          capture_output=True, text=True, timeout=120)
    return proc


def recorded(kind, tmp_path, *flags, episodes=10, seed=1):
    proc = record(kind, tmp_path / f"{kind}.json", *flags, episodes=episodes, seed=seed)
    assert proc.returncode == 0, proc.stderr
    assert f"recorded {episodes or 100} episodes of agent 0 to {tmp_path / f'{kind}.json'}" in proc.stdout
    return json.loads((tmp_path / f"{kind}.json").read_text())


def test_the_default_is_100_episodes(tmp_path):
    assert len(recorded("discrete", tmp_path, episodes=None)) == 100


@pytest.mark.parametrize("kind, obs_size", [("tag", 4), ("discrete", 4), ("continuous", 4), ("multidiscrete", 4)])
def test_each_episode_holds_the_script_s_actions_and_one_more_observation(kind, obs_size, tmp_path):
    episodes = recorded(kind, tmp_path)
    assert len(episodes) == 10
    for observations, actions in episodes:
        assert len(observations) == len(actions) + 1 and 1 <= len(actions) <= MAX_STEPS
        assert all(len(obs) == obs_size for obs in observations)
        for obs, action in zip(observations, actions):  # the action taken on the observation stored before it
            np.testing.assert_allclose(action, RULES[kind](obs), atol=2e-5)
        # the episode ended by reaching its target (or catching the runner), or by the time-out; the last
        # observation, with no action, is the final one
        final = observations[-1]
        assert math.hypot(final[2], final[3]) < REACH or len(actions) == MAX_STEPS
    assert any(len(actions) < MAX_STEPS for _, actions in episodes)  # some ended before the time-out


def test_the_same_seed_records_the_same_file_and_the_kept_recordings_are_today_s(tmp_path):
    for kind, kept in (("tag", "tag_scripted_chaser.json"), ("discrete", "chase_discrete_scripted.json")):
        assert recorded(kind, tmp_path) == json.loads((DEMOS / kept).read_text())
    assert recorded("tag", tmp_path, seed=2) != json.loads((DEMOS / "tag_scripted_chaser.json").read_text())


def test_an_action_repeat_records_once_per_action(tmp_path):
    """Recorded every --action_repeat ticks: at 4 ticks an action the target is reached in fewer actions."""
    one, four = (recorded("discrete", tmp_path, f"--action_repeat={repeat}") for repeat in (1, 4))
    assert np.mean([len(a) for _, a in four]) < np.mean([len(a) for _, a in one]) / 2


@pytest.mark.parametrize("kind, flags", [("plugin", []), ("discrete", ["--observation=camera"])],
                         ids=["plugin", "camera"])
def test_a_game_whose_observation_is_not_one_obs_vector_records_nothing(kind, flags, tmp_path):
    proc = record(kind, tmp_path / "demos.json", *flags)
    lines = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("Godot Engine")]
    assert proc.returncode == 2 and lines == [
        "chase: --record_demos records the obs key alone, as the plugin does: vector observations only"]
    assert not (tmp_path / "demos.json").exists()
