"""Advantage normalisation on and off, on CartPole-v1 at the script's defaults.

    python experiments/advantage_normalisation.py --quick     # 3 seeds x 100k steps
    python experiments/advantage_normalisation.py             # 5 seeds x 150k steps

Theory: normalising A_t per minibatch to mean 0 and std 1 fixes the scale of the policy gradient.
Without it the gradient grows with the returns (CartPole's advantages reach tens), so the same
learning rate takes bigger steps as the agent improves: faster at first, then larger and more
clipped updates (approx_kl, clipfrac); gradient clipping (max norm 0.5) caps the step in the end.
"""
from runner import parse_args, run_experiment

SETTINGS = {"normalised": ["--norm-adv", "true"], "raw": ["--norm-adv", "false"]}

if __name__ == "__main__":
    args = parse_args(__doc__.splitlines()[0])
    run_experiment("advantage_normalisation", "ppo.py", SETTINGS, ["--env-id", "CartPole-v1"],
                   total_timesteps=150_000, quick_timesteps=100_000, args=args,
                   tags=["charts/episodic_return", "losses/approx_kl", "losses/clipfrac"])
