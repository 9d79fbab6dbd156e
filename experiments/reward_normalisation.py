"""Reward normalisation on and off, on Pendulum-v1 with ppo_continuous_action.py.

    python experiments/reward_normalisation.py --quick     # 3 seeds x 150k steps
    python experiments/reward_normalisation.py             # 5 seeds x 300k steps

Theory: Pendulum pays between -16 and 0 a step, so discounted returns reach about -1000 and the
critic's targets R_t = A_t + V(s_t) are in the hundreds. Unscaled, the value loss is then huge, its
gradient dominates the global norm that --max-grad-norm clips to 0.5, and the policy's share of
each step shrinks to almost nothing: learning should stall. Dividing rewards by a running std of
the discounted return brings the targets near 1 and the two losses to the same scale. Advantage
normalisation alone does not help here, since it rescales A_t in L^CLIP but not the critic's
targets. At the script's defaults otherwise.
"""
from runner import parse_args, run_experiment

SETTINGS = {"normalised": ["--norm-reward", "true"], "raw": ["--norm-reward", "false"]}

if __name__ == "__main__":
    args = parse_args(__doc__.splitlines()[0])
    run_experiment("reward_normalisation", "ppo_continuous_action.py", SETTINGS, ["--env-id", "Pendulum-v1"],
                   total_timesteps=300_000, quick_timesteps=150_000, args=args,
                   tags=["charts/episodic_return", "losses/value_loss", "diagnostics/grad_norm"])
