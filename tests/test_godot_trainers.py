"""Issue 61's groundwork: the demo game's slow flag (--tick_cost_ms) changes nothing the game sends,
benchmarks/godot_trainers.py's measures on made-up runs, godot_rl_fixes.py's seeds, trainer_startup.py's games, and
godot_trainers.py's tiny mode, which runs every trainer and writes tables that read back."""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import types

import numpy as np
import pytest

import ppo_godot
from conftest import CHASE, REPO, benchmark, needs_godot, needs_part

godot_trainers = benchmark("godot_trainers")
godot_rl_fixes = benchmark("godot_rl_fixes")


def cpu_seconds(pid):
    """User and system CPU-seconds of a running process, from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def play_messages(game, flags, actions):
    """Everything the game sends, as JSON, for the same seed and actions: env_info, the reply to reset,
    then the reply to each action message; and the CPU-seconds the game process spent stepping."""
    env_info, first, play = game(CHASE["discrete"], *flags)
    sent = [env_info, first]
    start = cpu_seconds(play.pid)
    sent += [play(step_actions) for step_actions in actions]
    return sent, cpu_seconds(play.pid) - start


def test_the_slow_flag_changes_nothing_the_game_sends_and_keeps_the_game_busy(game):
    rng = np.random.default_rng(0)
    # 120 steps of random moves: some of the 16 agents reach their target, others time out (100 actions)
    actions = [[{"move": int(m)} for m in rng.integers(0, 5, 16)] for _ in range(120)]
    fast, fast_cpu = play_messages(game, [], actions)
    slow, slow_cpu = play_messages(game, ["--tick_cost_ms=10"], actions)
    assert any(any(reply["done"]) for reply in fast[2:])  # the steps cover ends and resets
    assert any(info["truncated"] for reply in fast[2:] for info in reply["info"])
    assert slow == fast  # observations, rewards, dones and infos, value for value
    # 120 ticks busy for 10 ms each is 1.2 CPU-seconds on a free core; a quarter of that, however busy the
    # machine, is far more than the fast game's own stepping
    assert slow_cpu - fast_cpu > 0.3, (slow_cpu, fast_cpu)


def test_the_threshold_is_reached_at_the_first_episode_whose_last_100_average_it():
    times, returns = np.arange(300.0) * 2, np.r_[np.zeros(150), np.full(150, 10.0)]
    # the 100 episodes ending at episode i hold i - 149 tens: their mean reaches 9 at i = 239
    assert godot_trainers.first_reach(times, returns, 9.0) == 478.0
    assert godot_trainers.first_reach(times[:239], returns[:239], 9.0) is None


def runs(**minutes_by_row):
    """{row: [one run a seed (1, 2, ...) with its minutes to the threshold]}"""
    return {row: [dict(row=row, seed=seed, minutes_to_threshold=m) for seed, m in enumerate(minutes, 1)]
            for row, minutes in minutes_by_row.items()}


def test_the_margins_are_judged_per_seed_and_on_the_medians():
    fast = runs(**{"ppo_godot.py": [1.0, 2.0, 1.5], "rllib": [2.5, None, 9.0], "sb3": [3.0, 5.0, 100.0]})
    slow = runs(**{"ppo_godot.py": [10.0, 10.0, 10.0], "rllib": [9.0, 11.0, 12.0]})
    games = {"fast Chase": fast, "slow Chase": slow}
    first, second = godot_trainers.margin_lines(games, list(games))
    assert first.endswith("missed (slow Chase, seed 1: RLlib (scale/ppo_rllib_godot.py) (unpaced)).")
    # medians on fast Chase: ppo_godot.py 1.5; RLlib 9.0 (a seed that never reaches counts as infinitely late);
    # SB3 5.0 (its mean would be 36): the best other is SB3, 3.3x
    assert "SB3 (godot-rl), its example's settings (unpaced)" in second and "3.3x" in second and second.endswith("met.")
    slow["rllib"][0]["minutes_to_threshold"] = 10.0  # a tie is not first
    assert godot_trainers.margin_lines(games, list(games))[0].endswith("seed 1: RLlib (scale/ppo_rllib_godot.py) (unpaced)).")
    slow["rllib"][0]["minutes_to_threshold"] = 10.5
    fast["sb3"][2]["minutes_to_threshold"] = 2.0  # SB3's median 3.0: 2.0x
    assert [line[-5:] for line in godot_trainers.margin_lines(games, list(games))] == [" met.", " met."]
    fast["sb3"][1]["minutes_to_threshold"] = 2.5  # SB3's median 2.5: 1.7x
    first, second = godot_trainers.margin_lines(games, list(games))
    assert first.endswith("met.") and "1.7x" in second and second.endswith("missed.")


def test_each_of_ppo_godot_s_rows_is_judged_against_the_other_trainers_alone():
    fast = runs(**{"ppo_godot.py": [1.0, 2.0, 1.5], "ppo_godot.py-slow-game": [0.5, 0.5, 3.0], "sb3": [3.0, 5.0, 2.0]})
    slow = runs(**{"ppo_godot.py": [10.0, 10.0, 10.0], "sb3": [9.0, 11.0, 12.0]})
    games = {"fast Chase": fast, "slow Chase": slow}
    # the slow game's flags beat the defaults on seeds 1 and 2: no miss for either, only SB3 counts
    first, second = godot_trainers.margin_lines(games, list(games))
    assert first.endswith("missed (slow Chase, seed 1: SB3 (godot-rl), its example's settings (unpaced)).")
    assert "2.0x" in second and second.endswith("met.")  # SB3's median 3.0 against 1.5
    mine = "ppo_godot.py-slow-game"
    assert godot_trainers.margin_lines(games, list(games), mine)[0].startswith("Margins for ppo_godot.py, a slow game's")
    slow[mine] = runs(**{mine: [8.0, 8.0, 8.0]})[mine]
    first, second = godot_trainers.margin_lines(games, list(games), mine)
    assert first.endswith("missed (fast Chase, seed 3: SB3 (godot-rl), its example's settings (unpaced)).")
    assert "6.0x" in second and second.endswith("met.")  # SB3's median 3.0 against 0.5 (0.5, 0.5, 3.0)


def test_the_return_by_time_is_the_mean_of_the_last_100_episodes_ended_by_then_median_over_seeds():
    ends = np.arange(1.0, 201.0)  # episode i (1, 2, ...) ends i seconds after the start
    first = dict(curve=[ends.tolist(), np.r_[np.zeros(100), np.full(100, 10.0)].tolist()])
    assert godot_trainers.by_time([first], 150.0) == 5.0  # episodes 51-150: 50 zeros, 50 tens
    assert godot_trainers.by_time([first], 1000.0) == 10.0  # the run had ended: its last 100
    assert godot_trainers.by_time([first], 10.0) == 0.0  # fewer than 100 so far: those
    second, third = (dict(curve=[ends.tolist(), np.full(200, value).tolist()]) for value in (2.0, 3.0))
    assert godot_trainers.by_time([first, second, third], 150.0) == 3.0
    late = dict(curve=[(ends + 20).tolist(), np.ones(200).tolist()])
    assert godot_trainers.by_time([first, late], 15.0) is None  # a seed had no episode yet


def test_a_run_on_godot_rl_s_games_counts_the_agent_steps_of_all_its_games(tmp_path):
    """godot_rl_fixes.py's records, one file a game: each episode is placed at the agent-steps all the games had
    played when it ended, and the run's agent-steps are every game's last count."""
    (tmp_path / "episodes").mkdir()
    games = {"a": [dict(t=1.0, steps=16, r=1.0), dict(t=3.0, steps=32, r=2.0), dict(t=5.0, steps=48, closed=True)],
             "b": [dict(t=2.0, steps=16, r=3.0), dict(t=6.0, steps=32, closed=True)]}
    for name, lines in games.items():
        (tmp_path / "episodes" / f"episodes-{name}.jsonl").write_text("\n".join(map(json.dumps, lines)) + "\n")
    for row in ("sb3", "sample-factory"):
        times, returns, played, steps = godot_trainers.episodes_of(row, tmp_path)
        assert times.tolist() == [1.0, 2.0, 3.0] and returns.tolist() == [1.0, 3.0, 2.0]
        assert played.tolist() == [16, 32, 48] and steps == 48 + 32


class AgentsOfEveryPace:
    """A vector env of 4 agents (ppo_godot.py's RecordEpisodes infos): agent i's episodes last i + 1 steps and
    return i."""
    num_envs = 4

    def reset(self):
        self.steps = 0
        return np.zeros((4, 2), np.float32), {}

    def step(self, actions):
        assert actions.shape == (4, 1)
        self.steps += 1
        ended = self.steps % np.arange(1, 5) == 0  # agent 0 ends an episode every step
        infos = {"episode": {"r": np.arange(4.0)}, "_episode": ended}
        return np.zeros((4, 2), np.float32), np.zeros(4), ended, np.zeros(4, bool), infos

    def close(self):
        pass


def test_greedy_play_takes_as_many_episodes_from_each_agent(monkeypatch):
    monkeypatch.setattr(godot_trainers, "ppo_godot_envs", lambda game, seed: AgentsOfEveryPace())
    # 6 episodes of 4 agents: each agent's first 2; the fast agents' later episodes are left out
    assert godot_trainers.play_greedy(lambda obs: np.zeros(len(obs)), 101, 6) == np.mean([0, 1, 2, 3])


def test_a_run_s_start_up_is_the_time_to_its_first_finished_episode(tmp_path, monkeypatch):
    started = 1000.0
    monkeypatch.setattr(godot_trainers, "command", lambda *a: ["trainer"])
    monkeypatch.setattr(godot_trainers, "run_process", lambda argv, folder, cap_s: (started, 60.0, 9.0, 0.0, False, 0))
    episodes = np.array([1003.5, 1004.0, 1050.0]), np.array([1.0, 2.0, 3.0]), np.array([32, 64, 96]), 100
    monkeypatch.setattr(godot_trainers, "episodes_of", lambda row, folder: episodes)
    monkeypatch.setattr(godot_trainers, "greedy_return", lambda row, folder, seed, n: (None, "none"))
    args = argparse.Namespace(max_minutes=15, eval_episodes=32, keep_folders=False)
    run = godot_trainers.run_one("ppo_godot.py", "game", 1, 96, 9.0, args, tmp_path)
    assert run["first_episode_seconds"] == 3.5 and run["curve"][0] == [3.5, 4.0, 50.0]
    why = godot_trainers.why_lines({"ppo_godot.py": [run]})
    assert "seconds to the first finished episode" in why[0] and why[2].split(" | ")[3] == "3.5"


def made_up_runs(rows):
    """{row: one finished run} with a curve, for the tables and the figure."""
    return {row: [dict(row=row, seed=1, failed=False, capped=False, steps=4096, seconds=10.0, cpu=5.0,
                       cpu_unreported=0.0, minutes_to_threshold=None, steps_to_threshold=None,
                       first_episode_seconds=2.0, final=1.0, greedy=None, greedy_of="none",
                       curve=[[2.0, 3.0], [1.0, 1.0], [32, 64]])]
            for row in rows}


def test_only_the_rows_run_as_their_examples_run_them_are_labelled_paced(monkeypatch):
    runs = made_up_runs(godot_trainers.ROWS)
    paced = {row for row in godot_trainers.ROWS if row.endswith("-paced")}
    pacing = [line.split(" | ")[1] for line in godot_trainers.seed_lines(runs)[2:]]
    assert pacing == ["paced" if row in paced else "unpaced" for row in godot_trainers.ROWS]
    labels = []
    monkeypatch.setattr(godot_trainers, "draw_seeds", lambda ax, label, curves: labels.append(label))
    monkeypatch.setattr(godot_trainers, "save_figure", lambda fig, *a, **k: None)
    info = dict(scripted=10.0, threshold=9.0, budgets={"fast Chase": 4096})
    godot_trainers.plot(None, {"fast Chase": runs}, info, "python benchmarks/godot_trainers.py")
    assert [label.endswith(", paced") for label in labels] == [row in paced for row in godot_trainers.ROWS]


def test_the_rllib_cpu_seconds_of_runs_from_before_unreported_are_marked_a_lower_bound():
    runs = made_up_runs(["rllib", "sb3"])
    cpu = lambda: [line.split(" | ")[4] for line in godot_trainers.row_lines(runs)[2:]]  # noqa: E731
    assert cpu() == ["5", "5"]
    for row in runs.values():
        del row[0]["cpu_unreported"]  # kept by --resume from an invocation before Unreported
    assert cpu() == ["5 (a lower bound: run before Ray's workers and their games were counted)", "5"]


def test_cpu_seconds_count_a_process_whose_parent_ignores_sigchld():
    """As Ray's raylet does with a worker, whose game burns the CPU: the kernel reaps the child and drops its CPU
    time, and that of the grandchild it waited for, which getrusage then never sees; Unreported reads them while
    they run (all but their last POLL_S seconds at most)."""
    burn = "import time\nstart = time.process_time()\nwhile time.process_time() - start < 2:\n    pass"

    def run(code, sigchld):  # a process that sets its SIGCHLD handling, then runs code in a child and waits for it
        return (f"import signal, subprocess, sys\nsignal.signal(signal.SIGCHLD, signal.{sigchld})\n"
                f"subprocess.run([sys.executable, '-c', {code!r}])")
    # the child handles SIGCHLD as usual, as Ray's workers do (the parent's SIG_IGN would pass to it): it waits for
    # the grandchild itself
    parent = subprocess.Popen([sys.executable, "-c", run(run(burn, "SIG_DFL"), "SIG_IGN")])
    with godot_trainers.Unreported(parent.pid) as unreported:
        assert parent.wait() == 0
    (child,) = [key for key, ((ppid, _), _, _) in unreported.seen.items() if ppid == parent.pid]
    assert len(unreported.seen) == 2  # and the grandchild
    assert 1.0 <= unreported.seconds(reaped=set()) <= 2.5
    assert unreported.seconds(reaped={child[0]}) == 0  # had this process reaped it, getrusage would count both


def test_a_row_whose_part_is_missing_stops_the_benchmark_in_one_line_before_any_game_starts(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as an install of requirements.txt alone
    monkeypatch.setattr(godot_trainers, "SF_PYTHON", tmp_path / "no-venv" / "bin" / "python")
    for start in ("become_subreaper", "scripted_client", "run_one"):
        monkeypatch.setattr(godot_trainers, start, lambda *a, **k: pytest.fail("a game started"))
    for rows, missing in (("ppo_godot.py,rllib", ["requirements-scale.txt"]),
                          ("sample-factory", ["--setup"]), ("rllib,sample-factory-paced", ["Ray", "--setup"])):
        with pytest.raises(SystemExit) as stop:
            godot_trainers.main(["--tiny", "--trainers", rows])
        message = str(stop.value.code)
        assert message.startswith("godot_trainers.py: error: ") and "\n" not in message
        assert all(part in message for part in missing), message


class StartedGame:
    """Stands in for godot_rl_fixes.FixedGodotEnv: the arguments a game would be started with."""

    def __init__(self, **kwargs):
        self.kwargs = kwargs


def test_sample_factory_s_games_are_seeded_as_godot_rl_seeds_them(monkeypatch):
    """The probe game (no env_config) gets gdrl's --seed, env i's game seed + 1 + i; only the games that train
    record their episodes."""
    monkeypatch.setitem(sys.modules, "godot_rl.wrappers.sample_factory_wrapper",  # Sample Factory's venv has it
                        types.SimpleNamespace(SampleFactoryEnvWrapperNonBatched=object))
    monkeypatch.setattr(godot_rl_fixes, "FixedGodotEnv", StartedGame)
    cfg = argparse.Namespace(batched_sampling=False)
    games = [godot_rl_fixes.make_sample_factory_env("game.x86_64", "gdrl", cfg, env_config, seed=5, episodes="e")
             for env_config in (None, argparse.Namespace(env_id=0), argparse.Namespace(env_id=1))]
    assert [(game.kwargs["seed"], game.kwargs["episodes"]) for game in games] == [(5, None), (6, "e"), (7, "e")]


def test_gdrl_s_seed_seeds_sample_factory_s_networks_and_its_games(monkeypatch, tmp_path):
    registered = {}
    for name, module in {  # what Sample Factory's venv has, stood in
        "godot_rl.main": types.SimpleNamespace(  # gdrl's arguments: --seed=3
            get_args=lambda: (argparse.Namespace(env_path="game", speedup=1, seed=3), [])),
        "godot_rl.wrappers.sample_factory_wrapper": types.SimpleNamespace(  # Sample Factory's config, its seed unset
            parse_gdrl_args=lambda args, argv, evaluation: argparse.Namespace(seed=None)),
        "sample_factory.envs.env_utils": types.SimpleNamespace(register_env=registered.__setitem__),
        "sample_factory.train": types.SimpleNamespace(run_rl=lambda cfg: cfg),
    }.items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(sys, "argv", ["godot_rl_fixes.py", "--env=gdrl", "--env_path=game", "--seed=3",
                                      "--framerate=60", f"--episodes={tmp_path}"])
    assert godot_rl_fixes.sample_factory_main().seed == 3  # its networks
    assert registered["gdrl"].keywords == dict(speedup=1, seed=3, framerate=60, episodes=str(tmp_path))  # its games


class LaunchedGames:
    def __init__(self, launched, trainer, games):
        launched[trainer] = games

    def reset(self, **kwargs):
        pass

    def close(self):
        pass


def test_the_start_up_benchmark_launches_2_games_for_each_trainer(monkeypatch, capsys):
    """trainer_startup.py's code for each trainer, run here with the games it launches recorded instead."""
    startup = benchmark("trainer_startup")
    launched = {}
    monkeypatch.setattr(ppo_godot, "GodotVecEnv", lambda args: LaunchedGames(launched, "ppo_godot.py", args.n_parallel))
    monkeypatch.setattr(godot_rl_fixes, "stable_baselines_games", lambda game, n_parallel, seed, episodes, **flags:
                        LaunchedGames(launched, "SB3 (godot-rl)", n_parallel))
    from stable_baselines3.common import vec_env
    monkeypatch.setattr(vec_env, "VecMonitor", lambda env: env)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the code puts its folder first
    for code in startup.CODE.values():
        exec(code, {})
    assert launched == {trainer: 2 for trainer in startup.CODE}
    assert capsys.readouterr().out.count("seconds ") == len(startup.CODE)


def table(markdown, game):
    """{(trainer, pacing): the row's other cells} of a game's first table in the benchmark's markdown."""
    section = markdown.split(f"### {game}:")[1].split("\n\n")[1]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in section.splitlines()[2:]]
    return {(row[0], row[1]): row[2:] for row in rows}


def number(text):
    return float(text.split()[0].replace(",", ""))


def run_tiny(out, *argv):
    needs_godot()
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "godot_trainers.py"), "--tiny", "--out", str(out),
                           *argv], capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    markdown = (out / "results" / "godot_trainers_tiny.md").read_text()
    assert (out / "figures" / "godot_trainers_tiny.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return markdown, json.loads((out / "results" / "godot_trainers_tiny_runs.json").read_text())


def check_rows(rows, runs, game, budget):
    """Each row ran and measured: the steps its games played, their speed and CPU, the return at the end."""
    for key, cells in rows.items():
        played, speed, cpu, minutes, reaching, end = cells[:6]
        assert number(played) >= budget and number(speed) > 0 and number(cpu) > 0, (key, cells)
        assert minutes == "never" or number(minutes) > 0
        assert reaching in ("0/1", "1/1")
    for row, seeds in runs[game].items():
        assert [r["seed"] for r in seeds] == [1] and not seeds[0]["failed"] and not seeds[0]["capped"]
        assert seeds[0]["steps"] >= budget and seeds[0]["episodes"] > 0


TINY_ROWS = ["ppo_godot.py", "sb3", "rllib"]  # one row of each trainer the suite can run (the SB3 variants differ
# only in settings and pacing, ppo_godot.py's slow-game row in its flags); the whole --tiny run, every row, takes
# about 5 minutes here


def test_medium_and_slow_chase_are_the_demo_game_with_their_own_tick_costs_side_by_side(tmp_path):
    """Issue 67's medium Chase beside slow Chase: each a launcher of its own in one folder, passing its
    --tick_cost_ms on to the demo game; a game the benchmark does not know is refused in one line."""
    medium = godot_trainers.slow_game(tmp_path, godot_trainers.MEDIUM_TICK_COST_MS, "medium")
    slow = godot_trainers.slow_game(tmp_path, godot_trainers.TICK_COST_MS)
    assert medium != slow and medium.name.endswith(".x86_64") and os.access(medium, os.X_OK)
    assert medium.read_text().endswith(f'"$@" --tick_cost_ms={godot_trainers.MEDIUM_TICK_COST_MS}\n')
    assert slow.read_text().endswith(f'"$@" --tick_cost_ms={godot_trainers.TICK_COST_MS}\n')
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "godot_trainers.py"), "--games", "fast,quick"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.splitlines()[-1].endswith(
        "error: unknown games ['quick']: pick from fast, medium, slow"), proc.stderr


def test_the_slow_game_row_is_ppo_godot_py_with_the_slow_game_flags_and_its_exports(tmp_path):
    plain = godot_trainers.command("ppo_godot.py", "game.x86_64", 1, 4096, tmp_path)
    slow = godot_trainers.command("ppo_godot.py-slow-game", "game.x86_64", 1, 4096, tmp_path)
    assert slow == plain + ["--num-steps", "16", "--num-minibatches", "8", "--update-epochs", "10"]
    assert "--onnx-export-path" in slow  # played greedily from its ONNX export, as ppo_godot.py's row is


def ray_missing():
    """Why the rllib row cannot run here, or None."""
    return "needs Ray: pip install -r requirements-scale.txt" if importlib.util.find_spec("ray") is None else None


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """{game: (the rows, the markdown, the runs)} of the tiny benchmark, for the tests below: on fast Chase
    TINY_ROWS, RLlib's where Ray is installed; on slow Chase ppo_godot.py's alone (the other trainers' start-ups,
    about 80 s, would show nothing more: the game's pace is its own flag, and no test here measures speed)."""
    rows = [row for row in TINY_ROWS if row != "rllib" or not ray_missing()]
    # slow Chase at 10 ms a tick: the benchmark's 50 would only lengthen the run
    return {"fast Chase": (rows, *run_tiny(tmp_path_factory.mktemp("tiny"), "--games", "fast",
                                           "--trainers", ",".join(rows))),
            "slow Chase": (["ppo_godot.py"], *run_tiny(tmp_path_factory.mktemp("tiny"), "--games", "slow",
                                                       "--trainers", "ppo_godot.py", "--tick-cost-ms", "10"))}


@pytest.mark.xdist_group("godot_trainers_tiny")  # one worker, one run of `tiny`
def test_the_tiny_benchmark_runs_each_trainer_but_sample_factory_and_writes_its_tables(tiny):
    for game, (rows_run, markdown, runs) in tiny.items():
        rows = table(markdown, game)
        assert set(rows) == {godot_trainers.ROWS[row] for row in rows_run}
        check_rows(rows, runs, game, 4096)
        greedy = {key: cells[-1] for key, cells in rows.items()}
        # the exports, played greedily: ppo_godot.py's ONNX; SB3's model (godot-rl's export fails)
        assert greedy[godot_trainers.ROWS["ppo_godot.py"]].endswith("(ONNX)")
        if "sb3" in rows_run:
            assert "(SB3 model (ONNX export: " in greedy[godot_trainers.ROWS["sb3"]]
        for cell in greedy.values():
            assert -5 < number(cell) < 15
    markdown = tiny["fast Chase"][1]
    assert "Margins" in markdown and "1. ppo_godot.py reaches 90% first" in markdown


@pytest.mark.xdist_group("godot_trainers_tiny")
def test_the_tiny_benchmark_s_rllib_row_plays_its_onnx_export_and_counts_ray_s_workers(request):
    needs_part("ray", ray_missing())
    _, markdown, runs = request.getfixturevalue("tiny")["fast Chase"]
    cells = table(markdown, "fast Chase")[godot_trainers.ROWS["rllib"]]
    assert cells[-1].endswith("(ONNX)") and cells[2] == f"{runs['fast Chase']['rllib'][0]['cpu']:,.0f}", cells
    # the kernel drops the time of Ray's workers, and of their games, as their raylet ignores SIGCHLD: counted
    # there (the games under them: test_cpu_seconds_count_a_process_whose_parent_ignores_sigchld). Each of the
    # 2 workers spends CPU-seconds importing torch and RLlib alone (measured: 16-19 CPU-seconds in all)
    assert runs["fast Chase"]["rllib"][0]["cpu_unreported"] > 2, runs["fast Chase"]["rllib"]


def test_the_tiny_benchmark_runs_sample_factory_in_its_own_venv(tmp_path):
    if not godot_trainers.SF_PYTHON.exists():
        pytest.skip(f"Sample Factory's venv is absent ({godot_trainers.SF_VENV}): "
                    f"python benchmarks/godot_trainers.py --setup builds it")
    markdown, runs = run_tiny(tmp_path, "--games", "fast", "--trainers", "sample-factory,sample-factory-paced")
    rows = table(markdown, "fast Chase")
    assert set(rows) == {godot_trainers.ROWS[row] for row in godot_trainers.SAMPLE_FACTORY}
    check_rows(rows, runs, "fast Chase", 4096)
    for cells in rows.values():
        assert cells[-1] == "- (no export for Godot)"
