"""What only ppo_lstm.py does: the LSTM state carried through the rollout and reset where an episode
starts, minibatches of whole env sequences, and the update's replay of each sequence from the state
the rollout started with. The shared behaviour (tags, faults, checkpoints, resume) is tested with the
other scripts in test_scripts.py, test_resume.py and test_faults.py."""
import gymnasium as gym
import numpy as np
import pytest
import torch

import ppo_lstm
from conftest import GYM_SCRIPTS, run_dirs, run_script

LSTM = GYM_SCRIPTS[2]
SHORT = LSTM.short


def short_episodes(monkeypatch, max_episode_steps=20):
    """Episodes of at most 20 steps, so that every 64-step sequence holds several resets."""
    LSTM.use_plain_envs(monkeypatch, max_episode_steps=max_episode_steps)


def step_by_step(agent, obs, start_state, is_transition):
    """Reference: the LSTM stepped one row at a time, as in the rollout, for (num_steps, num_envs) rows,
    the state zeroed after each autoreset row. Returns h_t of every row, (num_steps, num_envs, H)."""
    state, hidden = start_state, []
    for t in range(len(obs)):
        h, state = agent.memory(obs[t], state)
        hidden.append(h)
        state = ppo_lstm.forget(state, ~is_transition[t])
    return torch.stack(hidden)


class NoWriter:
    def add_scalar(self, *args):
        pass


def small_rollout(num_envs=4, num_steps=64, seed=0, max_episode_steps=20):
    """An untrained agent and the storage of its second rollout (which starts from a carried state), on
    episodes of at most 20 steps."""
    torch.manual_seed(seed)
    args = ppo_lstm.parse_args(["--num-envs", str(num_envs), "--num-steps", str(num_steps)])
    envs = gym.vector.SyncVectorEnv([lambda: gym.wrappers.RecordEpisodeStatistics(
        gym.make("CartPoleNoVel-v1", max_episode_steps=max_episode_steps)) for _ in range(num_envs)])
    agent = ppo_lstm.Agent(2, 2, args.lstm_hidden_size)
    storage = ppo_lstm.make_storage(args, envs)
    next_obs, _ = envs.reset(seed=seed)
    next_done, state = np.zeros(num_envs, dtype=bool), agent.initial_state(num_envs)
    for _ in range(2):
        next_obs, next_done, state, _ = ppo_lstm.collect_rollout(
            envs, agent, storage, next_obs, next_done, state, 0, NoWriter(), "cpu")
    envs.close()
    return agent, storage


# ------------------------------------------------------------------------------------------------
# The replay in the update equals the rollout's stepping, resets included
# ------------------------------------------------------------------------------------------------
def test_first_minibatch_of_the_first_epoch_has_ratio_one(in_tmp, monkeypatch):
    """Before the first gradient step the policy is pi_old: the replayed log pi(a_t|h_t) of the first
    minibatch equals what the rollout stored (r_t = 1 to 1e-6), which holds only when the replay starts
    each env from the rollout's first state and zeroes it exactly where an episode starts."""
    short_episodes(monkeypatch)
    updates = []  # for each update: the stored log pi_old (env by env), each minibatch's rows and log pi
    ppo_update, minibatches, evaluate_actions = (ppo_lstm.ppo_update, ppo_lstm.sequence_minibatches,
                                                 ppo_lstm.Agent.evaluate_actions)

    def recording_update(args, agent, optimizer, storage, logprobs, *rest):
        updates.append({"stored": torch.as_tensor(logprobs.T.reshape(-1)), "rows": [], "new": []})
        return ppo_update(args, agent, optimizer, storage, logprobs, *rest)

    def recording_minibatches(storage, num_minibatches):
        for mb_inds, run_starts, lstm_state in minibatches(storage, num_minibatches):
            updates[-1]["rows"].append((mb_inds, run_starts))
            yield mb_inds, run_starts, lstm_state

    def recording_evaluate(self, *args):
        out = evaluate_actions(self, *args)
        updates[-1]["new"].append(out[0].detach().clone())
        return out

    monkeypatch.setattr(ppo_lstm, "ppo_update", recording_update)
    monkeypatch.setattr(ppo_lstm, "sequence_minibatches", recording_minibatches)
    monkeypatch.setattr(ppo_lstm.Agent, "evaluate_actions", recording_evaluate)
    ppo_lstm.train(ppo_lstm.parse_args(SHORT + ["--num-minibatches", "2"]))

    assert len(updates) == 4
    for update in updates:
        (mb_inds, run_starts), newlogprob = update["rows"][0], update["new"][0]
        assert run_starts.sum() >= 4  # two envs' runs from the rollout's first state, then resets
        ratio = (newlogprob - update["stored"][mb_inds]).exp()
        torch.testing.assert_close(ratio, torch.ones_like(ratio), rtol=0, atol=1e-6)
    # after a gradient step the ratio moves: the comparison above is not between equal copies
    (mb_inds, _), newlogprob = updates[0]["rows"][1], updates[0]["new"][1]
    assert (newlogprob - updates[0]["stored"][mb_inds]).abs().max() > 1e-6


def test_replay_equals_stepping_the_lstm_resets_included():
    """One nn.LSTM call over the runs of a minibatch gives the h_t the rollout got stepping one row at a
    time: every row, every env, from the rollout's first state, zeroed after each autoreset row."""
    agent, storage = small_rollout()
    assert (~storage.is_transition).sum() >= 8  # resets inside the sequences
    obs = torch.as_tensor(storage.obs)
    with torch.no_grad():
        expected = step_by_step(agent, obs, storage.initial_lstm_state, storage.is_transition)
        expected = expected.swapaxes(0, 1).reshape(-1, expected.shape[-1])  # env by env
        b_obs = obs.swapaxes(0, 1).reshape(-1, 2)
        for mb_inds, run_starts, lstm_state in ppo_lstm.sequence_minibatches(storage, 2):
            replayed = agent.replay(b_obs[mb_inds], lstm_state, run_starts)
            torch.testing.assert_close(replayed, expected[mb_inds], rtol=0, atol=1e-6)


def test_replay_without_the_resets_would_differ():
    """The test above can fail: a replay that carries the state across an episode start (as an LSTM
    run over the whole sequence does) gives other h_t after the first reset."""
    agent, storage = small_rollout()
    obs = torch.as_tensor(storage.obs)
    b_obs = obs.swapaxes(0, 1).reshape(-1, 2)
    mb_inds, run_starts, lstm_state = next(ppo_lstm.sequence_minibatches(storage, 4))
    with torch.no_grad():
        replayed = agent.replay(b_obs[mb_inds], lstm_state, run_starts)
        first_run_only = torch.zeros_like(run_starts)
        first_run_only[0] = True
        carried = agent.replay(b_obs[mb_inds], (lstm_state[0][:, :1], lstm_state[1][:, :1]), first_run_only)
    second_run = int(torch.nonzero(run_starts)[1])
    torch.testing.assert_close(carried[:second_run], replayed[:second_run])
    assert (carried[second_run:] - replayed[second_run:]).abs().max() > 1e-3


# ------------------------------------------------------------------------------------------------
# Minibatches, the rollout's state, evaluation
# ------------------------------------------------------------------------------------------------
def test_minibatches_are_whole_env_sequences_kept_in_order():
    agent, storage = small_rollout(num_envs=4, num_steps=64)
    kept = np.flatnonzero(storage.is_transition.T.reshape(-1))  # env by env, autoreset rows left out
    orders = set()
    for epoch in range(10):
        minibatches = [mb_inds.numpy() for mb_inds, _, _ in ppo_lstm.sequence_minibatches(storage, 2)]
        assert sorted(np.concatenate(minibatches)) == list(kept)  # each transition once per epoch
        for mb_inds in minibatches:
            envs = mb_inds // 64
            assert len(set(envs)) == 2 and (np.diff(envs) != 0).sum() == 1  # two envs, each in one piece
            for env in set(envs):
                assert (np.diff(mb_inds[envs == env]) > 0).all()  # in time order
        orders.add(tuple(mb[0] // 64 for mb in minibatches))
    assert len(orders) > 1  # the envs are shuffled between epochs, never the steps


def test_each_run_starts_from_a_zero_state_in_the_rollout(monkeypatch):
    """No memory leaks from one episode into the next: the state fed with an episode's first
    observation is zero, and the state within an episode is not."""
    fed = []
    memory = ppo_lstm.Agent.memory

    def recording(self, x, lstm_state):
        fed.append((x.clone(), lstm_state[0].abs().amax(dim=(0, 2)), lstm_state[1].abs().amax(dim=(0, 2))))
        return memory(self, x, lstm_state)

    monkeypatch.setattr(ppo_lstm.Agent, "memory", recording)
    agent, storage = small_rollout(num_envs=4, num_steps=64)
    steps = fed[64:128]  # the second rollout's; after it, V(next_obs)
    starts = np.zeros_like(storage.is_transition)  # rows that are an episode's first
    starts[1:] = storage.is_transition[1:] & ~storage.is_transition[:-1]
    assert starts.sum() >= 8
    for t, (x, h, c) in enumerate(steps):
        np.testing.assert_array_equal(x.numpy(), storage.obs[t])
        assert (h[starts[t]] == 0).all() and (c[starts[t]] == 0).all()
        inside = ~starts[t] & storage.is_transition[t]
        if t > 0:
            assert (h[inside] > 0).all()
    # the episodes under way when the rollout ended carry their state into the next one
    assert (storage.initial_lstm_state[0].abs().amax(dim=(0, 2))[storage.is_transition[0]] > 0).all()


@pytest.mark.parametrize("greedy", [True, False], ids=["greedy", "sampled"])
def test_evaluation_carries_the_state_through_each_episode(tmp_path, monkeypatch, greedy):
    run_script("ppo_lstm.py", *SHORT, "--save-model", cwd=tmp_path)
    checkpoint = run_dirs(tmp_path)[0] / "ppo_lstm.pt"
    fed = []
    memory = ppo_lstm.Agent.memory

    def recording(self, x, lstm_state):
        fed.append(float(lstm_state[0].abs().max()))
        return memory(self, x, lstm_state)

    monkeypatch.setattr(ppo_lstm.Agent, "memory", recording)
    returns = ppo_lstm.evaluate(str(checkpoint), eval_episodes=3, greedy=greedy)
    # one call per step, and one for each autoreset step (s_final, whose action is ignored)
    assert len(fed) == sum(returns) + len(returns) - 1
    zero_state = [i for i, h in enumerate(fed) if h == 0]
    assert len(zero_state) == 3  # the first step of each episode
    assert zero_state[1] == returns[0] + 1 and zero_state[2] == returns[0] + returns[1] + 2


@pytest.mark.parametrize("greedy", [True, False], ids=["greedy", "sampled"])
def test_evaluation_labels_the_episodes_that_the_time_limit_ends_time_outs(in_tmp, monkeypatch, capsys, greedy):
    """Each evaluation episode's line says how it ended: here every one reaches a 5-step time limit
    (CartPole cannot fall in fewer than 8 steps, whatever the actions), so each is a time-out."""
    ppo_lstm.train(ppo_lstm.parse_args(SHORT))
    checkpoint = run_dirs(in_tmp)[0] / "ppo_lstm.pt"
    limit = 5
    monkeypatch.setattr(ppo_lstm, "make_env", lambda env_id, idx, capture_video, run_name: lambda: (
        gym.wrappers.RecordEpisodeStatistics(gym.make(env_id, max_episode_steps=limit))))
    capsys.readouterr()
    assert ppo_lstm.evaluate(str(checkpoint), eval_episodes=3, greedy=greedy) == [float(limit)] * 3
    lines = [line for line in capsys.readouterr().out.splitlines() if " eval_episode=" in line]
    assert len(lines) == 3
    assert all(line.endswith(f", episodic_length={limit} (time-out)") for line in lines), lines


def test_rollout_sampling_is_torch_multinomial_without_its_checks():
    torch.manual_seed(0)
    agent = ppo_lstm.Agent(2, 3, 16)
    with torch.no_grad():  # a policy far from uniform, so a wrong draw shows in the counts
        agent.actor.weight.mul_(3000)
    x, state = torch.randn(20000, 2), agent.initial_state(20000)
    with torch.no_grad():
        hidden, _ = agent.memory(x, state)
        probs = agent.policy(hidden).exp()
        torch.manual_seed(1)
        expected = torch.multinomial(probs, num_samples=1).squeeze(-1)
        torch.manual_seed(1)
        actions, logprob, value, _ = agent.get_action(x, state)
    assert torch.equal(actions, expected)
    assert probs.max(-1).values.mean() > 0.6
    torch.testing.assert_close(logprob, probs.gather(-1, actions[:, None]).squeeze(-1).log())
    torch.testing.assert_close(value, agent.critic(hidden))


def test_cartpole_without_velocities_is_cartpole_observed_in_part():
    full, partial = gym.make("CartPole-v1"), gym.make("CartPoleNoVel-v1")
    assert partial.spec.max_episode_steps == 500 and partial.observation_space.shape == (2,)
    obs_full, _ = full.reset(seed=3)
    obs, _ = partial.reset(seed=3)
    np.testing.assert_array_equal(obs, obs_full[[0, 2]])
    for action in [0, 1, 1, 0, 1] * 4:
        obs_full, reward_full, terminated_full, _, _ = full.step(action)
        obs, reward, terminated, _, _ = partial.step(action)
        np.testing.assert_array_equal(obs, obs_full[[0, 2]])
        assert (reward, terminated) == (reward_full, terminated_full)
        assert partial.observation_space.contains(obs)


# ------------------------------------------------------------------------------------------------
# The update beyond the replay: the bootstrap value, value clipping, explained variance
# ------------------------------------------------------------------------------------------------
def test_the_bootstrap_value_is_v_of_next_obs_from_the_rollout_s_last_state(in_tmp, monkeypatch):
    """V(s_T), which the last row of each env bootstraps from, is V(next_obs) given the LSTM state the
    rollout ended with: not a zero state, nor the state the rollout started from."""
    seen = []
    collect_rollout, compute_gae = ppo_lstm.collect_rollout, ppo_lstm.compute_gae

    def recording_rollout(envs, agent, *rest):
        next_obs, next_done, next_lstm_state, global_step = collect_rollout(envs, agent, *rest)
        obs = torch.as_tensor(next_obs, dtype=torch.float32)
        with torch.no_grad():
            seen.append([agent.get_value(obs, next_lstm_state).flatten().numpy(),
                         agent.get_value(obs, agent.initial_state(len(obs))).flatten().numpy()])
        return next_obs, next_done, next_lstm_state, global_step

    def recording_gae(rewards, values, terminations, truncations, next_value, *rest):
        seen[-1].append(next_value)
        return compute_gae(rewards, values, terminations, truncations, next_value, *rest)

    monkeypatch.setattr(ppo_lstm, "collect_rollout", recording_rollout)
    monkeypatch.setattr(ppo_lstm, "compute_gae", recording_gae)
    ppo_lstm.train(ppo_lstm.parse_args(SHORT))
    assert len(seen) == 4
    for from_the_last_state, from_a_zero_state, next_value in seen:
        np.testing.assert_allclose(next_value, from_the_last_state, rtol=1e-6)
        assert not np.allclose(from_a_zero_state, from_the_last_state)  # the state matters


def one_update(agent, storage, values, returns, *flags):
    args = ppo_lstm.parse_args(["--num-envs", "4", "--num-steps", "64", "--num-minibatches", "1",
                                "--update-epochs", "1", *flags])
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate)
    return ppo_lstm.ppo_update(args, agent, optimizer, storage, storage.logprobs, values,
                               np.zeros_like(values), returns, "cpu")


def test_value_clipping_is_around_the_rollout_s_values(monkeypatch):
    """L^VF's clipped term keeps the new V within clip_coef of the V(s_t) the rollout kept. The rollout
    valued every row 0.5, the targets are 1.5, and the network now predicts 1.5: the unclipped error is
    0, the clipped V is 0.5 + 0.2, so the loss is 0.5 x (0.7 - 1.5)^2 = 0.32."""
    agent, storage = small_rollout()
    storage.values[:] = 0.5
    evaluate_actions = ppo_lstm.Agent.evaluate_actions

    def predicting_the_targets(self, *args):
        newlogprob, entropy, newvalue = evaluate_actions(self, *args)
        return newlogprob, entropy, newvalue * 0 + 1.5

    monkeypatch.setattr(ppo_lstm.Agent, "evaluate_actions", predicting_the_targets)
    stats = one_update(agent, storage, storage.values, storage.values + 1.0)
    assert stats["losses/value_loss"] == pytest.approx(0.32)
    stats = one_update(agent, storage, storage.values, storage.values + 1.0, "--clip-vloss", "false")
    assert stats["losses/value_loss"] == pytest.approx(0.0)


def test_explained_variance_is_over_the_real_transitions_only():
    """V predicted every real transition's return exactly; the autoreset rows, which are no
    transitions, carry targets far off: the logged explained variance is 1."""
    agent, storage = small_rollout()
    assert not storage.is_transition.all()
    values = np.random.default_rng(0).normal(size=storage.values.shape).astype(np.float32)
    returns = np.where(storage.is_transition, values, values + 100.0).astype(np.float32)
    assert one_update(agent, storage, values, returns)["losses/explained_variance"] == pytest.approx(1.0)
