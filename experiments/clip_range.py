"""The clip range epsilon of L^CLIP: 0.1, 0.2, 0.3 and no clipping, on CartPole-v1.

    python experiments/clip_range.py --quick     # 3 seeds x 100k steps, about 3 minutes on 2 cores
    python experiments/clip_range.py             # 5 seeds x 200k steps

Theory: r_t is clipped to [1 - eps, 1 + eps], so a smaller epsilon stops each update sooner:
lower approx_kl, a larger share of clipped samples (clipfrac), slower but steadier learning;
without clipping nothing holds the policy near the one that collected the data. The flags push the
policy hard (learning rate 1e-3, 10 epochs) so that the clip has something to hold; at the
script's defaults clipfrac stays below 0.001 and epsilon changes nothing visible. The value loss is
left unclipped in all four, so that only L^CLIP differs.
"""
from runner import parse_args, run_experiment

SETTINGS = {
    "eps0.1": ["--clip-coef", "0.1"],
    "eps0.2": ["--clip-coef", "0.2"],
    "eps0.3": ["--clip-coef", "0.3"],
    "no_clip": ["--clip-coef", "1000"],
}

if __name__ == "__main__":
    args = parse_args(__doc__.splitlines()[0])
    run_experiment("clip_range", "ppo.py", SETTINGS,
                   ["--env-id", "CartPole-v1", "--learning-rate", "1e-3", "--update-epochs", "10",
                    "--anneal-lr", "false", "--clip-vloss", "false"],
                   total_timesteps=200_000, quick_timesteps=100_000, args=args,
                   tags=["charts/episodic_return", "losses/clipfrac", "losses/approx_kl"])
