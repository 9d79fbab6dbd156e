"""scale/ppo_rllib_godot.py: RLlib's PPO on the Chase game (the real engine), on a local Ray
cluster on loopback.

Without the engine, or without Ray (an optional install: requirements-scale.txt), these tests skip
naming the install command; under CI (CI=true), whose .ci/run installs both, they fail instead.
"""
import importlib.util
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import onnxruntime
import pytest

from conftest import (CHASE, REPO, as_from_a_terminal, assert_one_line_error, needs_godot, needs_part, plugin_inference,
                      read_scalars, run_dirs, run_script)

sys.path.insert(0, str(REPO / "benchmarks"))
import godot_chase  # noqa: E402

SCRIPT = "scale/ppo_rllib_godot.py"
TAG = str(REPO / "godot" / "chase" / "chase_tag.x86_64")
TAG_POLICIES = {"chaser": (4, {"move": {"action_type": "discrete", "size": 5}}),
                "runner": (5, {"move": {"action_type": "continuous", "size": 2}})}
RAY_PROCESSES = r"raylet|gcs_server|ray::|default_worker\.py|ray/dashboard|ray/autoscaler|log_monitor\.py"
# one worker of `pytest -n` runs them all, in turn: each test checks that no Ray process it started is left
pytestmark = pytest.mark.xdist_group("ray")


@pytest.fixture(scope="module")
def rllib_script():
    """The script as a module, for GodotRayEnv."""
    needs_godot()
    needs_part("ray", importlib.util.find_spec("ray") is None and "needs Ray RLlib: pip install -r requirements-scale.txt")
    sys.path.insert(0, str(REPO / "scale"))
    try:
        return importlib.import_module("ppo_rllib_godot")
    finally:
        sys.path.remove(str(REPO / "scale"))


def pids(pattern):
    """{pid: (parent pid, command line)} of the live processes (zombies left out) whose command line
    matches `pattern`. -ww: whole command lines; ps otherwise cuts each line at a screen's width (80
    columns in a test run, or $COLUMNS), and a game's --port=N falls off when the checkout's path is long."""
    out = subprocess.run(["ps", "-ww", "-eo", "pid=,ppid=,stat=,args="], capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        pid, ppid, stat, args = line.split(None, 3)
        if not stat.startswith("Z") and re.search(pattern, args) and int(pid) != os.getpid():
            found[int(pid)] = (int(ppid), args)
    return found


def game_pattern(ports):
    """Games on any of `ports` (runner i's on --port + i)."""
    return r"godot3-server .*--port=(%s)( |$)" % "|".join(map(str, ports))


def descends_from(pid, root, table):
    """Whether pid is root or under it, in a table of pids()."""
    while pid != root and pid in table:
        pid = table[pid][0]
    return pid == root


def ephemeral_ports():
    """The ports the system picks free ones from."""
    low, high = map(int, open("/proc/sys/net/ipv4/ip_local_port_range").read().split())
    return range(low, high + 1)


def wait_until_gone(pattern, seconds=30):
    deadline = time.time() + seconds
    while pids(pattern) and time.time() < deadline:
        time.sleep(0.5)
    return pids(pattern)


def start_training(kind, port, cwd, *extra):
    """Two env runners on Chase; port None: no --port."""
    given = ["--port", str(port)] if port is not None else []
    return subprocess.Popen([sys.executable, str(REPO / SCRIPT), "--env-path", CHASE[kind], "--num-env-runners", "2",
                             "--num-cpus", "2", *given, *extra], cwd=cwd, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, preexec_fn=as_from_a_terminal)


def assert_stopped_and_saved(proc, stdout, stderr, code, cwd):
    assert proc.returncode == code, stderr
    assert "Traceback" not in stderr and "stopped: saving the model" in stderr
    assert "model saved to" in stdout and (run_dirs(cwd)[0] / "checkpoint").is_dir()
    assert read_scalars(run_dirs(cwd)[0])["charts/SPS"]  # the log was written and closed


@pytest.mark.parametrize("kind, given_port", [("discrete", True), ("continuous", False)],
                         ids=["discrete-given-port-killed", "continuous-free-ports-ctrl-c"])
def test_two_env_runners_learn_then_a_stop_saves_the_model_and_leaves_nothing(rllib_script, kind, given_port, port,
                                                                              tmp_path):
    """Two env runners, each launching a game of its own, train until the return has risen; then the run is
    stopped: the model and the log saved, no game and no Ray process left. The discrete run has --port (env
    runner i's game on port + i), a checkpoint after each update (--checkpoint-minutes 0) and an ONNX export,
    and ends by a kill (SIGTERM to the driver: exit 143); the continuous one has no --port (each game on a free
    port the system picked) and ends by Ctrl-C (to the whole process group, as a terminal sends it: exit 130).
    (Starting and stopping a Ray cluster takes half a minute here: these runs check all they can.)"""
    ray_before = pids(RAY_PROCESSES)
    killed = kind == "discrete"
    proc = start_training(kind, port if given_port else None, tmp_path, *(
        ["--checkpoint-minutes", "0", "--onnx-export-path", str(tmp_path / "chase.onnx")] if killed else []))
    checkpoints = []
    games_seen, done = {}, threading.Event()

    def watch_games():  # {pid: (port, parent, whether the parent is a Ray worker)} of the run's games
        while not done.is_set():
            table = pids("")
            for pid, (ppid, args) in table.items():
                game = re.search(game_pattern([r"\d+"]), args)  # a game, on any port
                if game and descends_from(ppid, proc.pid, table):
                    parent = table.get(ppid, (0, ""))[1]  # Ray names its actors' processes ray::<class>
                    games_seen[pid] = (int(game[1]), ppid, parent.startswith("ray::"))
            time.sleep(0.5)

    watcher = threading.Thread(target=watch_games)
    watcher.start()
    try:
        # measured on seeds 1-3 of each kind: at step 14,336 an update's mean return of 8.3-9.3, and the last 50
        # episodes 5.6-7.6 above the first 50
        for line in proc.stdout:
            checkpoints += [line] if line.startswith("checkpoint at global_step=") else []
            progress = re.match(r"global_step=(\d+), episodic_return=(\S+),", line)
            if progress and (int(progress[1]) >= 14_000 and float(progress[2]) >= 8 or int(progress[1]) >= 40_000):
                break
        if proc.poll() is None and killed:
            proc.send_signal(signal.SIGTERM)  # to the driver alone, as `kill PID` does
        elif proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        done.set()
        watcher.join()

    # two games, each started by a Ray worker of its own; the driver's one game (if seen): its probe
    runner_games = sorted((game_port, ppid) for game_port, ppid, by_worker in games_seen.values() if by_worker)
    assert len(runner_games) == 2 and runner_games[0][1] != runner_games[1][1], games_seen
    assert all(by_worker or ppid == proc.pid for _, ppid, by_worker in games_seen.values()), games_seen
    ports = [game_port for game_port, _ in runner_games]
    if given_port:
        assert ports == [port + 1, port + 2], games_seen
    else:
        assert ports[0] != ports[1] and all(p in ephemeral_ports() for p in ports), games_seen
    # the return rose: the last 50 episodes against the first 50 (random play: about -1; the
    # scripted policy: 10.27)
    returns = [value for _, value in read_scalars(run_dirs(tmp_path)[0])["charts/episodic_return"]]
    assert len(returns) > 100
    first, last = np.mean(returns[:50]), np.mean(returns[-50:])
    assert last > first + 4, (first, last)
    # the stop: the model saved, the log written and closed, nothing left
    assert_stopped_and_saved(proc, stdout, stderr, 143 if killed else 130, tmp_path)
    if killed:  # a checkpoint after each update of 2 x 1,024 steps, one folder; the kill's model exported too
        checkpoints += [line for line in stdout.splitlines(keepends=True) if line.startswith("checkpoint at")]
        assert len(checkpoints) >= 6 and checkpoints == [
            f"checkpoint at global_step={2048 * i} saved to {run_dirs(tmp_path)[0]}/checkpoint\n"
            for i in range(1, len(checkpoints) + 1)], checkpoints
        assert [p.name for p in run_dirs(tmp_path)[0].iterdir() if "checkpoint" in p.name] == ["checkpoint"]
        assert_plugin_plays_like_rllib(run_dirs(tmp_path)[0] / "checkpoint" / "policies" / "default_policy",
                                       tmp_path / "chase.onnx", 4, {"move": {"action_type": "discrete", "size": 5}})
    assert not set(wait_until_gone(game_pattern(p for p, _, _ in games_seen.values()))) & set(games_seen)
    assert not set(wait_until_gone(RAY_PROCESSES)) - set(ray_before)


def test_a_game_of_two_policies_trains_an_rllib_policy_each_and_exports_a_model_each(rllib_script, port, tmp_path):
    """The Chase game's tag mode on one env runner: chasers and runners, two policy names whose spaces
    differ. Each name gets its RLlib policy, learns (its own losses, its own episodes, under
    ppo_godot.py's tags for several policies), is saved, and is exported in the plugin's layout: the
    plugin's inference picks the action RLlib's deterministic policy picks."""
    ray_before = pids(RAY_PROCESSES)
    run_script(SCRIPT, "--env-path", TAG, "--num-env-runners", "1", "--num-cpus", "1", "--port", str(port),
               "--total-timesteps", "4096", "--train-batch-size", "1024", "--num-steps", "32",
               "--onnx-export-path", str(tmp_path / "tag.onnx"), cwd=tmp_path, timeout=300)
    run_dir = run_dirs(tmp_path)[0]
    scalars = read_scalars(run_dir)
    returns = {}
    for name, (obs_size, declared) in TAG_POLICIES.items():
        assert len(scalars[f"losses/value_loss/{name}"]) >= 3 and "losses/value_loss" not in scalars
        returns[name] = [value for _, value in scalars[f"charts/episodic_return/{name}"]]
        assert len(returns[name]) >= 16  # 256 steps of each of 8 agents: every pair's episode ends by 100
        assert_plugin_plays_like_rllib(run_dir / "checkpoint" / "policies" / name, tmp_path / f"tag_{name}.onnx",
                                       obs_size, declared)
    # a pair's two episodes end together, their rewards opposed: what the chasers won, the runners lost
    assert sum(returns["chaser"]) == pytest.approx(-sum(returns["runner"]), abs=1e-3)
    assert not wait_until_gone(game_pattern([port + 1]))
    assert not set(wait_until_gone(RAY_PROCESSES)) - set(ray_before)


def assert_plugin_plays_like_rllib(policy_dir, onnx_path, obs_size, declared):
    """The plugin's inference (plugin_inference) on the exported model picks, for 50 random observations of
    the game's one key `obs`, the action of RLlib's deterministic policy saved in policy_dir."""
    from ray.rllib.policy.policy import Policy

    policy = Policy.from_checkpoint(policy_dir)
    session = onnxruntime.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    for _ in range(50):
        obs = rng.uniform(-1.5, 1.5, obs_size).astype(np.float32)
        expected = policy.compute_single_action(obs, explore=False)[0]  # a dict, or a tuple (one action's space)
        expected = expected["move"] if isinstance(expected, dict) else expected[0]
        np.testing.assert_allclose(plugin_inference(session, {"obs": obs.tolist()}, declared)["move"], expected,
                                   rtol=1e-5, atol=1e-5)


def make_env(rllib_script, port, **game):
    config = {"env_path": CHASE["discrete"], "show_window": False, "speedup": None, "action_repeat": None,
              "framerate": 60, **game}
    return rllib_script.GodotRayEnv(config=config, port=port, seed=3)


def test_episode_ends_reach_rllib_as_it_expects(rllib_script, port):
    """A time-out is truncated and a reached target terminated; the step returns the final
    observation, and reset_at the next episode's first, from which the agent goes on."""
    env = make_env(rllib_script, port, autoreset_mode="same_step")
    try:
        env.vector_reset()
        stay = [(0,)] * env.num_envs
        for step in range(100):  # standing still: every agent times out on the 100th action
            obs, rewards, terminateds, truncateds, infos = env.vector_step(stay)
            assert not any(terminateds) and all(truncateds) == (step == 99) and any(truncateds) == (step == 99)
        for i in range(env.num_envs):
            np.testing.assert_allclose(obs[i]["obs"], infos[i]["final_obs"]["obs"], atol=1e-6)
            assert not np.allclose(env.reset_at(i)[0]["obs"], obs[i]["obs"])
        first = [env.reset_at(i)[0]["obs"] for i in range(env.num_envs)]
        obs, *_ = env.vector_step(stay)  # the new episodes go on from reset_at's observations
        np.testing.assert_allclose([o["obs"] for o in obs], first, atol=1e-6)

        reached = False
        for _ in range(100):  # head for the target (the benchmark's scripted policy) until one reaches it
            move = godot_chase.scripted_action(np.array([o["obs"] for o in obs]), "discrete")
            obs, rewards, terminateds, truncateds, infos = env.vector_step([(int(m),) for m in move[:, 0]])
            assert not any(truncateds)
            for i in np.flatnonzero(terminateds):
                reached = True
                assert np.linalg.norm(obs[i]["obs"][2:4]) < 0.1  # the final observation: at the target
                assert np.linalg.norm(env.reset_at(i)[0]["obs"][2:4]) >= 0.2  # a new episode's start
                assert rewards[i] > 0.9  # the reach bonus
            obs = [env.reset_at(i)[0] if terminateds[i] else obs[i] for i in range(env.num_envs)]
            if reached:
                break
        assert reached
    finally:
        env.close()
    assert env._env.proc.poll() is not None  # close() waits for the game to quit


def test_without_a_port_each_game_listens_on_a_free_port_of_its_own(rllib_script):
    """Two games launched without a port: each connects to a socket that listened, on a port the system
    picked, before the game started (launch_game), and plays."""
    envs = []
    try:
        for _ in range(2):
            envs.append(make_env(rllib_script, None, autoreset_mode="same_step"))
        ports = [env._env.port for env in envs]
        assert len(set(ports)) == 2 and all(isinstance(port, int) and port > 0 for port in ports), ports
        for env in envs:
            obs, _ = env.vector_reset()
            assert len(env.vector_step([(0,)] * env.num_envs)[0]) == len(obs) == env.num_envs
    finally:
        for env in envs:
            env.close()


def test_env_runner_i_takes_port_plus_i_and_the_last_runners_port_must_exist(rllib_script, capsys):
    """Env runner i (1, 2, ...; RLlib's worker_index) launches its game on --port + i, or a free port without
    --port; so --port is refused unless --port + the number of runners is at most 65535."""
    from ray.rllib.env.env_context import EnvContext
    assert [rllib_script.runner_port(EnvContext({"base_port": 5000}, worker_index=i)) for i in (1, 2, 3)] == [
        5001, 5002, 5003]
    assert rllib_script.runner_port(EnvContext({"base_port": None}, worker_index=2)) is None
    runners = ["--env-path", CHASE["discrete"], "--num-env-runners", "3", "--num-cpus", "3"]
    assert rllib_script.parse_args(runners + ["--port", str(65535 - 3)]).port == 65532
    for port in (65535 - 2, 0):
        with pytest.raises(SystemExit):
            rllib_script.parse_args(runners + ["--port", str(port)])
        assert "--port must be 1 to 65532 (the games take port + 1, ..., port + 3)" in capsys.readouterr().err


def test_a_given_port_that_is_taken_is_named_before_the_game_starts(rllib_script, port):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        with pytest.raises(RuntimeError, match=f"^port {port} is already in use .*leave it out for free ones$"):
            make_env(rllib_script, port)
    assert not pids(game_pattern([port]))


def test_a_game_that_resets_on_the_step_after_is_refused(rllib_script, port):
    env = make_env(rllib_script, port)  # Chase's default: reset on the step after the end
    try:
        env.vector_reset()
        stay = [(0,)] * env.num_envs
        for _ in range(100):
            env.vector_step(stay)
        with pytest.raises(RuntimeError, match="--autoreset_mode=same_step"):
            env.vector_step(stay)
    finally:
        env.close()


def test_bad_input_gets_one_line(rllib_script, tmp_path):
    proc = run_script(SCRIPT, "--env-path", str(tmp_path / "missing.x86_64"), cwd=tmp_path, check=False)
    assert_one_line_error(proc, "no such file")
    proc = run_script(SCRIPT, "--env-path", CHASE["discrete"], "--num-env-runners", "3", "--num-cpus", "2",
                      cwd=tmp_path, check=False)
    assert_one_line_error(proc, "needs as many CPUs")


def test_a_game_that_never_connects_ends_the_run_in_one_line(rllib_script, tmp_path, port):
    game = tmp_path / "silent.x86_64"
    game.write_text("#!/bin/sh\nsleep 600\n")  # starts, never connects
    game.chmod(0o755)
    ray_before = pids(RAY_PROCESSES)
    proc = run_script(SCRIPT, "--env-path", str(game), "--num-env-runners", "1", "--num-cpus", "1",
                      "--port", str(port), "--connect-timeout", "3", cwd=tmp_path, check=False, timeout=300)
    ray_log = re.compile(r"^\d{4}-\d\d-\d\d [\d:,]+\s+(INFO|WARNING) ")  # Ray's start-up lines
    lines = [line for line in proc.stderr.splitlines() if line.strip() and not ray_log.match(line)]
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines == [f"error: the game on port {port + 1} did not connect: timed out"], proc.stderr
    assert not wait_until_gone(rf"sleep 600|{game}")
    assert not set(wait_until_gone(RAY_PROCESSES)) - set(ray_before)


KILLED_WHILE_RAY_WAITS = """
import signal, sys, time
import ray
sys.path.insert(0, "scale")
import ppo_rllib_godot as script
ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
signal.signal(signal.SIGTERM, script.stop_on_kill)
slow = ray.remote(lambda: time.sleep(60))
print("waiting", flush=True)
try:
    ray.get(slow.remote())
except (KeyboardInterrupt, SystemExit) as e:
    code = script.stop_code(e)
ray.shutdown()
sys.exit(code)
"""


def test_a_kill_while_the_driver_waits_inside_ray_exits_143(rllib_script, tmp_path):
    """The cause of a kill that once exited 1: a SystemExit raised by the SIGTERM handler while the
    driver blocks in ray.get comes out of Ray as SystemExit(1) (its check_signals turns it into an
    'unexpected system exit'). Here the driver surely waits inside Ray when the kill comes."""
    ray_before = pids(RAY_PROCESSES)
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WHILE_RAY_WAITS], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    assert proc.stdout.readline() == "waiting\n", proc.stderr.read()
    time.sleep(2)  # inside ray.get
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == 143
    assert not set(wait_until_gone(RAY_PROCESSES)) - set(ray_before)
