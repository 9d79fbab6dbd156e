"""Issue 61's groundwork: the demo game's slow flag (--tick_cost_ms) changes nothing the game sends, and
benchmarks/godot_trainers.py's tiny mode runs every trainer and writes tables that read back."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import CHASE, REPO, benchmark, needs_godot

godot_trainers = benchmark("godot_trainers")


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


def test_the_slow_game_row_is_ppo_godot_py_with_the_slow_game_flags_and_its_exports(tmp_path):
    plain = godot_trainers.command("ppo_godot.py", "game.x86_64", 1, 4096, tmp_path)
    slow = godot_trainers.command("ppo_godot.py-slow-game", "game.x86_64", 1, 4096, tmp_path)
    assert slow == plain + ["--num-steps", "16", "--num-minibatches", "8", "--update-epochs", "10"]
    assert "--onnx-export-path" in slow  # played greedily from its ONNX export, as ppo_godot.py's row is


def test_the_tiny_benchmark_runs_each_trainer_but_sample_factory_on_both_games_and_writes_its_tables(tmp_path):
    markdown, runs = run_tiny(tmp_path, "--trainers", ",".join(TINY_ROWS))
    for game in ("fast Chase", "slow Chase"):
        rows = table(markdown, game)
        assert set(rows) == {godot_trainers.ROWS[row] for row in TINY_ROWS}
        check_rows(rows, runs, game, 4096)
        greedy = {key: cells[-1] for key, cells in rows.items()}
        # the exports, played greedily: ppo_godot.py's and RLlib's ONNX; SB3's model (godot-rl's export fails)
        assert greedy[godot_trainers.ROWS["ppo_godot.py"]].endswith("(ONNX)")
        assert greedy[godot_trainers.ROWS["rllib"]].endswith("(ONNX)")
        assert "(SB3 model (ONNX export: " in greedy[godot_trainers.ROWS["sb3"]]
        for cell in greedy.values():
            assert -5 < number(cell) < 15
    assert "Margins" in markdown and "1. ppo_godot.py reaches 90% first" in markdown


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
