"""What only ppo_continuous_action.py does: the Gaussian policy, action clipping, observation
normalisation saved with the model, and stopping on NaN."""
import math

import gymnasium as gym
import numpy as np
import pytest
import torch

import ppo
import ppo_continuous_action as pca
from conftest import GYM_SCRIPTS, run_dirs, run_script
from test_scripts import record_agent_calls

SHORT = GYM_SCRIPTS[1].short


def test_gaussian_log_prob_and_entropy_by_hand():
    torch.manual_seed(0)
    agent = pca.Agent(3, 2)
    with torch.no_grad():
        agent.actor_logstd.copy_(torch.tensor([[0.5, -1.0]]))
    x = torch.randn(4, 3)
    action = torch.tensor([[0.3, -2.0], [1.5, 0.0], [-0.7, 0.2], [0.0, 4.0]])
    logprob, entropy, value = agent.evaluate_actions(x, action)
    mean, std = agent.actor_mean(x), torch.tensor([math.exp(0.5), math.exp(-1.0)])
    # log N(a; mu, sigma) = -(a - mu)^2 / (2 sigma^2) - log sigma - log(2 pi) / 2, summed over dims
    expected_logprob = (-(action - mean) ** 2 / (2 * std**2) - std.log() - 0.5 * math.log(2 * math.pi)).sum(-1)
    expected_entropy = (0.5 + 0.5 * math.log(2 * math.pi) + std.log()).sum().expand(4)
    torch.testing.assert_close(logprob, expected_logprob)
    torch.testing.assert_close(entropy, expected_entropy)
    torch.testing.assert_close(value, agent.critic(x))


class RecordActions(gym.Wrapper):
    received = []

    def step(self, action):
        RecordActions.received.append(np.array(action))
        return self.env.step(action)


def test_env_gets_clipped_actions_storage_keeps_the_sample(in_tmp, monkeypatch):
    original = pca.make_env
    monkeypatch.setattr(pca, "make_env", lambda *a: lambda: RecordActions(original(*a)()))
    RecordActions.received = []
    calls = record_agent_calls(GYM_SCRIPTS[1], monkeypatch)
    pca.train(pca.parse_args(SHORT))
    stored = torch.cat([action.reshape(-1) for grad, _, action, _ in calls if not grad])
    received = np.concatenate(RecordActions.received)
    assert (stored.abs() > 2).any()  # std 1 at the start: some samples fall outside Pendulum's [-2, 2]
    assert np.abs(received).max() <= 2.0
    # every action the env got is a clipped stored sample (autoreset steps send none)
    assert np.isin(received, np.clip(stored.numpy(), -2, 2)).all()
    assert len(received) == len(stored) - 4  # 2 envs x 2 episode ends


def test_checkpoint_restores_observation_statistics(tmp_path, monkeypatch):
    run_script("ppo_continuous_action.py", *SHORT, "--save-model", cwd=tmp_path)
    checkpoint = run_dirs(tmp_path)[0] / "ppo_continuous_action.pt"
    stats = torch.load(checkpoint)["obs_rms"]
    assert stats["count"] > 1000 and not torch.allclose(stats["var"], torch.ones(3))

    seen = []  # what the policy network is fed during evaluation

    class RecordingAgent(pca.Agent):
        def __init__(self, *args):
            super().__init__(*args)
            self.actor_mean.register_forward_pre_hook(lambda module, inputs: seen.append(inputs[0].clone()))

    monkeypatch.setattr(pca, "Agent", RecordingAgent)
    with_stats = pca.evaluate(str(checkpoint), eval_episodes=1, seed=7)
    first_with, seen[:] = seen[0], []
    without_stats = pca.evaluate(str(checkpoint), eval_episodes=1, seed=7, use_obs_rms=False)
    first_without = seen[0]

    raw, _ = gym.make("Pendulum-v1").reset(seed=7)
    normalised = np.clip((raw - stats["mean"].numpy()) / np.sqrt(stats["var"].numpy() + 1e-8), -10, 10)
    np.testing.assert_allclose(first_with[0].numpy(), normalised, rtol=1e-5, atol=1e-5)
    assert not np.allclose(first_without[0].numpy(), normalised, atol=1e-3)
    assert with_stats != without_stats


class MatrixActionEnv(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (2, 2), np.float32)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(3, np.float32), {}

    def step(self, action):
        return np.zeros(3, np.float32), 0.0, False, False, {}


def test_matrix_box_action_space_is_one_clear_line(in_tmp, capsys):
    if "MatrixAction-v0" not in gym.registry:
        gym.register("MatrixAction-v0", entry_point=MatrixActionEnv, max_episode_steps=10)
    with pytest.raises(SystemExit) as stop:
        pca.make_envs(pca.parse_args(["--env-id", "MatrixAction-v0"]), "run")
    assert stop.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "error:" in lines[0] and "1-D Box" in lines[0] and "(2, 2)" in lines[0]


# pygame; MuJoCo through EGL, an env whose untrained policy falls in a few steps: each is a frame to render
@pytest.mark.parametrize("env_id", ["Pendulum-v1", "InvertedDoublePendulum-v4"])
def test_capture_video_writes_mp4_headless(tmp_path, env_id):
    run_script("ppo_continuous_action.py", *SHORT[2:], "--env-id", env_id, "--save-model", cwd=tmp_path)
    checkpoint = run_dirs(tmp_path)[0] / "ppo_continuous_action.pt"
    run_script("ppo_continuous_action.py", "--eval-checkpoint", str(checkpoint), "--eval-episodes", "1",
               "--capture-video", cwd=tmp_path)
    assert list((tmp_path / "videos").rglob("*.mp4"))


def test_normalised_observations_report_their_clipped_bounds():
    envs = pca.make_envs(pca.parse_args(SHORT), "bounds")
    obs, _ = envs.reset(seed=0)
    for _ in range(5):
        obs, *_ = envs.step(envs.action_space.sample())
    assert (envs.single_observation_space.low == -10).all() and (envs.single_observation_space.high == 10).all()
    assert envs.observation_space.shape == obs.shape and envs.observation_space.contains(obs)
    envs.close()


class ConstantReward(gym.Env):
    """Reward 1 at every step, never terminates: only a time limit ends its episodes."""
    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, seed=None, options=None):
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), 1.0, False, False, {}


@pytest.mark.parametrize("module", [ppo, pca], ids=["ppo", "ppo_continuous_action"])
def test_reward_normalisation_restarts_the_return_at_time_limits(module):
    envs = gym.vector.SyncVectorEnv([lambda: gym.wrappers.TimeLimit(ConstantReward(), 3)] * 2)
    envs = module.NormalizeReward(envs, gamma=0.5)
    envs.reset(seed=0)
    for _ in range(8):  # two episodes of 3 steps, each followed by its autoreset step
        envs.step(envs.action_space.sample())
    # G_t = 1, 1.5, 1.75 in each episode; the autoreset steps are not transitions
    returns = [1.0, 1.5, 1.75] * 2
    assert envs.return_rms.count == pytest.approx(2 * len(returns), abs=1e-3)
    assert envs.return_rms.mean == pytest.approx(np.mean(returns), abs=1e-3)
    assert envs.return_rms.var == pytest.approx(np.var(returns), abs=1e-3)


class RecordObservedActions(gym.Wrapper):
    """(the observation an action answered, the action the env got), for each step."""
    steps = []

    def reset(self, **kwargs):
        self.last_obs, info = self.env.reset(**kwargs)
        return self.last_obs, info

    def step(self, action):
        RecordObservedActions.steps.append((self.last_obs, np.array(action)))
        self.last_obs, *rest = self.env.step(action)
        return self.last_obs, *rest


def test_greedy_evaluation_plays_the_policy_mean(in_tmp, monkeypatch):
    """Greedy evaluation sends the env the mean of pi(.|s) for the normalised observation, clipped to
    the action bounds: no sample."""
    pca.train(pca.parse_args(SHORT + ["--save-model"]))
    checkpoint = torch.load(run_dirs(in_tmp)[0] / "ppo_continuous_action.pt")
    original = pca.make_env
    monkeypatch.setattr(pca, "make_env", lambda *a: lambda: RecordObservedActions(original(*a)()))
    RecordObservedActions.steps = []
    pca.evaluate(str(run_dirs(in_tmp)[0] / "ppo_continuous_action.pt"), eval_episodes=1, seed=7)

    raw = np.array([obs for obs, _ in RecordObservedActions.steps])
    sent = np.array([action for _, action in RecordObservedActions.steps])
    stats = {key: value.numpy() for key, value in checkpoint["obs_rms"].items()}
    normalised = np.clip((raw - stats["mean"]) / np.sqrt(stats["var"] + 1e-8), -10, 10)
    agent = pca.Agent(3, 1)
    agent.load_state_dict(checkpoint["model"])
    with torch.no_grad():
        mean = agent.policy(torch.as_tensor(normalised, dtype=torch.float32))[0].numpy()
    assert len(sent) == 200  # one Pendulum episode
    assert (np.abs(mean) < 1.9).any()  # not all clipped alike
    np.testing.assert_allclose(sent, np.clip(mean, -2, 2), atol=1e-4)
