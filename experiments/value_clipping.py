"""Value-loss clipping on and off, on CartPole-v1 at the script's defaults.

    python experiments/value_clipping.py --quick     # 3 seeds x 100k steps
    python experiments/value_clipping.py             # 5 seeds x 150k steps

Theory: clipping L^VF the way L^CLIP clips the ratio keeps V(s) within epsilon of its old value
in each update, which is meant to steady the critic. Epsilon (0.2) is on the scale of the ratio,
not of the returns: CartPole's returns reach the hundreds, so a clipped critic can only creep
towards them, and studies of PPO's details found the clip no help or a hindrance. Expect the
clipped critic to fit its targets worse (explained_variance, value_loss).
"""
from runner import parse_args, run_experiment

SETTINGS = {"clipped": ["--clip-vloss", "true"], "unclipped": ["--clip-vloss", "false"]}

if __name__ == "__main__":
    args = parse_args(__doc__.splitlines()[0])
    run_experiment("value_clipping", "ppo.py", SETTINGS, ["--env-id", "CartPole-v1"],
                   total_timesteps=150_000, quick_timesteps=100_000, args=args,
                   tags=["charts/episodic_return", "losses/explained_variance", "losses/value_loss"])
