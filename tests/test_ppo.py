"""What only ppo.py does: Categorical policies on Discrete envs."""
import numpy as np

import ppo
from conftest import read_scalars, run_dirs, run_script
from test_scripts import SCRIPTS, assert_one_line_error, capture_gae_inputs

SHORT = SCRIPTS[0].short


def test_continuous_env_is_refused(tmp_path):
    proc = run_script("ppo.py", "--env-id", "Pendulum-v1", cwd=tmp_path, check=False)
    assert_one_line_error(proc, "needs a Discrete action space")


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
