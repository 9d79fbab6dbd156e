"""The speed benchmarks' own logic, on tiny budgets: the phase profile accounts for the whole run,
the CleanRL comparison computes its ratios per pair, CartPole counts as solved where it should,
learning curves are drawn, and the LSTM benchmarks run each of their sides and compare replays
that agree."""
import argparse
import json
import re
import sys

import numpy as np
import pytest
import torch

import godot4_web
from conftest import CHASE, REPO, benchmark, free_port, needs_godot, run_script

sys.path.insert(0, str(REPO / "benchmarks"))
import cartpole_vs_sb3  # noqa: E402
import common  # noqa: E402
import godot_action_repeat  # noqa: E402
import godot_headless_windowed  # noqa: E402
import lstm_cartpole_novel  # noqa: E402
import lstm_update_profile  # noqa: E402
import profile_phases  # noqa: E402
import speed_vs_cleanrl  # noqa: E402


@pytest.mark.parametrize("script, argv", [
    ("ppo", ["--total-timesteps", "2048"]),
    ("ppo_continuous_action", ["--env-id", "Pendulum-v1", "--total-timesteps", "1024", "--num-steps", "256",
                               "--num-minibatches", "4", "--update-epochs", "2"]),
])
def test_profile_times_every_phase_and_accounts_for_the_run(script, argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args, profile, total = profile_phases.run(script, argv)
    minibatches = args.num_iterations * args.update_epochs * args.num_minibatches
    assert profile.calls["env"] == profile.calls["rollout_forward"] == args.num_iterations * args.num_steps
    assert profile.calls["gae"] == args.num_iterations
    assert profile.calls["update_forward"] == profile.calls["backward"] == profile.calls["clip"] == minibatches
    assert profile.calls["optimizer"] == 2 * minibatches  # zero_grad and step
    lines = profile_phases.table(script, argv, args, profile, total)
    seconds = [float(line.split("|")[2]) for line in lines if line.startswith("| ") and "phase" not in line]
    assert len(seconds) == len(profile_phases.PHASES)
    assert sum(seconds) == pytest.approx(total, abs=0.01 * len(seconds))  # every second lands in a phase
    # the patched functions are restored afterwards
    assert torch.Tensor.backward.__qualname__ == "Tensor.backward"


def test_cleanrl_ratios_are_per_pair_medians():
    results = {"ours": [(10.0, 10.0), (12.0, 12.0), (11.0, 11.0)],
               "cleanrl_1_thread": [(20.0, 20.0), (30.0, 30.0), (25.0, 25.0)],
               "cleanrl_all_cores": [(30.0, 55.0), (24.0, 47.0), (33.0, 60.0)]}
    one_thread, all_cores = speed_vs_cleanrl.speed_lines("ppo.py", 1000, results, 3)
    cells = lambda line: [c.strip() for c in line.split("|")[1:-1]]
    assert cells(one_thread)[2:7] == ["CleanRL, 1 thread", "11.0", "25.0",
                                      f"{np.median([2.0, 2.5, 25 / 11]):.2f}", "2.00"]
    assert cells(all_cores)[5:9] == [f"{np.median([3.0, 2.0, 3.0]):.2f}", "2.00", "11.0", "55.0"]


def test_running_mean_averages_the_last_episodes():
    assert common.running_mean(np.array([1.0, 2.0, 3.0, 4.0, 5.0]), 2).tolist() == [1.0, 1.5, 2.5, 3.5, 4.5]
    assert common.running_mean(np.array([4.0, 0.0]), 100).tolist() == [4.0, 2.0]


def test_learning_curves_are_drawn_from_seeds(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "REPO", tmp_path)
    steps = np.arange(1, 301) * 10
    runs = [(steps, np.linspace(0, 500, 300) + noise) for noise in (0, 20, -20)]
    common.plot_returns("curves", {"a": runs, "b": runs[:2]}, "title", "python make.py", lines=[(475, "solved")])
    figure = tmp_path / "benchmarks" / "figures" / "curves.png"
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and figure.stat().st_size > 10_000


def test_solve_point_is_the_first_100_episode_mean_at_475():
    returns = np.r_[np.full(150, 400.0), np.full(200, 500.0)]
    steps, times = np.arange(len(returns)) * 100, np.arange(len(returns)) * 0.5
    solved_steps, solved_seconds = cartpole_vs_sb3.solve_point(steps, returns, times, 0.0)
    # the 100 episodes ending at episode i average >= 475 once at least 75 of them are 500s
    assert (solved_steps, solved_seconds) == (224 * 100, 224 * 0.5)
    json.dumps([solved_steps, solved_seconds])  # numpy integers would not be JSON: the rows are printed as JSON


def test_lstm_profile_times_two_replays_that_agree():
    import ppo_lstm
    args = ppo_lstm.parse_args(["--num-envs", "4", "--num-steps", "16", "--num-minibatches", "2", "--update-epochs", "1"])
    agent, storages = lstm_update_profile.rollouts(args)
    assert (~storages["untrained policy"].is_transition).any() and storages["no reset inside"].is_transition.all()
    for storage in storages.values():
        assert lstm_update_profile.same_logprobs(agent, storage, args) < 1e-5
        for way in ("a Python loop per time step (CleanRL)", "one nn.LSTM call per minibatch (ppo_lstm.py)"):
            assert lstm_update_profile.time_update(agent, storage, args, way, repeats=1) > 0
    sequence_us, cell_us, difference = lstm_update_profile.rollout_step(agent, 4, repeats=10)
    assert sequence_us > 0 and cell_us > 0 and difference < 1e-5


@pytest.mark.parametrize("label", lstm_cartpole_novel.RUNS)
def test_lstm_benchmark_runs_each_script_on_cartpole_without_velocities(label, tmp_path):
    result = lstm_cartpole_novel.run_script(label, 1, 1024, str(tmp_path))
    steps, returns = result["curve"]
    assert len(returns) > 5 and result["solved_steps"] is None and result["sps"] > 0


def test_lstm_norm_obs_benchmark_runs_with_and_without(tmp_path):
    import lstm_norm_obs

    results = lstm_norm_obs.measure(1, 1024, str(tmp_path))
    assert list(results) == lstm_norm_obs.LABELS and len(list(tmp_path.iterdir())) == 2
    for result in results.values():
        assert len(result["curve"][1]) > 5 and result["solved_steps"] is None


def test_lstm_benchmark_runs_recurrent_ppo():
    result = lstm_cartpole_novel.run_sb3(1, 256)  # one rollout of 8 envs x 32 steps, one update
    assert result["solved_steps"] is None and result["final_return"] < 100 and result["sps"] > 0


def test_lstm_benchmark_seed_lists_and_kept_recurrent_ppo_rows():
    assert lstm_cartpole_novel.seed_list("3") == [1, 2, 3] and lstm_cartpole_novel.seed_list("0") == []
    assert lstm_cartpole_novel.seed_list("4-6") == [4, 5, 6]
    kept = json.loads(lstm_cartpole_novel.SAVED_SB3.read_text())  # what --saved-sb3 puts in the table
    for seed, row in kept.items():
        assert int(seed) >= 1 and row["sps"] > 0 and row["date"] and row["command"].startswith("python benchmarks/")
        assert (row["solved_steps"] is None) == (row["solved_seconds"] is None)


def test_headless_and_windowed_games_learn_the_same_numbers(display, port, tmp_path):
    """The stretch goal's benchmark: its windowed launcher runs the game in a window (godot3-runner on the
    virtual display), and drawing changes how fast the game runs, never what is learned: the same seed
    gives the same returns headless and windowed."""
    windowed = godot_headless_windowed.launcher(tmp_path, "chase_windowed")
    assert "godot3-runner" in windowed.read_text()
    runs = [godot_headless_windowed.train(path, 1, 3, 2048, port, path == windowed)
            for path in (godot_headless_windowed.CHASE / "chase_discrete.x86_64", windowed)]
    assert all(run["sps"] > 0 for run in runs)
    assert len(runs[0]["curve"][1]) > 0 and np.array_equal(runs[0]["curve"][1], runs[1]["curve"][1])


def test_the_headless_windowed_table_gives_the_return_at_the_end_of_each_run():
    """Its "return at the end" column: the mean of the run's last 100 episodes, where a run that learns ends
    higher than it starts; the curve's last point is the same mean."""
    episodes = [argparse.Namespace(wall_time=1000.0 + i, value=float(i)) for i in range(300)]
    run = godot_headless_windowed.returns_of(episodes, started=1000.0)
    assert run["final"] == np.mean(np.arange(200, 300)) == run["curve"][1][-1]
    np.testing.assert_array_equal(run["curve"][0], np.arange(300.0))
    assert np.isnan(godot_headless_windowed.returns_of([], started=0.0)["final"])


def test_the_gdscript_speed_benchmark_times_a_policy_on_godot_3_and_on_godot_4_6_s_web_build(tmp_path):
    needs_godot()
    godot4_web.needs_godot4()
    gdscript_speed = benchmark("gdscript_speed")
    layout, heads = [("obs", (4,))], [("move", "discrete", 5)]
    agent = gdscript_speed.ppo_godot.Agent(layout, heads)
    usec, size = gdscript_speed.usec_per_decision(agent, layout, heads, 200, tmp_path)
    (web,) = gdscript_speed.usec_on_godot4([(agent, layout, heads)], 200, tmp_path)
    assert 0 < usec < 100_000 and 0 < web < 100_000 and size > 10_000
    assert gdscript_speed.frame_share(1000 / 60 * 1000 / 16) == "100.0% / 12.5%"


def test_action_repeat_benchmark_passes_its_flags_to_the_game(port):
    """At 8 ticks an action the Chase game's agents reach their targets in fewer actions than at 1."""
    needs_godot()
    one, eight = (godot_action_repeat.run(["--action-repeat", repeat], 1, 4096, port) for repeat in ("1", "8"))
    assert one["sps"] > 0 and eight["sps"] > 0
    assert eight["length"] < one["length"] <= 100


def test_the_demonstrations_benchmark_counts_catches_over_a_running_window():
    """chase_tag_demos.py: an episode is a catch when it ends before the time-out; the steps to a catch rate are
    the first episode end where the running rate reaches it."""
    demos = benchmark("chase_tag_demos")
    catches = np.array([0.0, 0.0, 1.0, 1.0, 1.0, 1.0])
    assert demos.first_step_at((np.arange(1, 7) * 10, catches), 0.5, window=2) == 30
    assert demos.first_step_at((np.arange(1, 7) * 10, catches), 1.0, window=3) == 50
    assert demos.first_step_at((np.arange(1, 7) * 10, np.zeros(6)), 0.5, window=2) is None


def test_the_godot4_benchmark_counts_an_episode_the_same_only_if_agent_length_and_ending_are():
    matches = benchmark("godot4_matches")
    godot3 = [("shared_policy", 0, 1.0, 12, "terminated"), ("shared_policy", 1, -0.5, 200, "truncated")]
    assert matches.same_episodes(godot3, [("shared_policy", 0, 1.00001, 12, "terminated"),
                                          ("shared_policy", 1, -0.5, 200, "truncated")]) == 2  # returns apart
    assert matches.same_episodes(godot3, [("shared_policy", 0, 1.0, 13, "terminated"),
                                          ("shared_policy", 1, -0.5, 200, "truncated")]) == 1  # a length
    assert matches.same_episodes(godot3, [("shared_policy", 0, 1.0, 12, "truncated"),
                                          ("shared_policy", 2, -0.5, 200, "truncated")]) == 0  # an ending, an agent
    assert matches.same_episodes(godot3, [("runner", 0, 1.0, 12, "terminated")]) == 0  # a policy


def test_the_godot4_benchmark_compares_the_browser_with_godot_3_episode_by_episode(tmp_path, monkeypatch):
    needs_godot()
    godot4_web.needs_godot4()
    matches = benchmark("godot4_matches")
    run_script("ppo_godot.py", "--export-checkpoint", REPO / "tests" / "checkpoints" / "ppo_godot_153f0a8_chase_discrete.pt",
               "--gdscript-export-path", tmp_path / "discrete.gd", cwd=tmp_path)
    monkeypatch.setattr(matches, "export_policies", lambda folder: {"discrete": [tmp_path / "discrete.gd"]})
    (row,) = matches.browser_against_godot3(tmp_path, 16)[2:]
    assert row.startswith("| discrete | 16 (Godot 4.6: 16) | 16 | ")
    assert row.split(" | ")[5] == row.split(" | ")[6].rstrip(" |")  # the same mean return on both engines


def test_the_self_play_benchmark_s_sampled_column_draws_from_pi_not_the_greedy_action(tmp_path):
    self_play = benchmark("chase_tag_self_play")
    layouts = {"chaser": ([("obs", (4,))], [("move", "discrete", 5)]),
               "runner": ([("obs", (5,))], [("move", "continuous", 2)])}
    torch.manual_seed(0)
    model = {f"agents.{name}.{key}": value for name, layout in layouts.items()
             for key, value in self_play.ppo_godot_multi_policy.Agent(*layout).state_dict().items()}
    policies = {name: {"obs_layout": obs_layout, "action_heads": heads} for name, (obs_layout, heads) in layouts.items()}
    torch.save({"args": {"policies": policies}, "model": model}, tmp_path / "ppo_godot_self_play.pt")
    for name, ([(_, shape)], _) in layouts.items():
        obs = np.zeros((256, *shape), np.float32)  # one observation, 256 times
        actions = [str(action) for action in self_play.as_in_training(tmp_path, name, 1)(obs, None)]
        assert len(set(actions)) >= 5, name  # all the chaser's moves; greedy, one
        assert actions == [str(action) for action in self_play.as_in_training(tmp_path, name, 1)(obs, None)]  # seeded


def test_the_memory_benchmark_judges_its_first_margin_on_the_lowest_and_highest_seeds_not_the_means():
    memory = benchmark("godot_memory")
    finals = {("ppo_godot_lstm.py", "memory task"): [3.0, 9.0, 9.0], ("ppo_godot.py", "memory task"): [2.0, 2.0, 4.0],
              ("ppo_godot_lstm.py", "plain Chase"): [10.0], ("ppo_godot.py", "plain Chase"): [10.0]}
    # the means are 4.33 apart, the lowest LSTM seed 1.0 below the highest ppo_godot.py seed
    first = memory.margin_lines(finals, {"ppo_godot.py": [2.0], "ppo_godot_lstm.py": [1.0]})[2]
    assert first.startswith("1. memory task, lowest ppo_godot_lstm.py seed minus highest ppo_godot.py seed: -1.00 ")
    assert first.endswith(": missed")


def test_the_memory_benchmark_reads_each_episode_with_its_step_and_minute(tmp_path):
    needs_godot()
    memory = benchmark("godot_memory")
    args = argparse.Namespace(port=free_port(), total_timesteps=2048, ppo_args="--num-steps 32")
    run = memory.train("ppo_godot_lstm.py", "memory task", 1, args)
    assert len(run["steps"]) == len(run["minutes"]) == len(run["returns"]) > 0
    assert run["steps"].max() <= 2048 and (np.diff(run["minutes"]) >= 0).all() and 0 < run["minutes"][-1] < 5
    assert run["sps"] > 0 and memory.final(run) == pytest.approx(run["returns"][-memory.WINDOW:].mean())


def test_the_time_outs_benchmark_compares_v_and_g_at_30_actions_with_time_outs_off(tmp_path, monkeypatch):
    needs_godot()
    time_outs = benchmark("godot_time_outs")
    launcher = time_outs.no_time_out_launcher(tmp_path).read_text()
    assert "--max_steps=1000" in launcher and "--max_steps=30" not in launcher and "dirname" not in launcher
    (tmp_path / "benchmarks").mkdir()
    monkeypatch.setattr(time_outs.common, "REPO", tmp_path)  # the tables and the figure go there
    rows = time_outs.main(["--seeds", "1", "--total-timesteps", "2048", "--eval-states", "20", "--jobs", "2"])
    assert sorted(rows) == sorted((variant, 1) for variant in time_outs.VARIANTS)
    for row in rows.values():
        for at in time_outs.AT:
            v, g = row[at]
            assert len(v) == len(g) and np.isfinite(v).all() and np.isfinite(g).all()
        assert len(row[30][0]) >= 20 and len(row[0][0]) >= 20 and (row["lengths"] >= 1).all()
    lines = (tmp_path / "benchmarks" / "results" / "godot_time_outs.md").read_text().splitlines()
    assert lines[0].startswith("Command: `python benchmarks/godot_time_outs.py --seeds 1 --total-timesteps 2048 ")
    body = [line.split(" | ") for line in lines if line.startswith("| ") and not line.startswith("| variant")]
    by_actions = body[4:]  # the second table: V - G by actions taken, one row per variant
    assert [cells[0] for cells in by_actions] == ["| " + variant for variant in time_outs.VARIANTS]
    assert all(len(cells) == len(time_outs.AT) + 3 for cells in by_actions)
    body = body[:4]
    assert [(cells[0], cells[1]) for cells in body] == [("| " + variant, seed) for variant in time_outs.VARIANTS
                                                          for seed in ("1", "mean")]
    assert all(len(cells) == 11 for cells in body)
    for variant, cells in zip(time_outs.VARIANTS, body[::2]):  # each seed's row holds that run's numbers
        v, g = rows[variant, 1][30]
        assert float(cells[2]) == pytest.approx(rows[variant, 1]["final"], abs=0.005)
        assert int(cells[3]) == len(v) and float(cells[6]) == pytest.approx(np.mean(v - g), abs=0.005)
    margins = [line for line in lines if line[:3] in ("1. ", "2. ", "3. ", "4. ")]
    assert len(margins) == 4 and all(line.endswith((": met", ": missed")) for line in margins)
    figure = tmp_path / "benchmarks" / "figures" / "godot_time_outs.png"
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


class TimeOutsOff:
    """The time-out game played with time-outs off, stood in: 2 agents whose episodes last 70 and 80 actions,
    1 reward every step; each observes the actions taken in its episode; a finished agent resets on the spot."""
    num_envs = 2

    def __init__(self):
        self.lengths, self.taken = np.array([70, 80]), np.zeros(2, int)

    def reset(self, seed):
        return self.taken[:, None].astype(np.float32), {}

    def step(self, action):
        self.taken += 1
        done = self.taken == self.lengths
        self.taken[done] = 0
        return self.taken[:, None].astype(np.float32), np.ones(2), done, np.zeros(2, bool), {}

    def close(self):
        pass


class ValueIsActionsTaken:
    def get_value(self, obs):
        return obs

    def get_action(self, obs):
        return torch.zeros(len(obs))


def test_the_time_outs_benchmark_s_g_is_the_discounted_return_that_followed(tmp_path, monkeypatch):
    time_outs = benchmark("godot_time_outs")
    monkeypatch.setattr(time_outs.ppo_godot, "load_checkpoint", lambda path: None)
    monkeypatch.setattr(time_outs.ppo_godot, "saved_agent", lambda checkpoint, path: ValueIsActionsTaken())
    monkeypatch.setattr(time_outs.ppo_godot, "make_envs", lambda args: TimeOutsOff())
    monkeypatch.setattr(time_outs.ppo_godot, "check_plays", lambda agent, envs, path: None)
    found = time_outs.value_errors(tmp_path, CHASE["discrete"], 1, states=3)
    gamma = time_outs.GAMMA
    for at in time_outs.AT:
        v, g = found[at]
        assert len(v) >= 2 and (v == at).all()  # V at the states where `at` actions had been taken
        # then 70 - at or 80 - at rewards of 1: G = 1 + gamma + ... + gamma^(length - at - 1)
        assert set(np.round(g, 9)) == {round((1 - gamma ** (length - at)) / (1 - gamma), 9) for length in (70, 80)}
    assert len(found[time_outs.MAX_STEPS][0]) >= 3 and set(found["lengths"]) == {70, 80}


def test_the_time_outs_margin_3_holds_the_bootstrapped_bias_within_0_5_of_0_on_both_sides():
    time_outs = benchmark("godot_time_outs")
    bootstrapped, terminal = time_outs.VARIANTS

    def third_margin(bias):  # the bootstrapped variant's mean V - G at the 30-action states, the terminal one's -2
        rows = {(bootstrapped, 1): {"final": 5.0, time_outs.MAX_STEPS: (np.array([bias]), np.array([0.0]))},
                (terminal, 1): {"final": 5.0, time_outs.MAX_STEPS: (np.array([-2.0]), np.array([0.0]))}}
        line = time_outs.margin_lines(rows)[4]
        assert line.startswith("3. bootstrapped mean V - G there")
        return line.rsplit(": ", 1)[1]

    assert [third_margin(bias) for bias in (0.3, -0.3, 0.8, -0.8)] == ["met", "met", "missed", "missed"]


def test_the_time_outs_bootstrapped_variant_and_its_control_bootstrap_the_terminal_one_not(tmp_path, monkeypatch):
    time_outs = benchmark("godot_time_outs")
    commands = []

    def run(argv, cwd, **kwargs):  # the training, stood in: its command kept, its run folder made
        commands.append(argv)
        (cwd / "runs" / "run").mkdir(parents=True)

    monkeypatch.setattr(time_outs, "subprocess", argparse.Namespace(run=run, STDOUT=None))
    monkeypatch.setattr(time_outs, "read_run", lambda run_dir: None)
    monkeypatch.setattr(time_outs, "episode_curve", lambda run: (np.arange(3), np.zeros(3)))
    args = argparse.Namespace(total_timesteps=2048, ppo_args="")
    for variant in time_outs.ALL:
        time_outs.train(variant, 1, args, tmp_path, launcher=CHASE["discrete"])
    bootstraps = [time_outs.ppo_godot.parse_args(argv[2:]).bootstrap_truncation for argv in commands]
    assert bootstraps == [variant != "terminal (--bootstrap-truncation false)" for variant in time_outs.ALL]
    assert [argv[argv.index("--env-path") + 1] for argv in commands] == [
        str(time_outs.GAME), str(time_outs.GAME), CHASE["discrete"]]  # the control trains without time-outs


def test_the_starter_benchmark_counts_an_episode_as_timed_out_where_its_info_says_timelimit_truncated():
    starter = benchmark("starter_learns")
    tally = starter.Tally()
    for message in [{"type": "env_info", "n_agents": 2},
                    {"type": "step", "reward": [0.5, 0.25], "done": [False, False], "info": [{}, {}]},
                    {"type": "step", "reward": [1.0, 0.25], "done": [True, True],
                     "info": [{}, {"TimeLimit.truncated": True}]},
                    {"type": "step", "reward": [0.1, 0.0], "done": [True, False],
                     "info": [{"TimeLimit.truncated": False}, {}]}]:
        tally.read(message)
    # (agent-steps so far, return, actions, timed out)
    assert tally.episodes == [(4, 1.5, 2, False), (4, 0.5, 2, True), (6, 0.1, 1, False)]
    assert starter.last(np.array(tally.episodes, dtype=float))[1] == pytest.approx(2 / 3)  # reached the goal


def test_the_starter_benchmark_puts_each_episode_where_it_began():
    starter = benchmark("starter_learns")
    # 2 agents: episodes that ended at agent-steps 4, 6, 8 and 12 after 2, 2, 4 and 1 actions began at 0, 2, 0, 10
    ends, lengths, returns = np.array([4, 6, 8, 12]), np.array([2, 2, 4, 1]), np.array([1.0, 2.0, 3.0, 4.0])
    began, in_order = starter.by_start(ends, lengths, 2, returns)
    # in the order they began; the one begun after 12 - 4 x 2 agent-steps is left out: a longer episode begun as
    # late would not have ended by the run's end
    assert began.tolist() == [0, 0, 2] and in_order.tolist() == [1.0, 3.0, 2.0]


def test_the_starter_benchmark_puts_the_sync_node_before_or_after_the_levels_as_train_tscn_has_it():
    starter = benchmark("starter_learns")
    scene = (starter.STARTER / "train.tscn").read_text()
    level, sync_first = starter.level_scene(scene)
    assert sync_first and "sync.gd" not in level and 'name="Sync"' not in level
    assert level.count("[node ") == scene.count("[node ") - 1
    sync = scene[scene.index('[node name="Sync"'):scene.index("[node ", scene.index('[node name="Sync"') + 1)]
    assert starter.level_scene(scene.replace(sync, "") + "\n" + sync) == (level, False)  # Sync moved to the end
    nodes = lambda text: re.findall(r'^\[node name="(\w+)"', text, flags=re.M)  # noqa: E731
    trained = starter.game_files(starter.STARTER, 2)[starter.TRAIN_SCENE]
    assert nodes(trained) == ["StarterLearns", "Sync", "Level0", "Level1"]
    assert nodes(starter.training_scene(starter.LEVEL_SCENE, 2, 1000, False)) == ["StarterLearns", "Level0", "Level1",
                                                                                   "Sync"]
