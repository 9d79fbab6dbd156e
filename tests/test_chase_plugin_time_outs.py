"""The Chase game's plugin mode with --terminal_obs=true and --max_steps=N (main.gd, rules.gd), on the real
engine: each episode end sends what the plugin's pull request #65 sends with "Send Terminal Obs Info" on,
in that agent's info: "terminal_observation", the final observation per key (taken before the reset on the
spot), and "TimeLimit.truncated": true at a time-out only. Launcher: chase_plugin_time_outs.x86_64 (N = 30).
Played alone (--policy), the game's printed episodes tell a time-out too."""
import re
import subprocess

import numpy as np
import pytest

from conftest import REPO, needs_godot

CHASE = REPO / "godot" / "chase"
N = 30  # chase_plugin_time_outs.x86_64's --max_steps
REACH = 0.1  # rules.gd: closer than this reaches the target
DECLARED = {"to_target": 2, "position": 2}  # the plugin mode's observation keys and sizes, in its order


@pytest.fixture
def chase(game):
    """chase(launcher, *flags): a Chase launcher's env_info, its reply to reset, and play(actions) (conftest's
    game)."""
    return lambda launcher, *flags: game(CHASE / launcher, *flags)


def moves(observations, rng):
    """Even agents head straight for their target at full speed (about 40% of them reach it within N actions),
    odd ones move at random (they time out): a 2-D velocity each, the same in every game mode."""
    out = []
    for i, (x, y, dx, dy) in enumerate(observations):
        direction = rng[i].uniform(-1, 1, 2)  # drawn for every agent, so that each agent's draws are its own
        if i % 2 == 0:
            direction = np.array([dx, dy]) / np.hypot(dx, dy)
        out.append(direction.tolist())
    return out


def as_plugin(obs):
    return [agent["position"] + agent["to_target"] for agent in obs]


def play_plugin(chase, launcher, *flags, steps=200):
    """Every step's reply, and each agent's actions taken in its episode so far before each step."""
    info, first, play = chase(launcher, *flags)
    rng = [np.random.default_rng(i) for i in range(16)]
    obs, replies = first["obs"], []
    for _ in range(steps):
        replies.append(play([{"sprint": 1, "direction": d} for d in moves(as_plugin(obs), rng)]))
        obs = replies[-1]["obs"]
    return info, first, replies


def test_the_keys_come_exactly_with_done_and_hold_the_observation_as_declared(chase):
    info, first, replies = play_plugin(chase, "chase_plugin_time_outs.x86_64")
    assert list(info["observation_space"][0]) == list(DECLARED)
    assert first["info"] == [{}] * 16  # a reset ends no episode
    ends = {True: 0, False: 0}
    for reply in replies:
        for done, agent in zip(reply["done"], reply["info"]):
            if not done:
                assert agent == {}
                continue
            assert list(agent) in (["terminal_observation"], ["terminal_observation", "TimeLimit.truncated"]), agent
            assert agent.get("TimeLimit.truncated", True) is True  # true where sent: never false
            terminal = agent["terminal_observation"]
            assert list(terminal) == list(DECLARED)  # the declared keys, in the declared order, as obs sends them
            assert [len(terminal[key]) for key in terminal] == list(DECLARED.values())
            ends["TimeLimit.truncated" in agent] += 1
    assert ends[True] >= 50 and ends[False] >= 20, ends  # both kinds of end, many times


def test_a_time_out_is_told_exactly_after_n_actions_and_a_reached_target_never(chase):
    """The final observation: at a reached target closer than REACH, at a time-out the Nth action's and not
    closer; the observation sent with done is the next episode's first (reset on the spot)."""
    _, first, replies = play_plugin(chase, "chase_plugin_time_outs.x86_64")
    length = np.zeros(16, dtype=int)  # actions of each agent's episode under way
    for reply in replies:
        length += 1
        for i, (done, agent) in enumerate(zip(reply["done"], reply["info"])):
            if not done:
                assert length[i] < N
                continue
            distance = np.hypot(*agent["terminal_observation"]["to_target"])
            if agent.get("TimeLimit.truncated"):
                assert length[i] == N and distance >= REACH, (i, length[i], distance)
            else:
                assert length[i] <= N and distance < REACH, (i, length[i], distance)
            assert np.hypot(*reply["obs"][i]["to_target"]) >= 2 * REACH  # a new episode's start
            assert reply["obs"][i] != agent["terminal_observation"]
            length[i] = 0


def test_the_terminal_observation_is_what_a_gymnasium_like_game_sends_with_done(chase):
    """The same agents in chase_continuous (gymnasium 1.0's way: the final observation comes with done, info
    truncated at a time-out) with the same seed, time-out and velocities: each agent's first episode ends at
    the same step, with the same final observation, to the last digit, and is a time-out in both or neither."""
    _, _, plugin = play_plugin(chase, "chase_plugin_time_outs.x86_64", steps=N)
    _, first, play = chase("chase_continuous.x86_64", f"--max_steps={N}")
    rng = [np.random.default_rng(i) for i in range(16)]
    obs, compared = [agent["obs"] for agent in first["obs"]], np.zeros(16, dtype=bool)
    for step in range(N):
        reply = play([{"move": d} for d in moves(obs, rng)])
        obs = [agent["obs"] for agent in reply["obs"]]
        for i in range(16):
            if compared[i]:
                continue
            assert plugin[step]["done"][i] == reply["done"][i], (step, i)
            if reply["done"][i]:
                told = plugin[step]["info"][i]
                x, y, dx, dy = obs[i]
                assert told["terminal_observation"] == {"to_target": [dx, dy], "position": [x, y]}, (step, i)
                assert ("TimeLimit.truncated" in told) == reply["info"][i]["truncated"], (step, i)
                compared[i] = True
    assert compared.all()  # by N actions, every agent's first episode has ended


@pytest.mark.parametrize("launcher, flags", [("chase_plugin.x86_64", ["--max_steps=30"]),
                                             ("chase_plugin.x86_64", ["--terminal_obs=false"])])
def test_without_the_flag_info_stays_empty(chase, launcher, flags):
    _, first, replies = play_plugin(chase, launcher, *flags, steps=100)
    assert first["info"] == [{}] * 16
    assert all(reply["info"] == [{}] * 16 for reply in replies)
    assert sum(sum(reply["done"]) for reply in replies) >= 16  # though episodes ended: by 100 actions, every agent's


def test_by_default_the_time_out_is_still_after_100_actions(chase):
    _, _, replies = play_plugin(chase, "chase_plugin.x86_64", "--terminal_obs=true", steps=100)
    timed_out = [i for i, agent in enumerate(replies[-1]["info"]) if agent.get("TimeLimit.truncated")]
    assert len(timed_out) >= 4  # the random agents that reached no target by then
    assert not any(agent.get("TimeLimit.truncated") for reply in replies[:-1] for agent in reply["info"])


def test_other_modes_ignore_the_flag(chase):
    _, _, play = chase("chase_continuous.x86_64", "--terminal_obs=true", "--max_steps=2")
    for _ in range(2):
        reply = play([{"move": [0.0, 0.0]}] * 16)
    assert all(reply["done"]) and reply["info"] == [{"truncated": True, "autoreset": False}] * 16


def test_played_alone_a_time_out_is_printed_as_a_time_out(tmp_path):
    """--policy (no trainer), agents that stay put: every episode ends by --max_steps, and the game's lines say
    time-out, though the plugin's way resets the agent on the spot."""
    needs_godot()
    (tmp_path / "still.gd").write_text('func act(obs):\n\treturn {"sprint": 0, "direction": [0.0, 0.0]}\n')
    proc = subprocess.run([str(CHASE / "chase_plugin.x86_64"), f"--policy={tmp_path / 'still.gd'}", "--max_steps=5",
                           "--n_agents=2", "--episodes=4", "--no-window", "--disable-render-loop"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    ends = re.findall(r"^policy=shared_policy agent=\d episodic_return=\S+ (episodic_length=\d+ \(\S+\))$",
                      proc.stdout, flags=re.M)
    assert ends == ["episodic_length=5 (time-out)"] * 4, proc.stdout
