"""Bootstrapping at time limits on and off, on Pendulum-v1 with ppo_continuous_action.py.

    python experiments/truncation_bootstrap.py --quick     # 3 seeds x 150k steps
    python experiments/truncation_bootstrap.py             # 5 seeds x 300k steps

Theory: every Pendulum episode ends by its 200-step time limit, never by a terminal state. With
bootstrapping, delta_t at that step is r_t + gamma V(s_final) - V(s_t): the swing goes on after the
cut, and the critic learns a value that depends on the state alone. Treated as terminal (as CleanRL
does) the target is r_t alone, so the same state is worth a full discounted future in one episode
and almost nothing 10 steps before a cut; the observation has no clock, the critic cannot fit
both, and its error leaks into every A_t near the end of an episode. Expect a worse critic
(explained_variance) and slower or lower learning. At the script's defaults otherwise.
"""
from runner import parse_args, run_experiment

SETTINGS = {"bootstrap": ["--bootstrap-truncation", "true"], "as_terminal": ["--bootstrap-truncation", "false"]}

if __name__ == "__main__":
    args = parse_args(__doc__.splitlines()[0])
    run_experiment("truncation_bootstrap", "ppo_continuous_action.py", SETTINGS, ["--env-id", "Pendulum-v1"],
                   total_timesteps=300_000, quick_timesteps=150_000, args=args,
                   tags=["charts/episodic_return", "losses/explained_variance", "losses/value_loss"])
