"""Memory against no memory against frame stacking, on CartPoleNoVel-v1 (CartPole without velocities).

    python experiments/memory.py --quick     # 3 seeds x 100k steps
    python experiments/memory.py             # 5 seeds x 200k steps

Theory: CartPoleNoVel-v1 shows the cart position and the pole angle, not their velocities. The
observation is then not a Markov state: the same (x, theta) comes with the pole falling or rising,
and the best action differs. A policy of the observation alone (ppo.py) can only learn what the
angle says by itself and should stall far below 500. Stacking the last 4 observations makes the
velocities recoverable as differences, so ppo.py on the stacked env should learn the task as it
learns CartPole-v1. An LSTM (ppo_lstm.py) has to learn to remember what the stack hands over, so
it should learn more slowly per step than stacking, but as far. Each script at its defaults.
"""
from runner import parse_args, run_experiment

SETTINGS = {
    "memory": ["ppo_lstm.py", "--env-id", "CartPoleNoVel-v1"],
    "no_memory": ["ppo.py", "--env-id", "ppo_lstm:CartPoleNoVel-v1"],
    "stack4": ["ppo.py", "--env-id", "experiments.frame_stack:CartPoleNoVelStack4-v1"],
}

if __name__ == "__main__":
    args = parse_args(__doc__.splitlines()[0])
    run_experiment("memory", "ppo_lstm.py", SETTINGS, [], total_timesteps=200_000, quick_timesteps=100_000,
                   args=args, tags=["charts/episodic_return", "losses/explained_variance", "losses/entropy"])
