"""What only ppo.py does: Categorical policies on Discrete envs."""
import numpy as np
import torch
from torch.distributions.categorical import Categorical

import ppo
from conftest import GYM_SCRIPTS, read_scalars, run_dirs, run_script
from test_scripts import capture_gae_inputs

SHORT = GYM_SCRIPTS[0].short


def test_rollout_sampling_is_torch_multinomial_without_its_checks():
    torch.manual_seed(0)
    agent = ppo.Agent(4, 3)
    with torch.no_grad():  # a policy far from uniform, so a wrong draw shows in the counts
        agent.actor[-1].weight.mul_(300)
    x = torch.randn(20000, 4)
    with torch.inference_mode():
        probs = agent.policy(x).exp()
        torch.manual_seed(1)
        expected = torch.multinomial(probs, num_samples=1).squeeze(-1)
        torch.manual_seed(1)
        actions = agent.get_action(x)
    assert torch.equal(actions, expected)  # the same draw, bit for bit, from the same RNG state
    assert probs.max(-1).values.mean() > 0.6
    counts = torch.bincount(actions, minlength=3).float()
    torch.testing.assert_close(counts / len(x), probs.mean(0), atol=0.01, rtol=0)


def test_log_prob_and_entropy_match_categorical():
    torch.manual_seed(0)
    agent = ppo.Agent(4, 5)
    with torch.no_grad():
        agent.actor[-1].weight.mul_(100)
    x, action = torch.randn(64, 4), torch.randint(0, 5, (64,))
    logprob, entropy, value = agent.evaluate_actions(x, action)
    reference = Categorical(logits=agent.actor(x))
    torch.testing.assert_close(logprob, reference.log_prob(action))
    torch.testing.assert_close(entropy, reference.entropy())
    torch.testing.assert_close(value, agent.critic(x))


def test_norm_reward_scales_rewards_but_logs_raw_returns(in_tmp, monkeypatch):
    seen = capture_gae_inputs(ppo, monkeypatch)
    ppo.train(ppo.parse_args(SHORT + ["--norm-reward"]))
    rewards = np.concatenate([r for r, _, _ in seen])
    assert not np.isin(rewards, [0.0, 1.0]).all()  # CartPole's raw rewards are 1 (0 on autoreset)
    returns = [v for _, v in read_scalars(run_dirs(in_tmp)[0])["charts/episodic_return"]]
    assert returns and all(float(r).is_integer() for r in returns)


def test_trained_model_beats_random_on_evaluation(tmp_path):
    # 20k steps lift CartPole well above a random policy's ~22
    run_script("ppo.py", "--total-timesteps", "20000", "--save-model", cwd=tmp_path)
    returns = ppo.evaluate(str(run_dirs(tmp_path)[0] / "ppo.pt"), eval_episodes=5)
    assert np.mean(returns) > 60


def test_capture_video_writes_mp4(tmp_path):
    run_script("ppo.py", *SHORT, "--save-model", cwd=tmp_path)
    checkpoint = run_dirs(tmp_path)[0] / "ppo.pt"
    run_script("ppo.py", "--eval-checkpoint", str(checkpoint), "--eval-episodes", "1", "--capture-video",
               cwd=tmp_path)
    assert list((tmp_path / "videos").rglob("*.mp4"))
