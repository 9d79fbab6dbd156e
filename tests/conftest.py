import argparse
import importlib
import os
import random
import re
import runpy
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import ppo  # noqa: E402 (the scripts are found through the path above)
import ppo_continuous_action  # noqa: E402
import ppo_godot  # noqa: E402
import ppo_godot_camera  # noqa: E402
import ppo_godot_lstm  # noqa: E402
import ppo_godot_multi_policy  # noqa: E402
import ppo_lstm  # noqa: E402
import as_a_process  # noqa: E402 (tests/, on the path as the conftest's folder)

# `pytest -n auto` runs a test per core: one torch thread each, as the scripts' --torch-threads default
torch.set_num_threads(1)

CHASE = {kind: str(REPO / "godot" / "chase" / f"chase_{kind}.x86_64")
         for kind in ("discrete", "multidiscrete", "continuous", "camera")}


def needs_part(part, why_missing):
    """For a test that needs an optional part (an engine, Chromium, Ray, W&B): notes it for .ci/run's bare pass
    (tests/bare_install.py), then, where the part is missing (why_missing, None when it is there), skips with that
    reason; under CI (CI=true), whose .ci/run installs every part, fails instead."""
    NEEDS.setdefault(FIXTURES_IN_SETUP[-1] if FIXTURES_IN_SETUP else current_test(), set()).add(part)
    if why_missing:
        if os.environ.get("CI"):
            pytest.fail(f"missing under CI, whose .ci/run must install it: {why_missing}", pytrace=False)
        pytest.skip(why_missing)


NEEDS = {}  # {a test's node id, or a fixture's name: the optional parts it needs} in this process
FIXTURES_IN_SETUP = []  # the fixtures being set up, innermost last


def current_test():
    return os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]  # "nodeid (setup)", "nodeid (call)"


def fixture_key(name, params):
    """A fixture's name, and its parameter where it has one (a test of the gymnasium scripts that shares a
    parametrized fixture with a Godot script's does not need Godot)."""
    return f"{name}[{params[name]!r}]" if name in params else name


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    FIXTURES_IN_SETUP.append(fixture_key(fixturedef.argname, {fixturedef.argname: request.param}
                                         if hasattr(request, "param") else {}))
    try:
        yield
    finally:
        FIXTURES_IN_SETUP.pop()


def pytest_sessionfinish(session):
    """With $PPO_TESTS_NEEDING_PARTS set to a folder, writes there each test that needs an optional part and
    the part, one tab-separated line each: tests/bare_install.py runs them again without their parts."""
    folder = os.environ.get("PPO_TESTS_NEEDING_PARTS")
    if not folder or not NEEDS:
        return
    lines = {f"{item.nodeid}\t{part}\n" for item in getattr(session, "items", [])
             for key in [item.nodeid, *(fixture_key(name, getattr(item, "callspec", None) and item.callspec.params
                                                    or {}) for name in item.fixturenames)]
             for part in NEEDS.get(key, ())}
    Path(folder).mkdir(parents=True, exist_ok=True)
    (Path(folder) / f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.tsv").write_text("".join(sorted(lines)))


def pytest_collection_modifyitems(config, items):
    """With $PPO_ONLY_TESTS naming a file of node ids, one a line, runs those alone (tests/bare_install.py: a
    parametrized id with brackets, colons or spaces in its text is no argument that pytest can parse)."""
    listing = os.environ.get("PPO_ONLY_TESTS")
    if not listing:
        return
    wanted = set(Path(listing).read_text().splitlines())
    keep, drop = [], []
    for item in items:
        (keep if re.sub(r"@[\w-]+$", "", item.nodeid) in wanted else drop).append(item)
    config.hook.pytest_deselected(items=drop)
    items[:] = keep


def needs_godot():
    """Skip without Debian's headless Godot 3 (a failure under CI)."""
    needs_part("godot3", None if shutil.which("godot3-server") else
               "needs Debian's headless Godot 3: apt-get install godot3-server")
    # A project's first start on a machine makes its user folder, fails to make logs/ in it and says
    # so in two `ERROR: make_dir_recursive` lines on stderr (Godot 3.2.3, godotengine/godot#44873;
    # later starts are quiet), which a test of a one-line error would count: make it as Godot would.
    godot_user_folder().mkdir(parents=True, exist_ok=True)


def benchmark(name):
    """The module benchmarks/<name>.py, as its folder's scripts import each other."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(REPO / "benchmarks"))


@pytest.fixture(scope="session")
def display():
    """An X display for games that render (the camera game on Debian's windowed Godot 3,
    godot3-runner): a virtual one, Xvfb, on a free display number, set as $DISPLAY for the games that
    a test starts. Skipped without them (a failure under CI)."""
    needs_godot()
    missing = [tool for tool in ("godot3-runner", "Xvfb") if shutil.which(tool) is None]
    needs_part("display", missing and f"needs a Godot 3 that renders and a virtual display ({' and '.join(missing)} "
                                      "missing): apt-get install godot3-runner xvfb")
    read_end, write_end = os.pipe()
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(write_end), "-screen", "0", "320x240x24", "-nolisten", "tcp"],
                            pass_fds=[write_end], stderr=subprocess.DEVNULL)
    os.close(write_end)
    with os.fdopen(read_end) as number:  # Xvfb writes the display number it took once it is ready
        display = f":{number.readline().strip()}"
    previous = os.environ.get("DISPLAY")
    os.environ["DISPLAY"] = display
    yield display
    xvfb.terminate()
    xvfb.wait()
    if previous is None:
        del os.environ["DISPLAY"]
    else:
        os.environ["DISPLAY"] = previous


def godot_user_folder(game=CHASE["discrete"]):
    """The game's user:// folder as Godot 3 on Linux places it: $XDG_DATA_HOME (or ~/.local/share),
    then godot/app_userdata/<config/name of the game's project.godot>."""
    project = (Path(game).parent / "project.godot").read_text()
    name = re.search(r'^config/name="(.*)"$', project, flags=re.M).group(1)
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(data) / "godot" / "app_userdata" / name


class Script:
    """A gymnasium training script, and the flags of a run of it that takes a few seconds."""

    batched_rollout_forward = True  # log pi_old and V of a rollout come from one forward after it

    def __init__(self, module, env_id, short):
        self.module, self.env_id, self.short = module, env_id, short
        self.file = module.__name__ + ".py"

    def __repr__(self):
        return self.module.__name__

    def user_argv(self):
        """The short run's flags for a process started as a user would."""
        return self.short

    def wrap_each_env(self, monkeypatch, wrapper):
        """Train on wrapper(env) inside the script's own env stack."""
        make_env = self.module.make_env
        monkeypatch.setattr(self.module, "make_env", lambda *a: lambda: wrapper(make_env(*a)()))

    def use_plain_envs(self, monkeypatch, wrapper=lambda env: env, max_episode_steps=30):
        """Replace the script's env stack by plain RecordEpisodeStatistics(wrapper(env))."""
        monkeypatch.setattr(self.module, "make_envs", lambda args, run_name: gym.vector.SyncVectorEnv([
            lambda: gym.wrappers.RecordEpisodeStatistics(
                wrapper(gym.make(self.env_id, max_episode_steps=max_episode_steps)))
            for _ in range(args.num_envs)]))

    def num_envs_argv(self, monkeypatch, num_envs):
        return ["--num-envs", str(num_envs)]

    def one_row_minibatches_argv(self, monkeypatch):
        """Minibatches of 2 rows, so that an autoreset row dropped from one leaves 1 row."""
        return self.num_envs_argv(monkeypatch, 1) + ["--num-steps", "16", "--num-minibatches", "8"]

    def greedy_method(self):
        """The agent's method that evaluation acts through first."""
        return "policy"

    def evaluate(self, checkpoint, eval_episodes, seed, greedy=True):
        return self.module.evaluate(str(checkpoint), eval_episodes, seed=seed, greedy=greedy)


class LSTMScript(Script):
    """ppo_lstm.py: a minibatch takes whole env sequences, and the rollout keeps log pi_old and V itself
    (no batched forward after it)."""
    batched_rollout_forward = False

    def one_row_minibatches_argv(self, monkeypatch):  # 8 envs of 2 steps, one env per minibatch
        return ["--num-envs", "8", "--num-steps", "2", "--num-minibatches", "8"]

    def greedy_method(self):
        return "memory"


class AsGameActions(gym.ActionWrapper):
    """CartPole with the action space ppo_godot.py builds for a game of one discrete action: its index,
    as a float."""

    def __init__(self, env):
        super().__init__(env)
        self.action_space = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)

    def action(self, action):
        return int(action[0])


class FakeGame(gym.vector.VectorWrapper):
    """What GodotVecEnv adds to a vector env's API: the game's layouts (ppo_godot.py's, and as
    ppo_godot_multi_policy.py reads them, one policy's), and infos["autoreset"], the agents that a step
    only reset (here gymnasium's: those whose episode ended on the step before), and bootstraps_from_final (none)."""

    def __init__(self, env):
        super().__init__(env)
        self.obs_layout, self.obs_keys, self.action_heads = [("obs", (4,))], ["obs"], [("move", "discrete", 2)]
        policy = argparse.Namespace(name="shared_policy", obs_layout=self.obs_layout, obs_keys=self.obs_keys,
                                    action_heads=self.action_heads, agent_ids=np.arange(self.num_envs),
                                    width=4, columns=1, padding=[], tag="")
        self.policies, self.agent_policy = {"shared_policy": policy}, [policy] * self.num_envs
        self.games = []  # no game processes, so no game logs

    def reset(self, **kwargs):
        self.autoreset = np.zeros(self.num_envs, dtype=bool)
        return super().reset(**kwargs)

    def step(self, actions):
        obs, reward, terminated, truncated, infos = super().step(actions)
        infos["autoreset"], self.autoreset = self.autoreset, terminated | truncated
        infos["new_episode"] = infos["autoreset"]  # ppo_godot_lstm.py's: the observation starts an episode
        infos["bootstraps_from_final"] = np.zeros(self.num_envs, dtype=bool)  # gymnasium's way: none is
        return obs, reward, terminated, truncated, infos


def fake_game(num_envs=4, wrapper=lambda env: env, max_episode_steps=None):
    """A stand-in for ppo_godot.GodotVecEnv (the games' side is tested with the real engine in
    test_ppo_godot.py): CartPole agents, each one env of a vector env with the same API."""
    return FakeGame(gym.vector.SyncVectorEnv([
        lambda: gym.wrappers.RecordEpisodeStatistics(
            AsGameActions(wrapper(gym.make("CartPole-v1", max_episode_steps=max_episode_steps))))
        for _ in range(num_envs)]))


class GodotScript(Script):
    """ppo_godot.py: in-process runs train on fake_game(); processes run the real Chase game."""

    def user_argv(self):  # 16 agents x 32 steps: 4 iterations of 512 steps
        needs_godot()
        return ["--env-path", CHASE["discrete"], "--port", str(free_port()), "--num-steps", "32",
                "--total-timesteps", "2048"]

    def wrap_each_env(self, monkeypatch, wrapper):
        monkeypatch.setattr(self.module, "make_envs", lambda args: fake_game(wrapper=wrapper))

    def use_plain_envs(self, monkeypatch, wrapper=lambda env: env, max_episode_steps=30):
        monkeypatch.setattr(self.module, "make_envs", lambda args: fake_game(
            wrapper=wrapper, max_episode_steps=max_episode_steps))

    def num_envs_argv(self, monkeypatch, num_envs):  # the game decides how many agents there are
        monkeypatch.setattr(self.module, "make_envs", lambda args: fake_game(num_envs))
        return []

    def greedy_method(self):
        return "get_action"

    def evaluate(self, checkpoint, eval_episodes, seed, greedy=True):
        args = self.module.parse_args(self.user_argv() + ["--eval-checkpoint", str(checkpoint),
                                                          "--eval-episodes", str(eval_episodes),
                                                          "--seed", str(seed)])
        return self.module.evaluate(args, greedy)


class GodotLSTMScript(GodotScript):
    """ppo_godot_lstm.py: ppo_godot.py's runs; the rollout keeps log pi_old and V itself, and a minibatch takes
    whole agent sequences."""
    batched_rollout_forward = False

    def one_row_minibatches_argv(self, monkeypatch):  # 8 agents of 2 steps, one agent per minibatch
        return self.num_envs_argv(monkeypatch, 8) + ["--num-steps", "2", "--num-minibatches", "8"]

    def greedy_method(self):
        return "memory"


# Runs this small take a few seconds: 4 iterations of 256 steps.
GYM_SCRIPTS = [
    Script(ppo, "CartPole-v1", ["--total-timesteps", "1024", "--num-envs", "4", "--num-steps", "64"]),
    Script(ppo_continuous_action, "Pendulum-v1",
           ["--env-id", "Pendulum-v1", "--total-timesteps", "1024", "--num-envs", "2",
            "--num-steps", "128", "--num-minibatches", "4", "--update-epochs", "2"]),
    LSTMScript(ppo_lstm, "CartPoleNoVel-v1", ["--total-timesteps", "1024", "--num-envs", "4", "--num-steps", "64"]),
]
GODOT = GodotScript(ppo_godot, "godot-editor", ["--total-timesteps", "1024", "--num-steps", "64"])
GODOT_LSTM = GodotLSTMScript(ppo_godot_lstm, "godot-editor", ["--total-timesteps", "1024", "--num-steps", "64"])
SCRIPTS = GYM_SCRIPTS + [GODOT, GODOT_LSTM]


@pytest.fixture(autouse=True)
def signal_handlers_as_they_were():
    """A run stopped by a signal in this process leaves Ctrl-C and kill ignored, as it ends: put them back."""
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    for stop_signal, handler in previous.items():
        signal.signal(stop_signal, handler)


@pytest.fixture(params=SCRIPTS, ids=repr)
def script(request, monkeypatch):
    """Each training script; in this process ppo_godot.py and ppo_godot_lstm.py train on fake_game()."""
    if request.param in (GODOT, GODOT_LSTM):
        monkeypatch.setattr(request.param.module, "make_envs", lambda args: fake_game())
    return request.param


def as_from_a_terminal():
    """preexec_fn for a process the test will Ctrl-C: SIGINT as a terminal's foreground process gets
    it. A shell starts background jobs (a CI runner's, say) with SIGINT ignored, and a Python started
    so never raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_script(script, *argv, cwd, timeout=300, check=True):
    """Run a top-level script as a user would, from `cwd` (so runs/ lands there), in a process of its
    own that starts with torch imported (as_a_process.py)."""
    proc = as_a_process.run(REPO / script, argv, cwd=cwd, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{script} {' '.join(argv)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return proc


def assert_one_line_error(proc, message, code=2):
    """The process ended with one `error:` line naming `message`, no traceback (Godot's start-up
    banner aside)."""
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("Godot Engine")]
    assert len(lines) == 1, proc.stderr
    assert "error:" in lines[0] and message in lines[0], lines[0]


def run_dirs(cwd):
    return sorted(p for p in (Path(cwd) / "runs").iterdir() if p.is_dir())


def saved_agents(checkpoint_path):
    """{policy name: (Agent with its saved weights, its obs_layout)} of a checkpoint of ppo_godot.py or
    ppo_godot_camera.py (its one policy: "") or of ppo_godot_multi_policy.py."""
    checkpoint = torch.load(checkpoint_path)
    if checkpoint["script"] in ("ppo_godot.py", "ppo_godot_camera.py"):
        agent = ppo_godot_camera.saved_agent(checkpoint, checkpoint_path)  # its Agent takes both kinds
        return {"": (agent, agent.obs_layout)}
    saved = ppo_godot_multi_policy.saved_policies(checkpoint, checkpoint_path)
    agents = {}
    for name, (obs_layout, action_heads, weights) in saved.items():
        agents[name] = (ppo_godot.Agent(obs_layout, action_heads), obs_layout)
        agents[name][0].load_state_dict(weights)
    return agents


def read_scalars(run_dir):
    """{tag: [(step, value), ...]} read back with TensorBoard's own event reader."""
    acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def read_text_tags(run_dir):
    acc = EventAccumulator(str(run_dir), size_guidance={"tensors": 0})
    acc.Reload()
    return acc.Tags()["tensors"]


PORTS = random.SystemRandom()


def free_port(count=2):
    """A port p with p, ..., p + count - 1 free now (game_pids looks at p and p + 1). Drawn below
    Linux's ephemeral range (32768 on), where no client socket takes a port behind our back, and by
    SystemRandom: the seed an in-process run gives `random` must not make two pytest workers draw
    the same ports."""
    for _ in range(100):
        p = PORTS.randrange(20000, 32768 - count)
        try:
            for candidate in range(p, p + count):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", candidate))
            return p
        except OSError:
            continue
    raise RuntimeError(f"no {count} free ports in a row")


def listening(port=0):
    """A socket listening on port (0: a free port that the system picks), for the game started next to
    connect to: ppo_godot.GuardedGodotEnv accepts the game on it."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(1)
    return listener


@pytest.fixture
def game():
    """game(launcher, *flags): a demo game started as the trainer starts it, on a port the system picks, and
    spoken to as the trainer does: (its env_info, its reply to reset, play(actions) -> its reply to one action
    message; play.pid is the game's process). Every game it started is closed at the end, and none is left
    running."""
    needs_godot()
    started = []

    def start(launcher, *flags):
        with listening() as listener:
            port = listener.getsockname()[1]
            proc = subprocess.Popen([str(launcher), f"--port={port}", "--env_seed=3", "--fixed-fps", "60", *flags],
                                    start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            started.append([None, proc, port])
            connected = started[-1][0] = ppo_godot.GuardedGodotEnv(listener, proc, 30)
        connected._send_as_json({"type": "reset"})
        first = ppo_godot.await_reply(connected, 10)

        def play(actions):
            connected._send_as_json({"type": "action", "action": actions})
            return ppo_godot.await_reply(connected, 10)

        play.pid = proc.pid
        return connected.env_info, first, play

    yield start
    for connected, proc, port in started:
        try:
            if connected is not None:
                connected._send_as_json({"type": "close"})
            proc.wait(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert not game_pids(port)


def game_pids(port):
    """Game processes started for this port (or the next one): their whole command lines name it."""
    out = subprocess.run(["pgrep", "-f", "--", f"--port=({port}|{port + 1})( |$)"], capture_output=True, text=True)
    return [int(pid) for pid in out.stdout.split()]


@pytest.fixture
def port():
    """A port p with p, p+1 and p+2 free (--n-parallel 2 takes p and p+1; two RLlib env runners
    take p+1 and p+2)."""
    return free_port(3)


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    """Run in-process training from an empty folder."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


# ------------------------------------------------------------------------------------------------
# The grader of ppo_scratch_skeleton.py: `--solution FILE` (repeatable) grades FILE instead of
# the reference completion.
# ------------------------------------------------------------------------------------------------
def pytest_addoption(parser):
    parser.addoption("--solution", action="append", default=[],
                     help="grade this completed ppo_scratch_skeleton.py (default: the reference)")


def pytest_configure(config):
    config.addinivalue_line("markers", "learning: trains for a while (left out when grading mutants)")
    folder = os.environ.get("PPO_TESTS_NEEDING_PARTS")
    audit = REPO / "tests" / "parts_audit"
    if folder and str(audit) not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        Path(folder).mkdir(parents=True, exist_ok=True)
        os.environ["PPO_TESTS_NEEDING_PARTS"] = str(Path(folder).resolve())  # for processes in other folders
        # this process and every Python a test starts note the tests that import Ray or W&B
        os.environ["PYTHONPATH"] = os.pathsep.join([str(audit), *filter(None, [os.environ.get("PYTHONPATH")])])
        runpy.run_path(str(audit / "sitecustomize.py"))


def pytest_generate_tests(metafunc):
    if "solution_path" in metafunc.fixturenames:
        paths = metafunc.config.getoption("solution") or ["reference"]
        metafunc.parametrize("solution_path", paths, ids=[Path(p).stem for p in paths], scope="module")


def plugin_inference(session, obs, action_space, older=False):
    """The Godot RL Agents plugin's in-game inference, reimplemented from its source (commit bf5d6a2
    of edbeeching/godot_rl_agents_plugin, addons/godot_rl_agents/): ONNXInference.cs feeds state_ins
    and one [1, len] input per key of get_obs(), named after the key, and reads `output`, whose width
    ONNX_wrapper.gd compares with the continuous sizes (a model of continuous actions only whose width
    is their sum outputs means only; otherwise a continuous action takes 2 x size slots, mean then
    log std); sync.gd's _extract_action_dict walks the game's declared actions in order, taking the
    first largest logit of a discrete action (deterministic_inference) and clamping a continuous
    one's mean to [-1, 1]. older: the plugin from 6245daa until fda220a, whose argmax starts at a largest
    logit of 0 and index 0 and takes only a larger one. obs and action_space are dicts in the game's order."""
    feed = {"state_ins": np.array([1.0], np.float32)}
    feed.update({key: np.array([values], np.float32) for key, values in obs.items()})
    output = session.run(["output", "state_outs"], feed)[0][0].tolist()
    width = session.get_outputs()[0].shape[1]
    means_only = (all(spec["action_type"] == "continuous" for spec in action_space.values())
                  and sum(spec["size"] for spec in action_space.values()) == width)
    actions, index = {}, 0
    for key, spec in action_space.items():
        size = spec["size"]
        if spec["action_type"] == "discrete":
            logits = output[index:index + size]
            if older:
                best, largest = 0, 0.0
                for i, logit in enumerate(logits):
                    if logit > largest:
                        best, largest = i, logit
                actions[key] = best
            else:
                actions[key] = max(range(size), key=lambda i: (logits[i], -i))  # the first of equal maxima
            index += size
        else:
            actions[key] = [min(max(v, -1.0), 1.0) for v in output[index:index + size]]
            index += size if means_only else 2 * size
    return actions


def assert_plugin_plays_like_torch(agent, session, obs_space, action_space, n=200, obs_range=1.0, tol=1e-5,
                                   older=False):
    """On random observations, the action the plugin's inference (plugin_inference) takes from the
    ONNX model is the torch policy's deterministic action as ppo_godot.py sends it. obs_space
    {key: size, or a camera's (H, W, C)} and action_space {name: (kind, size)} are the game's, in its order."""
    heads = [(name, kind, size) for name, (kind, size) in action_space.items()]
    declared = {name: {"action_type": kind, "size": size} for name, (kind, size) in action_space.items()}
    rng = np.random.default_rng(0)
    for _ in range(n):  # a camera key's (H, W, C) pixels: floats 0-255, as a game sends them to a model
        obs = {key: (rng.integers(0, 256, np.prod(size)) if isinstance(size, tuple)
                     else rng.uniform(-obs_range, obs_range, size)).astype(np.float32).tolist()
               for key, size in obs_space.items()}
        x = torch.tensor([sum((obs[key] for key in sorted(obs)), [])])
        with torch.no_grad():
            expected = ppo_godot.to_game_action(agent.get_action(x, greedy=True)[0].numpy(), heads)
        played = plugin_inference(session, obs, declared, older)
        assert list(played) == list(expected)
        for name, (kind, _) in action_space.items():
            if kind == "discrete":
                assert played[name] == expected[name], (name, obs)
            else:
                np.testing.assert_allclose(played[name], expected[name], rtol=tol, atol=tol)
