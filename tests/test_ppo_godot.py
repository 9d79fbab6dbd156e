"""ppo_godot.py against the real Godot engine (Debian's godot3-server) running godot/chase.

Without the engine these tests skip, naming the install command; under CI (CI=true), whose
.ci/run installs the engine, a missing engine fails them instead.
"""
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np
import pytest
import torch

import ppo_godot
from conftest import REPO, as_from_a_terminal, read_scalars, run_dirs, run_script

GAME = {kind: str(REPO / "godot" / "chase" / f"chase_{kind}.x86_64")
        for kind in ("discrete", "multidiscrete", "continuous")}

if shutil.which("godot3-server") is None:
    if os.environ.get("CI"):
        pytest.fail("godot3-server is missing under CI: .ci/run must install it", pytrace=False)
    pytest.skip("needs Debian's headless Godot 3: apt-get install godot3-server", allow_module_level=True)


@pytest.fixture
def port():
    """A port p with p and p+1 free (for --n-parallel 2)."""
    for _ in range(100):
        p = random.randrange(20000, 60000)
        try:
            for candidate in (p, p + 1):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", candidate))
            return p
        except OSError:
            continue
    raise RuntimeError("no free port pair")


def game_pids(port):
    """Game processes started for this port (or the next one)."""
    out = subprocess.run(["pgrep", "-f", "--", f"--port=({port}|{port + 1})( |$)"], capture_output=True, text=True)
    return [int(pid) for pid in out.stdout.split()]


def start(*argv, cwd):
    return subprocess.Popen([sys.executable, str(REPO / "ppo_godot.py"), *argv], cwd=cwd, text=True,
                            preexec_fn=as_from_a_terminal,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})


def wait_for_step(proc, min_step):
    for line in proc.stdout:
        if line.startswith("global_step=") and int(line.split(",")[0].split("=")[1]) >= min_step:
            return
    raise AssertionError(f"the run ended before step {min_step}: {proc.stderr.read()}")


def random_policy_return(env_path, port, steps=300):
    args = ppo_godot.parse_args(["--env-path", env_path, "--port", str(port), "--seed", "11"])
    envs = ppo_godot.GodotVecEnv(args)
    try:
        envs.reset()
        returns = []
        for _ in range(steps):
            actions = np.array([envs.single_action_space.sample() for _ in range(envs.num_envs)])
            _, _, _, _, infos = envs.step(actions)
            if "episode" in infos:
                returns.extend(infos["episode"]["r"][infos["_episode"]])
        return float(np.mean(returns))
    finally:
        envs.close()


@pytest.mark.parametrize("kind", ["discrete", "continuous"])
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


def test_onnx_export_matches_torch(port, tmp_path):
    import onnxruntime

    onnx_path = tmp_path / "policy.onnx"
    run_script("ppo_godot.py", "--env-path", GAME["discrete"], "--port", str(port), "--total-timesteps", "2048",
               "--save-model", "--onnx-export-path", str(onnx_path), cwd=tmp_path)
    saved = torch.load(run_dirs(tmp_path)[0] / "ppo_godot.pt")
    agent = ppo_godot.Agent(4, ppo_godot.gym.spaces.MultiDiscrete([5]))
    agent.load_state_dict(saved["model"])
    session = onnxruntime.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["obs", "state_ins"]
    assert [o.name for o in session.get_outputs()] == ["output", "state_outs"]
    obs = np.random.default_rng(0).uniform(-1, 1, (7, 4)).astype(np.float32)
    output, state_outs = session.run(None, {"obs": obs, "state_ins": np.zeros(7, np.float32)})
    with torch.no_grad():
        expected = agent.actor(torch.from_numpy(obs)).numpy()
    np.testing.assert_allclose(output, expected, rtol=1e-5, atol=1e-6)
    assert state_outs.shape == (7,)


@pytest.mark.parametrize("fault", ["kill", "freeze"])
def test_game_dying_or_freezing_ends_the_run_cleanly(fault, port, tmp_path):
    proc = start("--env-path", GAME["discrete"], "--port", str(port), "--total-timesteps", "10000000",
                 "--step-timeout", "3", cwd=tmp_path)
    wait_for_step(proc, 3000)
    (game,) = game_pids(port)
    os.kill(game, signal.SIGKILL if fault == "kill" else signal.SIGSTOP)
    started = time.time()
    stdout, stderr = proc.communicate(timeout=30)
    assert time.time() - started < 15
    assert proc.returncode == 1 and "Traceback" not in stderr
    reason = "was killed by signal 9 while playing" if fault == "kill" else "did not answer for 3 s while playing"
    assert f"the game on port {port} {reason}" in stderr
    assert "is saved to" in stderr
    assert (run_dirs(tmp_path)[0] / "ppo_godot.pt").exists()
    assert not game_pids(port)


def test_ctrl_c_saves_the_model_and_closes_the_games(port, tmp_path):
    proc = start("--env-path", GAME["discrete"], "--port", str(port), "--n-parallel", "2",
                 "--total-timesteps", "10000000", cwd=tmp_path)
    wait_for_step(proc, 3000)
    assert len(game_pids(port)) == 2
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "Traceback" not in stderr
    assert "is saved to" in stdout
    assert (run_dirs(tmp_path)[0] / "ppo_godot.pt").exists()
    assert not game_pids(port)


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_kill_while_the_game_connects_ends_it(stop_signal, port, tmp_path):
    proc = start("--env-path", misbehaving_game(tmp_path, "never-connect"), "--port", str(port), cwd=tmp_path)
    deadline = time.time() + 30
    while not game_pids(port):
        assert time.time() < deadline, "the game did not start"
        time.sleep(0.1)
    proc.send_signal(stop_signal)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 128 + stop_signal and "Traceback" not in stderr, stderr
    assert "interrupted while the games connected" in stderr
    assert not game_pids(port)


def test_ctrl_c_again_while_closing_leaves_no_game(port, tmp_path):
    proc = start("--env-path", GAME["discrete"], "--port", str(port), "--n-parallel", "2",
                 "--total-timesteps", "10000000", cwd=tmp_path)
    wait_for_step(proc, 3000)
    for _ in range(4):  # the first asks to stop; the second stops at once; the rest hit the closing
        proc.send_signal(signal.SIGINT)
        time.sleep(0.05)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "Traceback" not in stderr, stderr
    assert (run_dirs(tmp_path)[0] / "ppo_godot.pt").exists()
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


@pytest.mark.parametrize("behaviour, message, timeout", [
    ("never-connect", "no game connected on port {port} within 3 s", 3),
    # a game that has exited ends the wait at once: with a 600 s timeout, run_script's 60 s would expire
    ("exit-at-once", "no game connected on port {port}: the game exited with code 3", 600),
    ("freeze", "the game on port {port} did not answer for --connect-timeout (3 s) while sending its spaces", 3),
    ("exit-after-request", "the game on port {port} exited with code 0 while sending its spaces", 600),
    ("reset", "the game on port {port} exited with code 1", 600),  # seen when sending or when reading
    ("unlike-agents", "agent 1 of the game on port {port} has other spaces than agent 0", 600),
])
def test_connect_phase_faults_are_named(behaviour, message, timeout, port, tmp_path):
    proc = run_script("ppo_godot.py", "--env-path", misbehaving_game(tmp_path, behaviour), "--port", str(port),
                      "--connect-timeout", str(timeout), cwd=tmp_path, check=False, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith(f"ppo_godot.py: error: {message.format(port=port)}")
    assert not game_pids(port)


def test_continuous_actions_are_clipped_when_sent():
    envs = object.__new__(ppo_godot.GodotVecEnv)  # no game: to_game_action only reads the spaces
    envs.action_spaces = {"move": gym.spaces.Box(-1.0, 1.0, (2,)), "jump": gym.spaces.Discrete(2)}
    sent = envs.to_game_action(np.array([1.7, -0.3, 1.0]))
    assert sent == {"move": [1.0, pytest.approx(-0.3)], "jump": 1}


def test_editor_mode_says_to_press_play(port, tmp_path):
    proc = run_script("ppo_godot.py", "--port", str(port), "--connect-timeout", "2", cwd=tmp_path,
                      check=False, timeout=60)
    assert "press Play in the Godot editor" in proc.stdout
    assert proc.returncode == 2 and f"no game connected on port {port} within 2 s" in proc.stderr
