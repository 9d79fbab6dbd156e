"""Why CartPole's settings do not land LunarLander-v3: the landing flags, each change undone alone.

    python experiments/lunarlander_settings.py             # 7 settings x 3 seeds x 1M steps; ~40 min on 2 cores
    python experiments/lunarlander_settings.py --quick     # 3 seeds x 500k steps

ppo.py's defaults are CleanRL's, tuned on CartPole. The README's LunarLander command changes three
things: the horizon (gamma 0.999, lambda 0.98), the rollout (16 envs x 1024 steps, minibatches of 64),
and the reward scale (--norm-reward). Each setting below is that command with one change undone, plus
two it leaves alone (the entropy bonus and the learning-rate schedule). Predictions, written before the runs:
- CartPole's settings: the curve measured with them, a rise to about 100 and no landing.
- gamma 0.99, lambda 0.95: the horizon 1/(1 - gamma) is 100 steps, and an episode that lands takes
  200-400; the landing bonus is discounted away from the early steps that set up the descent, so
  predict a lower plateau. (charts/episodic_length in TensorBoard tells hovering, 1000 steps, from landing.)
- CartPole's rollout, 4 envs x 128 steps: with gamma 0.999 a 128-step window is much shorter than the
  horizon, so most advantages lean on V(s_T); predict a slower, noisier rise.
- no reward normalisation: returns of -200..+300 make value losses in the thousands; the value-loss
  clip (0.2 in return units) and the global gradient-norm clip (0.5), which that loss dominates, both
  shrink the updates; predict the largest loss of all, with the grad norm far above 0.5 all run long.
- no entropy bonus (0 for 0.01): predict little change in 1M steps; 4 actions keep exploring.
- a constant learning rate: predict the same rise, then a less steady end (annealing is what holds
  the last updates small).
The figure and course/README.md#lunarlander set the measurements against these.
"""
from runner import parse_args, run_experiment

LANDING = ["--num-envs", "16", "--num-steps", "1024", "--num-minibatches", "256", "--gamma", "0.999",
           "--gae-lambda", "0.98", "--norm-reward"]  # benchmarks/lunarlander.py's, the README's command
SETTINGS = {
    "landing": LANDING,
    "cartpole-settings": [],  # ppo.py's defaults
    "gamma0.99": LANDING + ["--gamma", "0.99", "--gae-lambda", "0.95"],
    "rollout4x128": LANDING + ["--num-envs", "4", "--num-steps", "128", "--num-minibatches", "4"],
    "no-norm-reward": LANDING + ["--norm-reward", "false"],
    "ent0": LANDING + ["--ent-coef", "0"],
    "constant-lr": LANDING + ["--anneal-lr", "false"],
}

if __name__ == "__main__":
    args = parse_args(__doc__.splitlines()[0])
    run_experiment("lunarlander_settings", "ppo.py", SETTINGS, ["--env-id", "LunarLander-v3"],
                   total_timesteps=1_000_000, quick_timesteps=500_000, args=args, seeds=3,
                   tags=["charts/episodic_return", "losses/value_loss", "diagnostics/grad_norm"])
