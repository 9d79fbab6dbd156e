"""A game that resets an agent on the spot (the plugin's way) and sends its final observation at an end
(info terminal_observation, with TimeLimit.truncated at a time-out: the plugin's "Send Terminal Obs Info",
pull request #65; the demo's chase_plugin_time_outs.x86_64): each time-out bootstraps from V(terminal
observation), an end without truncation stays terminal, and a malformed terminal_observation is one line."""
import argparse

import numpy as np
import pytest
import torch

import ppo_godot
import ppo_godot_lstm
import ppo_godot_multi_policy
from conftest import REPO, game_pids, needs_godot, run_dirs, run_script
from test_ppo_godot import misbehaving_game

GAME = str(REPO / "godot" / "chase" / "chase_plugin_time_outs.x86_64")  # time-outs after 30 actions
GAMMA = 0.99


class NoWriter:
    def add_scalar(self, *args):
        pass


def aim_at_targets(agent):
    """Actor weights that sprint each agent toward its target (its row: position x, y, then to_target x, y;
    its actions: sprint's 2 logits, then the direction's mean), nearly deterministic: episodes that reach their
    target beside the time-outs."""
    first, second, last = [layer for layer in agent.actor if isinstance(layer, torch.nn.Linear)]
    with torch.no_grad():
        for layer in (first, second, last):
            layer.weight.zero_()
            layer.bias.zero_()
        first.weight[0, 2] = first.weight[1, 3] = 1.0
        second.weight[0, 0] = second.weight[1, 1] = 1.0
        last.weight[2, 0] = last.weight[3, 1] = 20.0
        last.bias[1] = 5.0
        agent.actor_logstd.fill_(-3.0)


def rollout(script, port, *more):
    """One rollout of 256 steps on the demo game with its time-outs, each step's infos recorded as the rollout
    got them: (args, the agent(s), storage, [infos per step]). ppo_godot.py's and the multi-policy script's
    network goes for the targets (aim_at_targets), the LSTM's is a fresh one."""
    needs_godot()
    args = script.parse_args(["--env-path", GAME, "--port", str(port), "--num-steps", "256", "--seed", "3", *more])
    torch.manual_seed(3)
    envs = script.make_envs(args)
    infos = []
    step = envs.step

    def recorded_step(action):
        result = step(action)
        infos.append(result[-1])
        return result

    envs.step = recorded_step
    try:
        args.num_envs = envs.num_envs
        storage = script.make_storage(args, envs)
        next_obs, _ = envs.reset(seed=args.seed)
        if script is ppo_godot_lstm:
            agent = script.Agent(envs.obs_layout, envs.action_heads, args.lstm_hidden_size)
            state = agent.initial_state(envs.num_envs)
            script.collect_rollout(envs, agent, storage, next_obs, state, 0, NoWriter(), torch.device("cpu"))
        elif script is ppo_godot_multi_policy:
            agent = script.AgentPerPolicy(envs.policies)
            aim_at_targets(agent["shared_policy"])
            script.collect_rollout(envs, agent, storage, next_obs, 0, NoWriter(), torch.device("cpu"))
        else:
            agent = script.Agent(envs.obs_layout, envs.action_heads)
            aim_at_targets(agent)
            script.collect_rollout(envs, agent, storage, next_obs, 0, NoWriter(), torch.device("cpu"))
    finally:
        envs.close()
    return args, agent, storage, infos


def ends(storage):
    """The rows of each kind of end: (time-outs, ends that reached the target)."""
    time_outs = storage.truncations.astype(bool)
    return time_outs, storage.terminations.astype(bool)


@pytest.mark.parametrize("script", [ppo_godot, ppo_godot_multi_policy], ids=lambda s: s.__name__)
def test_a_time_out_bootstraps_from_v_of_the_terminal_observation_and_a_reached_target_from_nothing(script, port):
    """The time-out rows (TimeLimit.truncated) keep V(terminal observation), computed here apart from the
    rollout's own forward; GAE's delta there is r_t + gamma V(s_final) - V(s_t) and the advantage is cut. A
    reached target sends its terminal_observation too, and bootstraps nothing."""
    args, agent, storage, infos = rollout(script, port)
    time_outs, reached = ends(storage)
    assert time_outs.sum() >= 16 and reached.sum() >= 16  # both kinds
    assert (storage.bootstraps_from_final == time_outs).all()
    critic = agent.agents["shared_policy"] if script is ppo_godot_multi_policy else agent
    for t, step_infos in enumerate(infos):
        sent = np.nonzero(step_infos["bootstraps_from_final"])[0]
        assert (np.nonzero(time_outs[t])[0] == sent).all()
        if len(sent):
            with torch.no_grad():
                apart = critic.get_value(torch.as_tensor(step_infos["final_obs"][sent])).flatten().numpy()
            np.testing.assert_allclose(storage.final_values[t, sent], apart, rtol=1e-6, atol=1e-6)
    rewards, terminations = script.bootstrap_reset_on_the_spot(storage, GAMMA)
    np.testing.assert_allclose(rewards[time_outs], storage.rewards[time_outs] + GAMMA * storage.final_values[time_outs],
                               rtol=1e-6)
    assert (rewards[~time_outs] == storage.rewards[~time_outs]).all()  # a reached target: its reward alone
    assert (terminations == (time_outs | reached)).all()
    values = np.random.default_rng(0).normal(size=storage.rewards.shape).astype(np.float32)
    advantages, _ = script.compute_gae(rewards, values, terminations, storage.truncations, np.zeros(values.shape[1]),
                                       GAMMA, 0.95)
    np.testing.assert_allclose(advantages[time_outs], storage.rewards[time_outs]
                               + GAMMA * storage.final_values[time_outs] - values[time_outs], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(advantages[reached], storage.rewards[reached] - values[reached], rtol=1e-5, atol=1e-6)


def test_with_bootstrap_truncation_false_a_time_out_counts_as_terminal(port):
    """CleanRL's way, as the demo's gymnasium-like time-outs take it too: no V(s_final) in the reward."""
    args, agent, storage, infos = rollout(ppo_godot, port, "--bootstrap-truncation", "false")
    assert not args.bootstrap_truncation and storage.bootstraps_from_final.any()
    # what train() passes to compute_gae then: the rewards as they came, every end terminal
    rewards, terminations = storage.rewards, np.maximum(storage.terminations, storage.truncations)
    assert (terminations == (storage.truncations.astype(bool) | storage.terminations.astype(bool))).all()
    assert rewards is storage.rewards


def test_the_lstm_feeds_the_terminal_observation_with_the_state_of_the_episode_that_ended_then_zeroes_it(port):
    """V(s_final) of a time-out is the critic's on h_final = LSTM(s_final, h_t): the state after the episode's
    last action, before it is zeroed for the next episode's first observation, as after a reached target.
    Replayed here from the rollout's first state, step by step: each step's V(h_t) is the rollout's."""
    args, agent, storage, infos = rollout(ppo_godot_lstm, port, "--num-minibatches", "1")
    time_outs, reached = ends(storage)
    assert time_outs.sum() >= 16
    state, differs = storage.initial_lstm_state, 0
    with torch.no_grad():
        for t, step_infos in enumerate(infos):
            hidden, state = agent.memory(torch.as_tensor(storage.obs[t]), state)
            np.testing.assert_allclose(agent.critic(hidden).flatten().numpy(), storage.values[t], rtol=1e-5, atol=1e-6)
            sent = np.nonzero(step_infos["bootstraps_from_final"])[0]
            if len(sent):
                final_obs = torch.as_tensor(step_infos["final_obs"])
                apart = agent.get_value(final_obs, state).flatten().numpy()
                np.testing.assert_allclose(storage.final_values[t, sent], apart[sent], rtol=1e-5, atol=1e-6)
                fresh = agent.get_value(final_obs, agent.initial_state(len(final_obs))).flatten().numpy()
                differs += int((np.abs(fresh[sent] - apart[sent]) > 1e-4).sum())
            state = ppo_godot_lstm.forget(state, time_outs[t] | reached[t])  # every end, time-outs too
    assert differs == time_outs.sum()  # the ended episode's state is not a new one's: a test that can tell them apart


def test_each_policys_critic_values_its_own_agents_rows():
    """Several policies: V(s_final) of an agent's time-out is its own policy's critic's, on its own keys."""
    layout = [("obs", (2,))]
    policies = {name: argparse.Namespace(name=name, obs_layout=layout, action_heads=[("move", "discrete", 2)],
                                         agent_ids=np.array(ids), width=2, columns=1)
                for name, ids in (("left", [0, 2]), ("right", [1, 3]))}
    torch.manual_seed(0)
    agents = ppo_godot_multi_policy.AgentPerPolicy(policies)
    x = torch.randn(4, 3)  # rows padded to a wider policy's: the padding is not its
    with torch.no_grad():
        values = agents.get_value(x).flatten()
        for name, policy in policies.items():
            expected = agents[name].get_value(x[policy.agent_ids, :2]).flatten()
            assert torch.equal(values[policy.agent_ids], expected)
        assert not torch.allclose(agents["left"].get_value(x[:, :2]), agents["right"].get_value(x[:, :2]))


@pytest.mark.parametrize("script", ["ppo_godot.py", "ppo_godot_lstm.py", "ppo_godot_multi_policy.py"])
@pytest.mark.parametrize("bad, value", [("missing-key", "None"), ("wrong-size", "[0.5, 0.5, 0.5]"),
                                        ("not-numbers", "['0.5', '0.5']")])
def test_a_malformed_terminal_observation_is_one_line_naming_the_agent_and_key_and_the_model_is_kept(
        script, bad, value, port, tmp_path):
    """From the 21st step on, agent 1's terminal_observation lacks its key, holds 3 numbers, or strings: exit 2,
    one line, after two updates whose model is saved."""
    proc = run_script(script, "--env-path", misbehaving_game(tmp_path, f"terminal-obs-{bad}"), "--port", str(port),
                      "--num-steps", "8", "--num-minibatches", "2", "--total-timesteps", "1024", cwd=tmp_path,
                      check=False, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"{script}: error: agent 1 of the game on port {port} sent 'obs' in its "
                               f"terminal_observation as {value}, but declares a list of 2 numbers: a fault of "
                               f"the env, not of the learning"), lines[0]
    checkpoint = run_dirs(tmp_path)[0] / f"{script[:-3]}.pt"
    assert str(checkpoint.relative_to(tmp_path)) in lines[0] and checkpoint.is_file()
    assert torch.load(checkpoint, weights_only=False)["global_step"] >= 32  # what two updates learned is kept
    assert not game_pids(port)


def test_a_game_that_sends_well_formed_terminal_observations_trains_to_the_end(port, tmp_path):
    proc = run_script("ppo_godot.py", "--env-path", misbehaving_game(tmp_path, "terminal-obs"), "--port", str(port),
                      "--num-steps", "8", "--num-minibatches", "2", "--total-timesteps", "64", cwd=tmp_path)
    assert proc.returncode == 0
