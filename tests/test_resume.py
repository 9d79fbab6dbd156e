"""--resume: a run stopped anywhere (in a rollout, in an update, in the last update) and resumed
gives exactly the metrics of the run that was never stopped, read back from its event files. A
game's state cannot be saved: ppo_godot.py resumes with new episodes from the saved boundary
(with a fake game in this process; the real Chase game for a run whose game died mid-rollout)."""
import os
import pickle
import signal
import time

import gymnasium as gym
import pytest
import torch

import ppo_godot
from conftest import CHASE, GODOT, GODOT_LSTM, GYM_SCRIPTS, game_pids, needs_godot, read_scalars, read_text_tags, run_dirs

ITERATIONS = 6


class SignalAt(gym.Wrapper):
    """Sends this process SIGINT at the sub-env step numbered `at` (counted over all sub-envs)."""
    at, steps = None, 0

    def step(self, action):
        SignalAt.steps += 1
        if SignalAt.steps == SignalAt.at:
            os.kill(os.getpid(), signal.SIGINT)
        return self.env.step(action)


@pytest.fixture
def signal_at(script, monkeypatch):
    script.wrap_each_env(monkeypatch, SignalAt)
    SignalAt.at, SignalAt.steps = None, 0

    def arm(at):
        SignalAt.at, SignalAt.steps = at, 0
    return arm


def signal_at_gae(script, monkeypatch, on_call):
    """SIGINT as the on_call-th GAE starts: after that rollout, in its update."""
    calls = []
    original = script.module.compute_gae

    def signalling(*args):
        calls.append(1)
        if len(calls) == on_call:
            os.kill(os.getpid(), signal.SIGINT)
        return original(*args)

    monkeypatch.setattr(script.module, "compute_gae", signalling)


def flags(script, *extra):
    args = script.module.parse_args(script.short)
    return script.short + ["--total-timesteps", str(ITERATIONS * args.batch_size), *extra]


def train_in(folder, script, argv, monkeypatch):
    """Train in `folder`; the exit code when the run stops itself, else None."""
    folder.mkdir(exist_ok=True)
    monkeypatch.chdir(folder)
    try:
        script.module.train(script.module.parse_args(argv))
    except SystemExit as stop:
        return stop.code
    return None


def resume(folder, script, extra, monkeypatch):
    """The second life of the run in `folder`: at least a second later, as a user would start it
    (TensorBoard orders event files by the second in their names)."""
    time.sleep(1.0 - time.time() % 1.0 + 0.05)
    (run_dir,) = run_dirs(folder)
    checkpoint = run_dir / f"{script.module.__name__}.pt"
    assert train_in(folder, script, ["--resume", str(checkpoint), *extra], monkeypatch) is None
    return run_dir


def assert_same_metrics(reference_dir, resumed_dir, iterations=ITERATIONS):
    reference, resumed = read_scalars(reference_dir), read_scalars(resumed_dir)
    assert reference.keys() == resumed.keys()
    assert len(reference["losses/policy_loss"]) == iterations
    for tag in reference:
        if tag != "charts/SPS":  # wall-clock
            assert resumed[tag] == reference[tag], tag  # same steps, same values, nothing twice
    assert read_text_tags(resumed_dir).count("hyperparameters/text_summary") == 1


@pytest.mark.parametrize("script", GYM_SCRIPTS, ids=repr)
@pytest.mark.parametrize("where", ["rollout", "update", "last update"])
def test_stopped_and_resumed_equals_never_stopped(script, where, tmp_path, monkeypatch, signal_at):
    argv = flags(script)
    assert train_in(tmp_path / "reference", script, argv, monkeypatch) is None

    args = script.module.parse_args(argv)
    if where == "rollout":  # half-way through the third rollout
        signal_at(int(2.5 * args.batch_size))
    else:
        signal_at_gae(script, monkeypatch, on_call=3 if where == "update" else ITERATIONS)
    assert train_in(tmp_path / "stopped", script, argv, monkeypatch) == 130
    saved = torch.load(run_dirs(tmp_path / "stopped")[0] / f"{script.module.__name__}.pt")
    assert saved["script"] == script.file
    signal_at(None)

    if where == "last update":  # the update it stopped in was the last: the run is complete
        assert pickle.loads(saved["resume"])["iteration"] == ITERATIONS
        assert_same_metrics(run_dirs(tmp_path / "reference")[0], run_dirs(tmp_path / "stopped")[0])
        return
    resumed_dir = resume(tmp_path / "stopped", script, [], monkeypatch)
    assert_same_metrics(run_dirs(tmp_path / "reference")[0], resumed_dir)


@pytest.mark.parametrize("script", GYM_SCRIPTS, ids=repr)
def test_a_finished_run_continues_with_more_timesteps(script, tmp_path, monkeypatch, capsys):
    argv = flags(script, "--anneal-lr", "false")  # annealing follows the total, which changes here
    assert train_in(tmp_path / "reference", script, argv, monkeypatch) is None

    args = script.module.parse_args(argv)
    half = args.batch_size * ITERATIONS // 2
    short = argv + ["--total-timesteps", str(half), "--save-model"]
    assert train_in(tmp_path / "extended", script, short, monkeypatch) is None
    capsys.readouterr()
    resumed_dir = resume(tmp_path / "extended", script, ["--total-timesteps", str(2 * half)], monkeypatch)
    said = f"the learning rate stays {args.learning_rate:.1e}, only the run's length changes"
    assert (f"resume: --total-timesteps {2 * half}, the run started with {half}: --anneal-lr is off: {said}"
            in capsys.readouterr().out.splitlines())
    assert_same_metrics(run_dirs(tmp_path / "reference")[0], resumed_dir)


@pytest.mark.parametrize("before, stopped, after, said", [
    (3, False, 6, "goes from 3.3e-04 at the stop to 5.0e-04"),  # (1 - 2/3) lr, then (1 - 3/6) lr: it rises
    (6, True, 4, "goes from 6.7e-04 at the stop to 2.5e-04"),  # (1 - 2/6) lr, then (1 - 3/4) lr: it falls at once
], ids=["a larger total", "a smaller total"])
@pytest.mark.parametrize("script", GYM_SCRIPTS, ids=repr)
def test_a_new_total_on_resume_respreads_the_learning_rate_decay_and_says_so(script, before, stopped, after, said,
                                                                            tmp_path, monkeypatch, signal_at, capsys):
    """--anneal-lr decays the rate over --total-timesteps: a run resumed after its 3rd update with another
    total goes on with train()'s rate for the new total from the 4th update on, and says so; a finished run
    of 3 updates given 6, or a run of 6 stopped after its 3rd given 4. (ppo_godot.py's Run says it in the
    same lines as ppo.py's: test_shared_code.py.)"""
    lr = 1e-3
    batch = script.module.parse_args(script.short).batch_size  # 256
    if stopped:
        signal_at(int(2.5 * batch))  # half-way through the 3rd rollout: the run stops after its 3rd update
    argv = script.short + ["--learning-rate", str(lr), "--total-timesteps", str(before * batch)]
    assert train_in(tmp_path, script, argv, monkeypatch) == (130 if stopped else None)
    signal_at(None)
    capsys.readouterr()
    run_dir = resume(tmp_path, script, ["--total-timesteps", str(after * batch)], monkeypatch)
    assert (f"resume: --total-timesteps {after * batch}, the run started with {before * batch}: --anneal-lr's "
            f"linear decay now runs to 0 over the new total, so the learning rate {said} at the next update"
            ) in capsys.readouterr().out.splitlines()
    logged = dict(read_scalars(run_dir)["charts/learning_rate"])
    assert sorted(logged) == [batch * i for i in range(1, after + 1)]
    for iteration in range(1, after + 1):  # the first life's 3 on the old total's schedule, then the new one's
        expected = (1.0 - (iteration - 1.0) / (before if iteration <= 3 else after)) * lr
        assert logged[batch * iteration] == pytest.approx(expected, rel=1e-6), iteration


@pytest.mark.parametrize("script", [GODOT, GODOT_LSTM], ids=repr)
def test_a_game_resumes_with_new_episodes_from_the_saved_boundary(script, tmp_path, monkeypatch, signal_at,
                                                                  capsys):
    argv = script.short + ["--total-timesteps", str(ITERATIONS * 256)]  # the fake game: 4 agents x 64
    signal_at(int(2.5 * 256))  # half-way through the third rollout
    assert train_in(tmp_path, script, argv, monkeypatch) == 130
    (run_dir,) = run_dirs(tmp_path)
    saved = torch.load(run_dir / f"{script.module.__name__}.pt")
    assert pickle.loads(saved["resume"])["global_step"] == 3 * 256
    signal_at(None)

    starting_weights = []
    original = script.module.Agent.evaluate_actions

    def recording(self, x, action, *state):  # the weights of the first update of the second life
        if torch.is_grad_enabled() and not starting_weights:
            starting_weights.append({k: v.clone() for k, v in self.state_dict().items()})
        return original(self, x, action, *state)

    monkeypatch.setattr(script.module.Agent, "evaluate_actions", recording)
    assert resume(tmp_path, script, [], monkeypatch) == run_dir
    assert "a running game's episodes cannot be saved; the games start new ones" in capsys.readouterr().out
    assert all(torch.equal(starting_weights[0][k], v) for k, v in saved["model"].items())
    scalars = read_scalars(run_dir)
    # one point per iteration, each once: 3 from the first life, 3 from the second
    assert [step for step, _ in scalars["losses/policy_loss"]] == [256 * i for i in range(1, ITERATIONS + 1)]
    steps = [step for step, _ in scalars["charts/episodic_return"]]
    assert steps == sorted(steps) and steps[-1] > 3 * 256


def test_a_game_run_that_died_inside_an_iteration_resumes_logging_each_step_once(port, tmp_path, monkeypatch):
    """The real game is killed in a rollout: the run exits 1 with the state at the boundary before it.
    Resumed from there, the log holds the first life's points up to the boundary, then the second
    life's: none of the episodes the first life logged after the boundary, whose steps the second
    life plays again."""
    needs_godot()
    batch = 16 * 32  # the game's 16 agents x --num-steps 32
    argv = ["--env-path", CHASE["discrete"], "--port", str(port), "--num-steps", "32",
            "--total-timesteps", str(8 * batch)]
    steps, step = [], ppo_godot.GodotVecEnv.step

    def killing_the_game(self, actions):  # at the 110th step, half-way through the 4th rollout
        steps.append(1)
        if len(steps) == 110:
            for pid in game_pids(port):
                os.kill(pid, signal.SIGKILL)
        return step(self, actions)

    monkeypatch.setattr(ppo_godot.GodotVecEnv, "step", killing_the_game)
    assert train_in(tmp_path, GODOT, argv, monkeypatch) == 1
    monkeypatch.setattr(ppo_godot.GodotVecEnv, "step", step)
    (run_dir,) = run_dirs(tmp_path)
    boundary = pickle.loads(torch.load(run_dir / "ppo_godot.pt")["resume"])["global_step"]
    assert boundary == 3 * batch

    assert resume(tmp_path, GODOT, [], monkeypatch) == run_dir
    first_life, second_life = (read_scalars(f) for f in sorted(run_dir.glob("events.out.tfevents.*")))
    # the first episodes time out at step 100 x 16 = 1600, after the boundary; the second life's at 3136
    assert any(s > boundary for s, _ in first_life["charts/episodic_return"])
    assert second_life["charts/episodic_return"]
    merged = read_scalars(run_dir)
    assert merged.keys() == first_life.keys() | second_life.keys()
    for tag in merged:
        kept = [(s, v) for s, v in first_life.get(tag, []) if s <= boundary]
        assert merged[tag] == kept + second_life.get(tag, []), tag
    assert [s for s, _ in merged["losses/policy_loss"]] == [batch * i for i in range(1, 9)]
    # both lives' games wrote their own output to the one log in the run folder, the second after the first
    assert [log.name for log in run_dir.glob("*.log")] == [f"game-{port}.log"]
    assert (run_dir / f"game-{port}.log").read_text().count("Godot Engine v3.") == 2
    assert not game_pids(port)
