"""target_kl: stop an update's epochs once approx_kl passes it; off, 0.01, 0.003 and 0.001, on CartPole-v1.

    python experiments/target_kl.py --quick     # 3 seeds x 100k steps
    python experiments/target_kl.py             # 5 seeds x 150k steps

Theory: approx_kl estimates how far the update has moved the policy from the one that collected
the rollout; stopping the epochs once it passes target_kl caps that distance, whatever the learning
rate and the number of epochs. The lower the target, the fewer epochs an update runs
(diagnostics/update_epochs_done) and the more slowly the policy learns. The flags push the policy
hard (learning rate 1e-3, 10 epochs): at the script's defaults approx_kl stays near 1e-4 and a
target of 0.01 never triggers.
"""
from runner import parse_args, run_experiment

SETTINGS = {"off": []} | {f"kl{value}": ["--target-kl", value] for value in ["0.01", "0.003", "0.001"]}

if __name__ == "__main__":
    args = parse_args(__doc__.splitlines()[0])
    run_experiment("target_kl", "ppo.py", SETTINGS,
                   ["--env-id", "CartPole-v1", "--learning-rate", "1e-3", "--update-epochs", "10", "--anneal-lr", "false"],
                   total_timesteps=150_000, quick_timesteps=100_000, args=args,
                   tags=["charts/episodic_return", "losses/approx_kl", "diagnostics/update_epochs_done"])
