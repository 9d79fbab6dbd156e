"""GAE's lambda: 0 (one-step TD), 0.5, 0.9, 0.95 and 1 (Monte-Carlo returns), on CartPole-v1.

    python experiments/gae_lambda.py --quick     # 3 seeds x 100k steps
    python experiments/gae_lambda.py             # 5 seeds x 150k steps

Theory: A_t = sum_k (gamma lambda)^k delta_{t+k}. lambda = 0 leans on V(s_{t+1}) alone: low
variance, but biased while the critic is still wrong, so learning starts slowly. lambda = 1 sums
the actual rewards to the episode's end: unbiased, but noisy. In between, both errors are
smaller. The value targets R_t = A_t + V(s_t) change with lambda too, which shows in how well the
critic fits them (explained_variance). At the script's defaults.
"""
from runner import parse_args, run_experiment

SETTINGS = {f"lambda{value}": ["--gae-lambda", value] for value in ["0", "0.5", "0.9", "0.95", "1.0"]}

if __name__ == "__main__":
    args = parse_args(__doc__.splitlines()[0])
    run_experiment("gae_lambda", "ppo.py", SETTINGS, ["--env-id", "CartPole-v1"],
                   total_timesteps=150_000, quick_timesteps=100_000, args=args,
                   tags=["charts/episodic_return", "losses/explained_variance", "losses/value_loss"])
