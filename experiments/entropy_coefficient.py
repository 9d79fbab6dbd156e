"""The entropy bonus's weight c2 (--ent-coef): 0, 0.01, 0.05 and 0.1, on CartPole-v1 at the defaults.

    python experiments/entropy_coefficient.py --quick     # 3 seeds x 100k steps
    python experiments/entropy_coefficient.py             # 5 seeds x 150k steps

Theory: the loss subtracts c2 H[pi], so a larger c2 keeps the policy's entropy up: more
exploration, but a policy held further from the greedy one, which costs return once there is
nothing left to find. Without the bonus the entropy falls as fast as the policy gradient pushes it.
"""
from runner import parse_args, run_experiment

SETTINGS = {f"ent{value}": ["--ent-coef", value] for value in ["0", "0.01", "0.05", "0.1"]}

if __name__ == "__main__":
    args = parse_args(__doc__.splitlines()[0])
    run_experiment("entropy_coefficient", "ppo.py", SETTINGS, ["--env-id", "CartPole-v1"],
                   total_timesteps=150_000, quick_timesteps=100_000, args=args,
                   tags=["charts/episodic_return", "losses/entropy"])
