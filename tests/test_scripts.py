"""What the four training scripts share: GAE, autoreset masking, the update's diagnostics,
logging, determinism, checkpoints, evaluation and interrupts. Each test runs on all four
(ppo_godot.py in this process on a fake game, in a process of its own on the real Chase game)."""
import json
import math
import os
import pickle
import re
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import gymnasium as gym
import numpy as np
import pytest
import torch

from conftest import (REPO, SCRIPTS, as_from_a_terminal, free_port, read_scalars, read_text_tags, run_dirs,
                      run_script)


TAGS = ["charts/episodic_return", "charts/episodic_length", "charts/learning_rate", "charts/SPS",
        "losses/policy_loss", "losses/value_loss", "losses/entropy", "losses/old_approx_kl",
        "losses/approx_kl", "losses/clipfrac", "losses/explained_variance", "diagnostics/grad_norm"]


# ------------------------------------------------------------------------------------------------
# GAE
# ------------------------------------------------------------------------------------------------
def gae(script, rewards, values, terminations, truncations, next_value, gamma=0.99, gae_lambda=0.95):
    as_array = lambda x: np.asarray(x, dtype=np.float32).reshape(len(x), -1)
    return script.module.compute_gae(as_array(rewards), as_array(values), as_array(terminations),
                           as_array(truncations), np.asarray(next_value, np.float32).reshape(-1),
                           gamma, gae_lambda)


def test_gae_worked_example(script):
    advantages, returns = gae(script, [0, 0, 0, 1], [0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0], [0])
    np.testing.assert_allclose(advantages[:, 0], [0.8319, 0.8845, 0.9405, 1.0], atol=1e-4)
    np.testing.assert_allclose(returns, advantages)


def test_gae_bootstraps_truncation_but_not_termination(script):
    # One-step episodes ending at t=0, then the autoreset row t=1 whose stored obs is s_final.
    values = [0.0, 10.0, 0.0]  # values[1] = V(s_final)
    terminated, _ = gae(script, [1, 0, 0], values, [1, 0, 0], [0, 0, 0], [0])
    truncated, _ = gae(script, [1, 0, 0], values, [0, 0, 0], [1, 0, 0], [0])
    assert terminated[0, 0] == pytest.approx(1.0)
    assert truncated[0, 0] == pytest.approx(1.0 + 0.99 * 10.0)


def per_episode_reference(rewards, values, terminations, truncations, is_transition, next_value,
                          gamma, gae_lambda):
    """A_t = sum_k (gamma lambda)^k delta_{t+k}, summed forward inside each episode only."""
    num_steps, num_envs = rewards.shape
    expected = np.full((num_steps, num_envs), np.nan)
    for env in range(num_envs):
        values_next = np.append(values[1:, env], next_value[env])
        for t in range(num_steps):
            if not is_transition[t, env]:
                continue
            total, discount = 0.0, 1.0
            for k in range(t, num_steps):
                bootstrap = 0.0 if terminations[k, env] else values_next[k]
                total += discount * (rewards[k, env] + gamma * bootstrap - values[k, env])
                if terminations[k, env] or truncations[k, env]:
                    break
                discount *= gamma * gae_lambda
            expected[t, env] = total
    return expected


def synthetic_rollout(num_steps=40, num_envs=5, seed=0):
    """Random rollout with gymnasium 1.0's layout: after an end, an autoreset row (r=0, no flags)."""
    rng = np.random.default_rng(seed)
    shape = (num_steps, num_envs)
    rewards, terminations, truncations = rng.normal(size=shape), np.zeros(shape), np.zeros(shape)
    is_transition = np.ones(shape, dtype=bool)
    for env in range(num_envs):
        for t in range(num_steps):
            if t > 0 and (terminations[t - 1, env] or truncations[t - 1, env]):
                is_transition[t, env] = False
                rewards[t, env] = 0.0
                continue
            u = rng.random()
            terminations[t, env] = u < 0.1
            truncations[t, env] = 0.1 <= u < 0.2 or u < 0.02  # sometimes both flags at once
    return (rewards.astype(np.float32), rng.normal(size=shape).astype(np.float32),
            terminations.astype(np.float32), truncations.astype(np.float32), is_transition,
            rng.normal(size=num_envs).astype(np.float32))


@pytest.mark.parametrize("gae_lambda", [0.95, 1.0])
def test_gae_matches_per_episode_reference(script, gae_lambda):
    rewards, values, terminations, truncations, is_transition, next_value = synthetic_rollout()
    assert (~is_transition).sum() > 10 and truncations.sum() > 5 and terminations.sum() > 5
    advantages, returns = script.module.compute_gae(rewards, values, terminations, truncations,
                                                    next_value, 0.99, gae_lambda)
    expected = per_episode_reference(rewards, values, terminations, truncations, is_transition,
                                     next_value, 0.99, gae_lambda)
    np.testing.assert_allclose(advantages[is_transition], expected[is_transition], atol=1e-4)
    np.testing.assert_allclose(returns, advantages + values, atol=1e-6)


# ------------------------------------------------------------------------------------------------
# The training loop, observed from inside
# ------------------------------------------------------------------------------------------------
SENTINEL = 1000.0


class MarkFinalObservation(gym.Wrapper):
    """Replaces an episode's final observation by a sentinel; under next-step autoreset it is
    stored exactly in the autoreset rows, which must never reach the loss."""

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            obs = np.full_like(obs, SENTINEL)
        return obs, reward, terminated, truncated, info


def record_agent_calls(script, monkeypatch):
    """Record every evaluate_actions call: (grad enabled?, obs, action, logprob). ppo_lstm.py's also
    takes the LSTM states and where episodes start."""
    calls = []
    original = script.module.Agent.evaluate_actions

    def recording(self, x, action, *memory):
        out = original(self, x, action, *memory)
        calls.append((torch.is_grad_enabled(), x.detach().clone(), action.detach().clone(),
                      out[0].detach().clone()))
        return out

    monkeypatch.setattr(script.module.Agent, "evaluate_actions", recording)
    return calls


def test_autoreset_rows_never_reach_the_loss(script, in_tmp, monkeypatch):
    script.use_plain_envs(monkeypatch, MarkFinalObservation)
    calls = record_agent_calls(script, monkeypatch)
    autoreset_rows, ppo_update = [], script.module.ppo_update

    def counting(args, agent, optimizer, storage, *rest):  # the rows each rollout stored
        autoreset_rows.append(int((storage.obs[..., 0] == SENTINEL).sum()))
        return ppo_update(args, agent, optimizer, storage, *rest)

    monkeypatch.setattr(script.module, "ppo_update", counting)
    args = script.module.parse_args(script.short + ["--update-epochs", "2"])
    script.module.train(args)

    update_obs = [x for grad, x, _, _ in calls if grad]
    assert len(autoreset_rows) == args.num_iterations
    assert sum(autoreset_rows) > 10  # the test can fail: autoreset rows do get stored
    assert all(not (x == SENTINEL).any() for x in update_obs)
    rows_per_epoch = [args.batch_size - n for n in autoreset_rows]
    assert sum(len(x) for x in update_obs) == args.update_epochs * sum(rows_per_epoch)


def test_logged_values_at_learning_rate_zero(script, in_tmp):
    """With --learning-rate 0 the policy never moves, so the script's own r_t is 1 on every
    minibatch: approx_kl and clipfrac log 0, L^CLIP = mean(normalised A_t) ~ 0, and the entropy
    stays that of the initial policy. Reads the values the script logged, not its tags."""
    script.module.train(script.module.parse_args(script.short + ["--learning-rate", "0"]))
    scalars = {tag: [v for _, v in points] for tag, points in read_scalars(run_dirs(in_tmp)[0]).items()}
    assert len(scalars["losses/approx_kl"]) == 4
    assert max(abs(v) for v in scalars["losses/approx_kl"] + scalars["losses/old_approx_kl"]) < 1e-6
    assert scalars["losses/clipfrac"] == [0.0] * 4
    assert max(abs(v) for v in scalars["losses/policy_loss"]) < 1e-5
    assert min(scalars["losses/value_loss"]) > 1e-3  # the critic is untrained
    entropy = {"ppo_continuous_action": 0.5 + 0.5 * math.log(2 * math.pi)}.get(repr(script), math.log(2))
    assert scalars["losses/entropy"] == pytest.approx([entropy] * 4, abs=1e-3)
    assert scalars["charts/learning_rate"] == [0.0] * 4
    assert min(scalars["diagnostics/grad_norm"]) > 0


def test_target_kl_stops_both_loops(script, in_tmp, monkeypatch):
    calls = record_agent_calls(script, monkeypatch)
    args = script.module.parse_args(script.short + ["--target-kl", "1e-9"])
    script.module.train(args)
    # approx_kl is exactly 0 on the first minibatch (ratio 1), above the target on the second:
    # two gradient steps per iteration, then neither loop goes on
    assert sum(grad for grad, *_ in calls) == 2 * args.num_iterations
    scalars = read_scalars(run_dirs(in_tmp)[0])
    assert [v for _, v in scalars["diagnostics/update_epochs_done"]] == [1.0] * args.num_iterations


def capture_gae_inputs(module, monkeypatch):
    seen = []
    original = module.compute_gae

    def capturing(rewards, values, terminations, truncations, *rest):
        seen.append((rewards.copy(), terminations.copy(), truncations.copy()))
        return original(rewards, values, terminations, truncations, *rest)

    monkeypatch.setattr(module, "compute_gae", capturing)
    return seen


@pytest.mark.parametrize("bootstrap", ["true", "false"])
def test_bootstrap_truncation_flag(script, in_tmp, monkeypatch, bootstrap):
    script.use_plain_envs(monkeypatch, max_episode_steps=8)
    seen = capture_gae_inputs(script.module, monkeypatch)
    script.module.train(script.module.parse_args(script.short + ["--bootstrap-truncation", bootstrap]))
    episode_ends = np.concatenate([t for _, t, _ in seen])
    truncations = np.concatenate([tr for _, _, tr in seen])
    assert truncations.sum() > 0
    # treated as terminal (zero bootstrap) only when the flag is off
    assert (episode_ends[truncations == 1] == 1).all() == (bootstrap == "false")


def test_a_one_row_minibatch_left_by_autoreset_rows_trains_on(script, in_tmp, monkeypatch):
    # 2-row minibatches; each episode end drops an autoreset row and leaves a 1-row minibatch,
    # whose advantage std would be NaN
    args = script.module.parse_args(script.short + script.one_row_minibatches_argv(monkeypatch) + [
        "--total-timesteps", "1024" if script.env_id == "Pendulum-v1" else "512"])  # 5 episodes or more
    script.module.train(args)
    scalars = read_scalars(run_dirs(in_tmp)[0])
    assert len(scalars["charts/episodic_return"]) >= 5  # episodes did end, so rows were dropped
    assert len(scalars["losses/policy_loss"]) == args.num_iterations
    assert all(np.isfinite(v) for _, v in scalars["losses/policy_loss"])


class TurnsBadAfter(gym.Wrapper):
    """From its steps-th step on, the env returns an inf observation or a NaN reward."""

    def __init__(self, env, what, steps):
        super().__init__(env)
        self.what, self.steps_left = what, steps

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.steps_left -= 1
        if self.steps_left < 0 and self.what == "observation":
            obs = np.full_like(obs, np.inf)
        if self.steps_left < 0 and self.what == "reward":
            reward = np.nan
        return obs, reward, terminated, truncated, info


@pytest.mark.parametrize("what", ["observation", "reward"])
def test_nan_or_inf_from_the_env_is_named_as_an_env_fault(script, what, in_tmp, monkeypatch, capsys):
    script.wrap_each_env(monkeypatch, lambda env: TurnsBadAfter(env, what, 150))
    with pytest.raises(SystemExit) as stop:
        script.module.train(script.module.parse_args(script.short))
    assert stop.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and f"non-finite {what}" in lines[0] and "fault of the env" in lines[0]
    (run_dir,) = run_dirs(in_tmp)
    checkpoint = torch.load(run_dir / f"{script.module.__name__}.pt")
    assert all(torch.isfinite(w).all() for w in checkpoint["model"].values())
    for stats in (checkpoint.get("obs_rms") or {}).values():  # and the observation statistics
        assert torch.isfinite(stats).all()
    assert read_scalars(run_dir)["charts/SPS"]  # the iterations before it are logged


def test_nan_in_the_loss_stops_before_the_weights_change(script, in_tmp, monkeypatch, capsys):
    original = script.module.Agent.evaluate_actions
    grad_calls, weights_before = [], {}

    def poisoned(self, x, action, *memory):
        out = original(self, x, action, *memory)
        if torch.is_grad_enabled():
            grad_calls.append(1)
            if len(grad_calls) == 3:  # the third minibatch's log-probs turn NaN
                weights_before.update({k: v.clone() for k, v in self.state_dict().items()})
                return out[0] * np.nan, out[1], out[2]
        return out

    monkeypatch.setattr(script.module.Agent, "evaluate_actions", poisoned)
    with pytest.raises(SystemExit) as stop:
        script.module.train(script.module.parse_args(script.short))
    assert stop.value.code == 2
    message = capsys.readouterr().err.strip()
    assert "non-finite loss or gradient" in message and "model is saved" in message
    assert "cannot be resumed" in message  # its weights are between two update boundaries
    saved = torch.load(run_dirs(in_tmp)[0] / f"{script.module.__name__}.pt")["model"]
    assert saved.keys() == weights_before.keys()
    assert all(torch.equal(saved[k], weights_before[k]) for k in saved)  # the bad step changed nothing


def test_grad_norm_is_the_norm_before_clipping(script, in_tmp):
    script.module.train(script.module.parse_args(script.short + ["--max-grad-norm", "1e-6"]))
    grad_norms = [v for _, v in read_scalars(run_dirs(in_tmp)[0])["diagnostics/grad_norm"]]
    assert len(grad_norms) == 4 and min(grad_norms) > 1e-6


# ------------------------------------------------------------------------------------------------
# As a user runs it
# ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module", params=SCRIPTS, ids=repr)
def short_run(request, tmp_path_factory):
    """(script, cwd, run_dir, process) of a short run with --save-model, as a user starts it."""
    script = request.param
    cwd = tmp_path_factory.mktemp("short_run")
    proc = run_script(script.file, *script.user_argv(), "--seed", "3", "--save-model", cwd=cwd)
    (run_dir,) = run_dirs(cwd)
    return script, cwd, run_dir, proc


def test_short_run_writes_every_tag(short_run):
    _, _, run_dir, proc = short_run
    scalars = read_scalars(run_dir)
    for tag in TAGS:
        assert tag in scalars, tag
    assert len(scalars["charts/SPS"]) == 4  # once per iteration
    assert len(scalars["charts/episodic_return"]) >= 4
    assert "hyperparameters/text_summary" in read_text_tags(run_dir)
    assert "global_step=" in proc.stdout and "episodic_return=" in proc.stdout
    assert "SPS=" in proc.stdout and "time_left=" in proc.stdout


def test_tensorboard_server_serves_the_scalars(short_run):
    _, cwd, run_dir, _ = short_run
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "tensorboard.main", "--logdir", str(cwd / "runs"),
                               "--host", "127.0.0.1", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def get(path):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/data/plugin/scalars/{path}", timeout=5) as r:
                return json.load(r)

        deadline = time.time() + 60
        while True:
            try:
                served_tags = get("tags").get(run_dir.name, {})
                if served_tags:
                    break
            except OSError:
                pass
            assert time.time() < deadline, "TensorBoard did not serve the run within 60 s"
            time.sleep(0.5)
        query = urllib.parse.urlencode({"run": run_dir.name, "tag": "charts/episodic_return"})
        served = get(f"scalars?{query}")
    finally:
        server.terminate()
        server.wait(timeout=10)
    expected = read_scalars(run_dir)["charts/episodic_return"]
    assert set(TAGS) <= set(served_tags)
    # the server keeps one point per step (two episodes can end on the same global_step)
    expected_by_step = {}
    for step, value in expected:
        expected_by_step.setdefault(step, []).append(value)
    assert [step for _, step, _ in served] == sorted(expected_by_step)
    assert all(value in expected_by_step[step] for _, step, value in served)


def test_same_seed_gives_identical_metrics(short_run, tmp_path):
    script, _, first_run, _ = short_run
    run_script(script.file, *script.user_argv(), "--seed", "3", cwd=tmp_path)
    first, second = read_scalars(first_run), read_scalars(run_dirs(tmp_path)[0])
    for tag in TAGS:
        if tag != "charts/SPS":
            assert first[tag] == second[tag], tag


def test_save_load_evaluate_round_trip(short_run):
    script, cwd, run_dir, _ = short_run
    checkpoint = run_dir / f"{script.module.__name__}.pt"
    saved = torch.load(checkpoint)
    assert saved["script"] == script.file and saved["args"]["seed"] == 3
    proc = run_script(script.file, *script.user_argv(), "--eval-checkpoint", str(checkpoint),
                      "--eval-episodes", "2", cwd=cwd)
    for policy in ("greedy", "sampled"):  # both are reported: students are surprised they differ
        assert proc.stdout.count(f"{policy} eval_episode=") >= 2  # ppo_godot.py: as many from each agent
        assert f"{policy} policy: mean_return=" in proc.stdout
    time_limit = {"CartPole-v1": 500, "CartPoleNoVel-v1": 500, "Pendulum-v1": 200}.get(script.env_id)
    for line in proc.stdout.splitlines():  # each episode: its length, and how it ended
        if " eval_episode=" in line:
            length, ended = re.fullmatch(r".*, episodic_length=(\d+) \((terminated|time-out)\)", line).groups()
            if time_limit:  # the time limit's episodes are the time-outs, and only they
                assert (ended == "time-out") == (int(length) == time_limit), line
    assert len(script.evaluate(checkpoint, eval_episodes=2, seed=5)) >= 2


def test_sampled_evaluation_repeats_for_the_same_seed(short_run):
    script, _, run_dir, _ = short_run
    checkpoint = run_dir / f"{script.module.__name__}.pt"
    first, second = (script.evaluate(checkpoint, eval_episodes=3, seed=5, greedy=False) for _ in range(2))
    assert len(first) >= 3 and first == second


def test_evaluation_acts_with_the_saved_weights(short_run, monkeypatch):
    script, _, run_dir, _ = short_run
    checkpoint = run_dir / f"{script.module.__name__}.pt"
    acting = []  # the weights of the agent at its first action

    def recording(self, x, *memory):
        if not acting:
            acting.append({k: v.clone() for k, v in self.state_dict().items()})
        return original(self, x, *memory)

    original = getattr(script.module.Agent, script.greedy_method())
    monkeypatch.setattr(script.module.Agent, script.greedy_method(), recording)
    script.evaluate(checkpoint, eval_episodes=1, seed=3)
    saved = torch.load(checkpoint)["model"]
    assert acting and acting[0].keys() == saved.keys()
    assert all(torch.equal(acting[0][k], saved[k]) for k in saved)


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "kill"])
def test_interrupt_saves_model_and_logs(script, tmp_path, stop_signal):
    proc = subprocess.Popen([sys.executable, str(REPO / script.file), *script.user_argv(),
                             "--total-timesteps", "10000000"], preexec_fn=as_from_a_terminal,
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    for line in proc.stdout:  # let it learn for a few iterations (of 256 steps) first
        if line.startswith("global_step=") and int(line.split(",")[0].split("=")[1]) > 1500:
            break
    proc.send_signal(stop_signal)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + stop_signal, stderr  # 130 for Ctrl-C, 143 for kill
    assert "Traceback" not in stderr
    assert "is saved to" in stdout and "--resume" in stdout
    (run_dir,) = run_dirs(tmp_path)
    assert (run_dir / f"{script.module.__name__}.pt").exists()
    assert len(read_scalars(run_dir)["charts/SPS"]) >= 4


def signal_at_gae(script, monkeypatch, stop_signal, on_call):
    """Send this process stop_signal as the on_call-th GAE starts: after that rollout, before its update."""
    seen = []
    original = script.module.compute_gae

    def signalling(*args):
        seen.append(args)
        if len(seen) == on_call:
            os.kill(os.getpid(), stop_signal)
        return original(*args)

    monkeypatch.setattr(script.module, "compute_gae", signalling)


def test_stop_during_an_update_ends_it_at_its_end(script, in_tmp, monkeypatch):
    calls = record_agent_calls(script, monkeypatch)
    signal_at_gae(script, monkeypatch, signal.SIGTERM, on_call=1)
    args = script.module.parse_args(script.short)
    with pytest.raises(SystemExit) as stop:
        script.module.train(args)
    assert stop.value.code == 143
    # the whole first update, and not one rollout step more: the saved state is a boundary
    assert sum(grad for grad, *_ in calls) == args.update_epochs * args.num_minibatches
    assert sum(not grad for grad, *_ in calls) == script.batched_rollout_forward
    saved = torch.load(run_dirs(in_tmp)[0] / f"{script.module.__name__}.pt")
    assert pickle.loads(saved["resume"])["iteration"] == 1


def test_stop_during_the_last_update_still_saves(script, in_tmp, monkeypatch):
    signal_at_gae(script, monkeypatch, signal.SIGINT, on_call=4)  # every short run has 4 iterations
    with pytest.raises(SystemExit) as stop:
        script.module.train(script.module.parse_args(script.short))  # no --save-model
    assert stop.value.code == 130
    assert (run_dirs(in_tmp)[0] / f"{script.module.__name__}.pt").exists()


def test_a_second_signal_stops_at_once(script, in_tmp, monkeypatch, capsys):
    calls = record_agent_calls(script, monkeypatch)
    original = script.module.compute_gae

    def signalling_twice(*args):  # Ctrl-C, Ctrl-C, as the first update is about to start
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)
        return original(*args)

    monkeypatch.setattr(script.module, "compute_gae", signalling_twice)
    with pytest.raises(SystemExit) as stop:
        script.module.train(script.module.parse_args(script.short))
    assert stop.value.code == 130
    assert not any(grad for grad, *_ in calls)  # not one gradient step more
    assert ("interrupted at once (a second signal): the iteration under way is dropped. The state at "
            "global_step=0 is saved") in capsys.readouterr().out
    saved = pickle.loads(torch.load(run_dirs(in_tmp)[0] / f"{script.module.__name__}.pt")["resume"])
    assert saved["iteration"] == 0 and saved["envs"].get("sub_envs") is None  # the episodes under way are not kept


class CrashesAfter(gym.Wrapper):
    """A bug in the env: it raises at its steps-th step."""

    def __init__(self, env, steps):
        super().__init__(env)
        self.steps_left = steps

    def step(self, action):
        self.steps_left -= 1
        if self.steps_left < 0:
            raise RuntimeError("a bug in the env's step")
        return self.env.step(action)


def test_a_crash_keeps_its_traceback_and_the_run(script, in_tmp, monkeypatch, capsys):
    script.wrap_each_env(monkeypatch, lambda env: CrashesAfter(env, 150))
    with pytest.raises(RuntimeError, match="a bug in the env's step"):  # the user needs to see where
        script.module.train(script.module.parse_args(script.short))
    assert "crashed at global_step=" in capsys.readouterr().err
    saved = pickle.loads(torch.load(run_dirs(in_tmp)[0] / f"{script.module.__name__}.pt")["resume"])
    # the last boundary before the crash, resumed with new episodes
    assert saved["iteration"] >= 1 and saved["envs"].get("sub_envs") is None


def test_signal_handlers_are_restored_when_train_ends(script, in_tmp):
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    script.module.train(script.module.parse_args(script.short))
    assert {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)} == before
