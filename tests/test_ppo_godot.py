"""ppo_godot.py against the real Godot engine (Debian's godot3-server) running godot/chase.

Without the engine these tests skip, naming the install command; under CI (CI=true), whose
.ci/run installs the engine, a missing engine fails them instead.
"""
import os
import re
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

import ppo_godot
from conftest import (REPO, as_from_a_terminal, assert_plugin_plays_like_torch, game_pids, needs_godot, read_scalars,
                      run_dirs, run_script, saved_agents)

GAME = {kind: str(REPO / "godot" / "chase" / f"chase_{kind}.x86_64")
        for kind in ("discrete", "multidiscrete", "continuous", "plugin")}
# What the plugin-like Chase game (main.gd, --action_type=plugin) declares, in its order
PLUGIN_OBS = {"to_target": 2, "position": 2}
PLUGIN_ACTIONS = {"sprint": ("discrete", 2), "direction": ("continuous", 2)}



@pytest.fixture(autouse=True, scope="module")
def godot3():
    needs_godot()


# how long a stopped run may take to save, export and close before the test calls it hung: not a
# time limit (beside the rest of the suite under `pytest -n`, one such stop took over 30 s). Twice the
# [0.0] case of the Ctrl-C-again test hung past it after its save and export; wait_for_end showed
# where, the interpreter's final garbage collection, which ppo_godot.py's exit_after_a_stop now skips
HANG = 120


def start(*argv, cwd):
    """ppo_godot.py as a process; -X faulthandler: a SIGABRT prints where each of its threads is."""
    return subprocess.Popen([sys.executable, "-X", "faulthandler", str(REPO / "ppo_godot.py"), *argv], cwd=cwd,
                            text=True, preexec_fn=as_from_a_terminal,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})


def wait_for_end(proc, port):
    """(stdout, stderr) once the run has ended; after HANG seconds, a failure that says what hung: the
    script (and where: its threads' stacks) or a game left running that holds its output open."""
    try:
        return proc.communicate(timeout=HANG)
    except subprocess.TimeoutExpired:
        script_alive, games = proc.poll() is None, game_pids(port)
        if script_alive:
            proc.send_signal(signal.SIGABRT)
        for pid in games:
            os.kill(pid, signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=30)
        pytest.fail(f"hung for {HANG} s: the script {'still ran' if script_alive else 'had ended'}, "
                    f"{len(games)} game(s) left running\nstdout: {stdout[-2000:]}\nstderr: {stderr[-6000:]}")


def wait_for_step(proc, min_step):
    """What the run printed up to its first episode line from min_step on."""
    printed = ""
    for line in proc.stdout:
        printed += line
        if line.startswith("global_step=") and int(line.split(",")[0].split("=")[1]) >= min_step:
            return printed
    raise AssertionError(f"the run ended before step {min_step}: {proc.stderr.read()}")


def random_policy_return(env_path, port, steps=300):
    """The mean return of an untrained policy: uniform choices, N(0, 1) continuous actions."""
    args = ppo_godot.parse_args(["--env-path", env_path, "--port", str(port), "--seed", "11"])
    envs = ppo_godot.RecordEpisodes(ppo_godot.GodotVecEnv(args))
    untrained = ppo_godot.Agent(envs.obs_layout, envs.action_heads)
    try:
        obs, _ = envs.reset()
        returns = []
        for _ in range(steps):
            with torch.no_grad():
                actions = untrained.get_action(torch.as_tensor(obs)).numpy()
            obs, _, _, _, infos = envs.step(actions)
            if "episode" in infos:
                returns.extend(infos["episode"]["r"][infos["_episode"]])
        return float(np.mean(returns))
    finally:
        envs.close()


@pytest.mark.parametrize("kind", ["discrete", "continuous", "plugin"])
def test_training_beats_a_random_policy(kind, port, tmp_path):
    baseline = random_policy_return(GAME[kind], port)
    run_script("ppo_godot.py", "--env-path", GAME[kind], "--port", str(port), "--total-timesteps", "40000",
               "--step-timeout", "60", cwd=tmp_path)  # generous: a loaded machine is not a frozen game
    returns = [v for _, v in read_scalars(run_dirs(tmp_path)[0])["charts/episodic_return"]]
    late = np.mean(returns[-100:])
    # random play scores about 0 (it rarely reaches the target); the best is about 10
    assert late > baseline + 3, f"last 100 episodes average {late:.2f}, random play {baseline:.2f}"
    assert not game_pids(port)


def test_two_game_processes_and_multidiscrete_actions(port, tmp_path):
    proc = run_script("ppo_godot.py", "--env-path", GAME["multidiscrete"], "--port", str(port),
                      "--n-parallel", "2", "--total-timesteps", "4096", "--save-model", cwd=tmp_path)
    (run_dir,) = run_dirs(tmp_path)
    saved = torch.load(run_dir / "ppo_godot.pt")
    assert saved["args"]["num_envs"] == 32  # 2 processes x 16 agents
    assert saved["model"]["actor.4.weight"].shape[0] == 6  # two heads of 3 logits
    assert "global_step=4096" in proc.stdout.replace("[2/2] ", "")
    assert len(read_scalars(run_dir)["charts/episodic_return"]) >= 32  # every agent of both games
    assert not game_pids(port)


def test_the_plugin_plays_the_onnx_export_of_a_plugin_like_game_as_torch_does(port, tmp_path):
    """Two observation keys and a discrete and a continuous action, declared out of alphabetical
    order: the plugin's inference (conftest.plugin_inference) picks torch's deterministic action."""
    import onnxruntime

    onnx_path = tmp_path / "policy.onnx"
    run_script("ppo_godot.py", "--env-path", GAME["plugin"], "--port", str(port), "--total-timesteps", "2048",
               "--save-model", "--onnx-export-path", str(onnx_path), cwd=tmp_path)
    ((agent, _),) = saved_agents(run_dirs(tmp_path)[0] / "ppo_godot.pt").values()
    session = onnxruntime.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    assert_plugin_plays_like_torch(agent, session, PLUGIN_OBS, PLUGIN_ACTIONS, n=100, obs_range=1.5)


def test_a_time_out_is_truncated_and_a_reached_target_terminated(port):
    """The episode ends as the Chase game sends them (a game that resets on the next step), through
    GodotVecEnv: a time-out (info.truncated, on the 100th action) is truncated and not terminated, and
    comes with the final observation; the next action only resets; a reached target is terminated."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import godot_chase

    args = ppo_godot.parse_args(["--env-path", GAME["discrete"], "--port", str(port), "--norm-reward", "false"])
    envs = ppo_godot.RecordEpisodes(ppo_godot.GodotVecEnv(args))
    try:
        start, _ = envs.reset()
        stay = np.zeros((envs.num_envs, 1), dtype=np.int64)  # move 0: stay, so no agent reaches its target
        for action in range(1, 101):
            obs, reward, terminated, truncated, infos = envs.step(stay)
            assert not terminated.any(), action
            assert truncated.all() if action == 100 else not truncated.any(), action
        np.testing.assert_allclose(obs, start, atol=1e-6)  # the final observation: where each one stood
        assert infos["_episode"].all() and (infos["episode"]["l"] == 100).all()
        obs, reward, terminated, truncated, infos = envs.step(stay)
        assert infos["autoreset"].all() and not (terminated | truncated).any()
        assert not np.allclose(obs, start)  # the new episodes' first observations

        for _ in range(100):  # head for the target until one reaches it
            obs, reward, terminated, truncated, infos = envs.step(godot_chase.scripted_action(obs, "discrete"))
            assert not truncated.any()
            if terminated.any():
                break
        assert terminated.any(), "no agent reached its target"
        assert (np.linalg.norm(obs[terminated, 2:4], axis=1) < 0.1).all()  # the final observation: at it
        assert (reward[terminated] > 0.9).all()  # with the reach bonus
    finally:
        envs.close()


def test_a_reset_seed_reaches_the_game(port):
    """GodotVecEnv.reset(seed) sends the seed with the reset (the demo game reads it): the same seed
    gives the same new episodes, another seed others. A resumed run's new episodes follow from it."""
    args = ppo_godot.parse_args(["--env-path", GAME["discrete"], "--port", str(port)])
    envs = ppo_godot.GodotVecEnv(args)
    try:
        first, again, other = (envs.reset(seed=seed)[0] for seed in (7, 7, 8))
        np.testing.assert_array_equal(first, again)
        assert not np.allclose(first, other)
    finally:
        envs.close()


def test_every_episode_s_length_counts_its_actions_only(port):
    """charts/episodic_length of every episode, not only of each agent's first: the autoreset step after
    an episode's end belongs to no episode. Standing still, each episode is a time-out of 100 actions."""
    args = ppo_godot.parse_args(["--env-path", GAME["discrete"], "--port", str(port)])
    envs = ppo_godot.RecordEpisodes(ppo_godot.GodotVecEnv(args))
    try:
        envs.reset()
        stay = np.zeros((envs.num_envs, 1), dtype=np.int64)
        lengths = []
        for _ in range(3 * 101):  # three episodes of 100 actions, each followed by its autoreset step
            _, _, _, _, infos = envs.step(stay)
            if "episode" in infos:
                lengths.extend(infos["episode"]["l"][infos["_episode"]].tolist())
        assert lengths == [100] * (3 * envs.num_envs)
    finally:
        envs.close()


@pytest.mark.parametrize("fault", ["kill", "freeze"])
def test_game_dying_or_freezing_ends_the_run_cleanly(fault, port, tmp_path):
    proc = start("--env-path", GAME["discrete"], "--port", str(port), "--total-timesteps", "10000000",
                 "--step-timeout", "3", cwd=tmp_path)
    printed = wait_for_step(proc, 3000)
    (game,) = game_pids(port)
    os.kill(game, signal.SIGKILL if fault == "kill" else signal.SIGSTOP)
    stdout, stderr = wait_for_end(proc, port)
    stdout = printed + stdout
    assert proc.returncode == 1 and "Traceback" not in stderr
    reason = "was killed by signal 9 while playing" if fault == "kill" else "did not answer for 3 s while playing"
    assert f"the game on port {port} {reason}" in stderr
    assert "is saved to" in stderr
    run_dir = run_dirs(tmp_path)[0]
    assert (run_dir / "ppo_godot.pt").exists()
    # the game's own output: in its log in the run folder, which the line quotes and names
    log = run_dir.relative_to(tmp_path) / f"game-{port}.log"
    assert stdout.count(f"the game's own output (the engine's lines) goes to {log}\n") == 1
    assert (tmp_path / log).read_text().startswith("Godot Engine v3.")  # the banner, not on the console
    assert not [line for line in (stdout + stderr).splitlines() if line.startswith("Godot Engine")]
    assert "; its last output: 'Godot Engine v3." in stderr and f"(all of it in {log})" in stderr
    assert not game_pids(port)


def test_ctrl_c_saves_the_model_and_its_onnx_export_and_closes_the_games(port, tmp_path):
    proc = start("--env-path", GAME["discrete"], "--port", str(port), "--n-parallel", "2",
                 "--total-timesteps", "10000000", "--onnx-export-path", "policy.onnx", cwd=tmp_path)
    wait_for_step(proc, 3000)
    assert len(game_pids(port)) == 2
    proc.send_signal(signal.SIGINT)
    stdout, stderr = wait_for_end(proc, port)
    assert proc.returncode == 130 and "Traceback" not in stderr
    assert "is saved to" in stdout and "exported to policy.onnx" in stdout
    assert (run_dirs(tmp_path)[0] / "ppo_godot.pt").exists()
    assert_whole_onnx(tmp_path / "policy.onnx")
    assert not game_pids(port)


@pytest.mark.parametrize("stop_signal", [None, signal.SIGINT, signal.SIGTERM], ids=["end", "ctrl-c", "kill"])
def test_a_gdscript_export_alone_is_written_at_the_end_and_at_a_stop(stop_signal, port, tmp_path):
    """--gdscript-export-path without --onnx-export-path: the file is written when the ONNX one would be."""
    total = "1024" if stop_signal is None else "10000000"
    proc = start("--env-path", GAME["discrete"], "--port", str(port), "--num-steps", "32", "--total-timesteps", total,
                 "--gdscript-export-path", "policy.gd", cwd=tmp_path)
    if stop_signal is not None:
        wait_for_step(proc, 2000)
        proc.send_signal(stop_signal)
    stdout, stderr = wait_for_end(proc, port)
    assert proc.returncode == {None: 0, signal.SIGINT: 130, signal.SIGTERM: 143}[stop_signal], stderr
    assert "The policy is exported to policy.gd, as GDScript for any Godot build" in stdout
    assert (tmp_path / "policy.gd").read_text().endswith("\treturn values\n")  # whole, to its last function
    assert not list(tmp_path.glob("*.onnx")) and not game_pids(port)


def assert_whole_onnx(path):
    import onnxruntime

    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [o.name for o in session.get_outputs()] == ["output", "state_outs"]


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_kill_while_the_game_connects_ends_it(stop_signal, port, tmp_path):
    proc = start("--env-path", misbehaving_game(tmp_path, "never-connect"), "--port", str(port), cwd=tmp_path)
    deadline = time.time() + 30
    while not game_pids(port):
        assert time.time() < deadline, "the game did not start"
        time.sleep(0.1)
    proc.send_signal(stop_signal)
    stdout, stderr = wait_for_end(proc, port)
    assert proc.returncode == 128 + stop_signal and "Traceback" not in stderr, stderr
    assert "interrupted while the games connected" in stderr
    assert not game_pids(port)


def test_port_in_use_is_named(port, tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        proc = run_script("ppo_godot.py", "--env-path", GAME["discrete"], "--port", str(port),
                          cwd=tmp_path, check=False, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"port {port} is already in use" in proc.stderr
    assert not game_pids(port)


def misbehaving_game(tmp_path, behaviour):
    """A launcher, named like an exported game, of tests/misbehaving_game.py BEHAVIOUR."""
    game = tmp_path / f"{behaviour}.x86_64"
    game.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{REPO / "tests" / "misbehaving_game.py"}" {behaviour} "$@"\n')
    game.chmod(0o755)
    return str(game)


@pytest.mark.parametrize("script", ["ppo_godot.py", "ppo_godot_multi_policy.py", "ppo_godot_self_play.py",
                                    "ppo_godot_bc.py"])
def test_the_plumbing_banner_names_each_flag_a_game_is_started_with(script, tmp_path, port):
    """From below the banner a game gets its command line: the banner names each of its flags (in backticks),
    and games started with every setting, windowed or not, under either engine, get those and no other."""
    text = (REPO / script).read_text()
    start = text.index("# 9. Plumbing")
    named = set(re.findall(r"`(--[a-z_-]+)`", text[start:text.index("# =====", start)]))
    argv_file, game = tmp_path / "argv", tmp_path / "game.x86_64"
    game.write_text(f'#!/bin/sh\necho "$@" >> "{argv_file}"\nexit 3\n')
    game.chmod(0o755)
    for how in (["--godot-version", "4"], ["--godot-version", "3"], ["--show-window"]):
        demos = ["--demos", str(REPO / "godot" / "chase" / "demos" / "chase_discrete_scripted.json")]
        run_script(script, "--env-path", str(game), "--port", str(port), "--framerate", "30", "--speedup", "2",
                   "--action-repeat", "4", *how, *(demos if script == "ppo_godot_bc.py" else []), cwd=tmp_path,
                   check=False)
    started_with = {arg.split("=")[0] for line in argv_file.read_text().splitlines() for arg in line.split()
                    if arg.startswith("--")}
    assert len(argv_file.read_text().splitlines()) == 3 and started_with == named


@pytest.mark.parametrize("behaviour, message, timeout", [
    ("never-connect", "no game connected on port {port} within 3 s", 3),
    # a game that has exited ends the wait at once: with a 600 s timeout, run_script's 60 s would expire
    ("exit-at-once", "no game connected on port {port}: the game exited with code 3", 600),
    ("freeze", "the game on port {port} did not answer for --connect-timeout (3 s) while sending its spaces", 3),
    ("exit-after-request", "the game on port {port} exited with code 0 while sending its spaces", 600),
    ("reset", "the game on port {port} exited with code 1", 600),  # seen when sending or when reading
    ("unlike-agents", "agent 1 of the game on port {port} has other spaces than agent 0", 600),
    ("unknown-action-type", "the game on port {port} sent spaces that godot-rl cannot read", 600),
    ("dotted-policy-name", "agent 0 of the game on port {port} has the policy name 'team.a': a policy name names "
                           "modules and files here, so letters, digits, _ and - only", 600),
    ("undeclared-obs-key", "the game on port {port} sends the observation keys ['position'] but "
                           "declares ['obs']", 600),
    ("obs-wrong-length", "agent 0 of the game on port {port} sends 'obs' as [0.5, 0.5, 0.5], but declares a "
                         "list of 2 numbers", 600),
    ("camera-wrong-size", "agent 0 of the game on port {port} sends 'camera_2d' as 100 bytes, but declares the "
                          "shape [3, 36, 36]: 3888 bytes (H x W x C = 36 x 36 x 3)", 600),
    ("camera-not-hex", "agent 0 of the game on port {port} sends 'camera_2d' as a list, not the hex string of an "
                       "image's bytes that training reads (declared [3, 36, 36])", 600),
    ("camera-blank", "the camera 'camera_2d' sent blank images (every pixel [0, 0, 0]) from every agent: the "
                     "engine renders nothing. A camera needs a window: give --show-window, and on a machine "
                     "without a display run under xvfb-run -a", 600),
    ("camera-small", "the camera 'camera_2d' is 24 x 36 pixels: the CNN takes at least 36 x 36", 600),
    ("camera-flat", "the observation 'camera_2d' is declared with the shape [3888]: a camera key (\"2d\" in its "
                    "name) needs [channels, height, width]", 600),
])
def test_connect_phase_faults_are_named(behaviour, message, timeout, port, tmp_path):
    # a policy name names files in ppo_godot_multi_policy.py only, and a camera is ppo_godot_camera.py's; the rest
    # is the scripts' shared plumbing
    script = {"dotted-policy-name": "ppo_godot_multi_policy.py"}.get(
        behaviour, "ppo_godot_camera.py" if behaviour.startswith("camera") else "ppo_godot.py")
    proc = run_script(script, "--env-path", misbehaving_game(tmp_path, behaviour), "--port", str(port),
                      "--connect-timeout", str(timeout), cwd=tmp_path, check=False, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith(f"{script}: error: {message.format(port=port)}")
    assert not game_pids(port)


def test_continuous_actions_are_clipped_when_sent():
    sent = ppo_godot.to_game_action(np.array([1.7, -0.3, 1.0]), [("move", "continuous", 2), ("jump", "discrete", 2)])
    assert sent == {"move": [1.0, pytest.approx(-0.3)], "jump": 1}


def test_an_observation_key_the_onnx_export_cannot_name_ends_the_run_before_training(port, tmp_path):
    proc = run_script("ppo_godot.py", "--env-path", misbehaving_game(tmp_path, "obs-key-state-ins"),
                      "--port", str(port), "--onnx-export-path", "model.onnx", cwd=tmp_path, check=False, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "the observation key 'state_ins' has the name of an input" in proc.stderr.strip().splitlines()[-1]
    assert not (tmp_path / "runs").exists() and not game_pids(port)


def test_a_game_that_ends_an_episode_every_step_trains_on_every_step(port, tmp_path):
    """Reset on the spot (the plugin's way): each step is a real transition, though each ends an
    episode. Dropping the step after each episode end, as for a game that resets on the next step,
    would leave no row to learn from: the run would stop on a NaN loss."""
    run_script("ppo_godot.py", "--env-path", misbehaving_game(tmp_path, "done-every-step"), "--port", str(port),
               "--num-steps", "8", "--num-minibatches", "2", "--total-timesteps", "64", cwd=tmp_path)
    scalars = read_scalars(run_dirs(tmp_path)[0])
    assert [v for _, v in scalars["charts/episodic_return"]] == [1.0] * 64
    assert [v for _, v in scalars["charts/episodic_length"]] == [1.0] * 64
    assert len(scalars["losses/policy_loss"]) == 4  # 4 updates of 2 agents x 8 steps


@pytest.mark.parametrize("version, hide_window", [(4, "--headless"), (3, "--no-window")])
def test_the_window_is_hidden_as_the_game_s_engine_expects(version, hide_window, port, tmp_path):
    game = tmp_path / "game.x86_64"  # a game that writes down its command line and exits
    game.write_text(f'#!/bin/sh\necho "$@" > "{tmp_path / "argv.txt"}"\nexit 3\n')
    game.chmod(0o755)
    proc = run_script("ppo_godot.py", "--env-path", str(game), "--port", str(port), "--godot-version", str(version),
                      cwd=tmp_path, check=False, timeout=60)
    assert "the game exited with code 3" in proc.stderr
    argv = (tmp_path / "argv.txt").read_text().split()
    assert hide_window in argv and ({"--headless", "--no-window"} - {hide_window}).isdisjoint(argv)
    assert f"--port={port}" in argv


def test_editor_mode_says_to_press_play(port, tmp_path):
    proc = run_script("ppo_godot.py", "--port", str(port), "--connect-timeout", "2", cwd=tmp_path,
                      check=False, timeout=60)
    assert "press Play in the Godot editor" in proc.stdout
    assert proc.returncode == 2 and f"no game connected on port {port} within 2 s" in proc.stderr


def test_editor_mode_says_when_the_game_is_in(port, tmp_path):
    """No --env-path: the trainer waits, the game connects as the editor's Play would start it (here the demo game,
    started by hand on the trainer's port), and the console says so, with the game's agents, before training."""
    trainer = subprocess.Popen([sys.executable, str(REPO / "ppo_godot.py"), "--port", str(port),
                                "--total-timesteps", "2048", "--connect-timeout", "30"],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    game = None
    try:
        waiting = trainer.stdout.readline()
        assert f"waiting up to 30 s on port {port}: press Play in the Godot editor" in waiting
        game = subprocess.Popen([GAME["discrete"], f"--port={port}", "--fixed-fps", "60"], start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        out, err = trainer.communicate(timeout=120)
    finally:
        for proc in (trainer, game):
            if proc is not None and proc.poll() is None:
                proc.kill()
    assert trainer.returncode == 0, err
    lines = out.splitlines()
    connected = lines.index(f"the game connected on port {port}; agents in it: 16")
    assert connected < min(i for i, line in enumerate(lines) if line.startswith("global_step="))


@pytest.mark.parametrize("kind", ["discrete", "continuous", "plugin"])
def test_the_benchmark_s_scripted_policy_plays_each_game_near_optimally(kind, port):
    """benchmarks/godot_chase.py measures learning against it: it must read each game's
    observation and send its actions in the game's layout (random play scores about -1)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import godot_chase

    best, _ = godot_chase.scripted_client(GAME[kind], kind, port, steps=400)
    assert best > 8
