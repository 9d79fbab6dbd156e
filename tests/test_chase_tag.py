"""The Chase game's tag mode on the real engine (godot/chase/tag.gd): chasers and runners, two policies
whose spaces differ, opposed rewards, and either side played by the game's own script."""

import numpy as np
import pytest

from conftest import REPO, benchmark, game_pids, needs_godot
import as_a_process

GAME = str(REPO / "godot" / "chase" / "chase_tag.x86_64")
STILL = {"chaser": {"move": 0}, "runner": {"move": [0.0, 0.0]}}  # each side's action that stays put


@pytest.fixture
def tag_game(game):
    """tag_game(*flags): the tag game's env_info, its reply to reset, and play(actions) (conftest's game)."""
    return lambda *flags: game(GAME, *flags)


def test_two_policies_with_different_spaces_in_one_game(tag_game):
    info, first, _ = tag_game()
    assert info["n_agents"] == 16 and info["agent_policy_names"] == ["chaser", "runner"] * 8
    assert info["observation_space"][:2] == [{"obs": {"space": "box", "size": [4]}},
                                             {"obs": {"space": "box", "size": [5]}}]
    assert info["action_space"][:2] == [{"move": {"action_type": "discrete", "size": 5}},
                                        {"move": {"action_type": "continuous", "size": 2}}]
    chaser, runner = (np.array(agent["obs"]) for agent in first["obs"][:2])
    np.testing.assert_allclose(chaser[:2] + chaser[2:], runner[:2], atol=1e-5)  # the vector to its runner
    np.testing.assert_allclose(runner[2:4], chaser[2:], atol=1e-5)  # from its chaser: the same vector
    assert runner[4] == 1.0  # all of the episode left


def test_rewards_are_opposed_and_a_pair_ends_together(tag_game):
    info, _, play = tag_game()
    names = info["agent_policy_names"]
    rng = np.random.default_rng(0)
    ends = 0
    for _ in range(250):
        reply = play([{"move": int(rng.integers(5))} if name == "chaser" else {"move": rng.uniform(-1, 1, 2).tolist()}
                      for name in names])
        rewards, dones = np.array(reply["reward"]), np.array(reply["done"])
        np.testing.assert_allclose(rewards[0::2], -rewards[1::2], atol=1e-5)
        assert (dones[0::2] == dones[1::2]).all()
        ends += dones.sum()
    assert ends >= 32  # every agent's episode has ended at least once: by 100 steps, a time-out


def test_the_step_that_only_resets_a_pair_pays_nothing(tag_game):
    """The action after a pair's end only resets the pair (info autoreset, both agents): reward 0 to each,
    where every other step pays the chaser -0.01 plus what it closed, the runner the opposite."""
    info, _, play = tag_game()
    rng = np.random.default_rng(0)
    ended = np.zeros(16, dtype=bool)
    resets = 0
    for _ in range(150):  # by 100 actions every pair has ended, by a catch or a time-out
        reply = play([{"move": int(rng.integers(5))} if name == "chaser" else {"move": rng.uniform(-1, 1, 2).tolist()}
                      for name in info["agent_policy_names"]])
        autoreset = np.array([step["autoreset"] for step in reply["info"]])
        np.testing.assert_array_equal(autoreset, ended)  # right after the end, and only then
        assert (np.array(reply["reward"])[autoreset] == 0.0).all()
        assert (np.array(reply["reward"])[~autoreset] != 0.0).all()
        resets += autoreset.sum()
        ended = np.array(reply["done"])
    assert resets >= 16


def test_the_time_out_is_100_actions_whatever_max_steps_says(tag_game):
    """--max_steps is the other modes' (rules.gd); tag.gd times a pair out at its MAX_STEPS, 100, and the runner
    sees the share of those left. Pairs that stay put are never caught."""
    info, _, play = tag_game("--max_steps=2")
    for step in range(1, 101):
        reply = play([STILL[name] for name in info["agent_policy_names"]])
        assert set(reply["done"]) == {step == 100}, step
        np.testing.assert_allclose([agent["obs"][4] for agent in reply["obs"][1::2]], 1 - step / 100, atol=1e-6)
    assert all(agent["truncated"] for agent in reply["info"])


def test_the_sparse_reward_is_a_catch_and_nothing_else(tag_game):
    """--reward=sparse: the chaser gets 1 on the action that catches (a terminated end) and 0 otherwise, the
    runner the opposite; the scripted chaser catches runners that stay put, so the 1s are seen."""
    info, _, play = tag_game("--scripted=chaser", "--reward=sparse")
    caught = 0
    for _ in range(300):
        reply = play([STILL["runner"]] * 8)
        catches = np.array([done and not step["truncated"] for done, step in zip(reply["done"], reply["info"])])
        np.testing.assert_array_equal(reply["reward"], np.where(catches, -1.0, 0.0))  # the runners' rewards
        caught += catches.sum()
    assert caught >= 8


@pytest.mark.parametrize("scripted, learner", [("runner", "chaser"), ("chaser", "runner")])
def test_the_game_plays_one_side_itself(tag_game, scripted, learner):
    """Against a learner that stays put, the scripted chaser catches nearly every runner; the scripted
    runner flees, so a chaser that stays put loses ground and catches none."""
    info, _, play = tag_game(f"--scripted={scripted}")
    assert info["n_agents"] == 8 and info["agent_policy_names"] == [learner] * 8
    returns, caught = np.zeros(8), 0
    for _ in range(300):
        reply = play([STILL[learner]] * 8)
        returns += reply["reward"]
        caught += sum(done and not step["truncated"] for done, step in zip(reply["done"], reply["info"]))
    if scripted == "chaser":
        assert caught >= 24  # 3 episodes of each of 8 runners, nearly all caught
    else:
        assert caught == 0 and (returns < 0).all()


def test_the_baselines_benchmark_tells_a_chaser_that_heads_for_its_runner_from_one_that_does_not(port):
    needs_godot()
    baselines = benchmark("chase_tag_baselines")
    untrained = baselines.play("runner", baselines.untrained_chaser, port, 300, 7)
    heading = baselines.play("runner", baselines.heading_chaser, port, 300, 7)
    assert untrained[2] >= 16 and heading[2] >= 16  # every agent's episode ended at least twice
    assert untrained[1] == 0 < heading[1]
    assert not game_pids(port)


def run_benchmark(name, argv, tmp_path, monkeypatch):
    """benchmarks/<name>.py's main() with argv, writing under tmp_path, its training runs forked from as_a_process
    (torch already imported); (its module, its table, its figure)."""
    module, common = benchmark(name), benchmark("common")
    monkeypatch.setattr(module, "subprocess", as_a_process.SUBPROCESS)
    (tmp_path / "benchmarks").mkdir()
    monkeypatch.setattr(common, "REPO", tmp_path)  # where the table goes
    figure = tmp_path / "benchmarks" / "figures" / f"{name}.png"
    monkeypatch.setattr(module, "FIGURE", figure)
    monkeypatch.setattr("sys.argv", [f"{name}.py", *argv])
    module.main()
    return module, (tmp_path / "benchmarks" / "results" / f"{name}.md").read_text(), figure


def test_the_learning_benchmark_trains_each_way_and_plays_each_trained_policy_against_the_script(
        port, tmp_path, monkeypatch):
    """On tiny budgets: a row for each policy, each way it was trained and each seed, beside the untrained
    ones; and a figure of both policies' returns and lengths."""
    needs_godot()
    _, table, figure = run_benchmark("chase_tag_learning", ["--seeds", "1", "--total-timesteps", "2048",
                                                             "--eval-steps", "150", "--port", str(port)],
                                     tmp_path, monkeypatch)
    rows = [line for line in table.splitlines() if line.startswith(("| chaser", "| runner"))]
    assert [tuple(cell.strip() for cell in row.split("|")[1:4]) for row in rows] == [
        ("chaser", "untrained", "-"), ("chaser", "together", "1"), ("chaser", "against the script", "1"),
        ("runner", "untrained", "-"), ("runner", "together", "1"), ("runner", "against the script", "1")]
    assert all(int(row.split("|")[7]) >= 8 for row in rows)  # every agent's episode ended, by a time-out at most
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not game_pids(port)


def test_the_self_play_benchmark_gives_each_way_s_spread_over_seeds_and_where_self_play_falls_below():
    """median (worst-best) over seeds, greedy and sampled; the seeds where the self-play chaser catches the
    scripted runner less often than the chaser trained against it; and self-play's final ratings per seed."""
    self_play = benchmark("chase_tag_self_play")
    seeds, script = [1, 2, 3], self_play.SCRIPT
    caught = {("self-play", script): [0.1, 0.4, 0.3], ("against the script", script): [0.4, 0.3, 0.45],
              ("together", script): [0.2, 0.2, 0.2]}
    length = {(script, how): [90.0, 80.0, 85.0] for how in self_play.LEARNED}
    sampled = {(how, name, seed): 0.2 if name == "chaser" else 88.0
               for how in self_play.LEARNED for name in ("chaser", "runner") for seed in seeds}
    sampled.update({("self-play", "chaser", 1): 0.1, ("self-play", "chaser", 2): 0.5})
    curves = {("self-play", name): [{"elo": (np.arange(2), np.array([1200.0, final]))} for final in finals]
              for name, finals in (("chaser", [1600, 1300, 1250]), ("runner", [900, 1100, 1150]))}
    lines = self_play.spread_tables(caught, length, sampled, curves, seeds)
    assert "| self-play | 30% (10%-40%) | 20% (10%-50%) | 85.0 (80.0-90.0) | 88.0 (88.0-88.0) |" in lines
    assert "| against the script | 40% (30%-45%) | 20% (20%-20%) | 85.0 (80.0-90.0) | 88.0 (88.0-88.0) |" in lines
    assert any("less often than the chaser trained against it on 2 of 3 seeds greedy, 1 of 3 sampled" in line
               for line in lines)
    assert "| 1 | 10% | 10% | 1600 | 900 | 90.0 |" in lines


def test_the_self_play_benchmark_trains_four_ways_and_plays_every_chaser_against_every_runner(port, tmp_path,
                                                                                               monkeypatch):
    """On tiny budgets: the margins' rows for each way of training, a 5 x 5 cross-play table, and a figure of
    both policies' returns and ratings."""
    needs_godot()
    self_play, table, figure = run_benchmark(
        "chase_tag_self_play", ["--seeds", "1", "--total-timesteps", "2048", "--eval-steps", "120", "--port",
                                str(port), "--workdir", str(tmp_path / "runs"), "--self-play-args",
                                "--self-play-team-change 512"], tmp_path, monkeypatch)
    margins = [line.split("|")[1].strip() for line in table.splitlines() if ", seed 1 |" in line]
    assert margins == ["self-play, seed 1", "together, seed 1", "against the script, seed 1"]
    spreads = [line.split("|")[1].strip() for line in table.splitlines() if line.startswith("| ") and "%-" in line]
    assert spreads == self_play.LEARNED
    assert any(f"on {g} of 1 seeds greedy, {s} of 1 sampled" in table for g in (0, 1) for s in (0, 1))
    cross = [line for line in table.splitlines() if line.startswith("| ") and " / " in line]
    assert [row.split("|")[1].strip() for row in cross] == self_play.KINDS
    for row in cross:  # every cell: a catch rate and a mean length of at most the time-out's 100 steps
        for cell in row.split("|")[2:-1]:
            caught, length = cell.split(" / ")
            assert 0 <= int(caught.strip(" %")) <= 100 and 1 <= float(length) <= 100
    # the self-play run took turns: its learning flag changed, and its ratings were logged
    run = next((tmp_path / "runs").glob("self-play_chase_tag_1/runs/*"))
    learning = [event.value for event in benchmark("common").read_run(run).Scalars("self_play/learning/chaser")]
    assert 0.0 in learning and 1.0 in learning
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not game_pids(port)
