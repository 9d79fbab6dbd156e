"""Where ppo_lstm.py's time goes, and what replaying each minibatch's runs of steps in one nn.LSTM call
gains over stepping the LSTM in a Python loop, one time step per iteration (CleanRL's
ppo_atari_lstm.py; SB3-contrib's RecurrentPPO does the same whenever an episode starts inside a
sequence).

    python benchmarks/lstm_update_profile.py            # ~2 min

1. A training run at the defaults (CartPoleNoVel-v1, 40 iterations): seconds in the rollout, in the
   update and elsewhere.
2. One update's replays (forward and backward, every minibatch of update_epochs epochs) on two
   rollouts of the defaults' size: one of an untrained policy (episodes of ~20 steps, so several
   runs per sequence) and one without any reset. Both ways give the same log-probs (checked).
3. One rollout step of the LSTM for num_envs envs: torch.lstm_cell on the LSTM's weights (what the
   rollout does) against a one-step nn.LSTM call.
Writes benchmarks/results/lstm_update_profile.md.
"""
import argparse
import copy
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import ppo_lstm  # noqa: E402
from common import write_table  # noqa: E402


def per_step_replay(agent, x, action, storage, mb_envs):
    """CleanRL's way: the minibatch's envs, all num_steps rows each (autoreset rows too), one LSTM step
    per Python iteration from the rollout's first state, zeroed after each autoreset row."""
    h, c = (s[:, mb_envs] for s in storage.initial_lstm_state)
    features = agent.encoder(x)  # (envs, steps, features)
    hidden = []
    for t in range(x.shape[1]):
        out, (h, c) = agent.lstm(features[:, t:t + 1], (h, c))
        hidden.append(out[:, 0])
        keep = torch.as_tensor(storage.is_transition[t, mb_envs], dtype=torch.float32).view(1, -1, 1)
        h, c = h * keep, c * keep
    log_pi = agent.policy(torch.stack(hidden, 1))
    return log_pi.gather(-1, action.unsqueeze(-1)).squeeze(-1)


def time_update(agent, storage, args, way, repeats):
    """Seconds of one update's replays, forward and backward (median of `repeats`)."""
    b_obs = torch.as_tensor(storage.obs.swapaxes(0, 1))  # (envs, steps, obs)
    b_actions = torch.as_tensor(storage.actions.swapaxes(0, 1))
    flat_obs, flat_actions = b_obs.reshape(-1, b_obs.shape[-1]), b_actions.reshape(-1)
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(args.update_epochs):
            for mb_inds, run_starts, lstm_state in ppo_lstm.sequence_minibatches(storage, args.num_minibatches):
                if way == "one nn.LSTM call per minibatch (ppo_lstm.py)":
                    logprob = agent.evaluate_actions(flat_obs[mb_inds], flat_actions[mb_inds], lstm_state,
                                                     run_starts)[0]
                else:
                    mb_envs = np.unique(mb_inds.numpy() // args.num_steps)
                    logprob = per_step_replay(agent, b_obs[mb_envs], b_actions[mb_envs], storage, mb_envs)
                agent.zero_grad()
                logprob.sum().backward()
        seconds.append(time.perf_counter() - start)
    return float(np.median(seconds))


def same_logprobs(agent, storage, args):
    b_obs = torch.as_tensor(storage.obs.swapaxes(0, 1))
    b_actions = torch.as_tensor(storage.actions.swapaxes(0, 1))
    mb_inds, run_starts, lstm_state = next(ppo_lstm.sequence_minibatches(storage, 1))
    with torch.no_grad():
        ours = agent.evaluate_actions(b_obs.reshape(-1, b_obs.shape[-1])[mb_inds], b_actions.reshape(-1)[mb_inds],
                                      lstm_state, run_starts)[0]
        loop = per_step_replay(agent, b_obs, b_actions, storage, np.arange(args.num_envs))
    return float((ours - loop.reshape(-1)[mb_inds]).abs().max())


def rollouts(args):
    """A rollout of an untrained policy, and the same with every row a transition (no reset)."""
    torch.manual_seed(args.seed)
    envs = ppo_lstm.make_envs(args, "profile")
    agent = ppo_lstm.Agent(2, 2, args.lstm_hidden_size)
    storage = ppo_lstm.make_storage(args, envs)
    next_obs, _ = envs.reset(seed=args.seed)
    state, done = agent.initial_state(args.num_envs), np.zeros(args.num_envs, dtype=bool)

    class NoWriter:
        def add_scalar(self, *a):
            pass

    for _ in range(2):
        next_obs, done, state, _ = ppo_lstm.collect_rollout(envs, agent, storage, next_obs, done, state, 0,
                                                            NoWriter(), "cpu")
    envs.close()
    no_reset = copy.copy(storage)
    no_reset.is_transition = np.ones_like(storage.is_transition)
    return agent, {"untrained policy": storage, "no reset inside": no_reset}


def rollout_step(agent, num_envs, repeats=2000):
    """Microseconds of one LSTM step for num_envs envs: (nn.LSTM on a 1-step sequence, torch.lstm_cell),
    and the largest difference between their h_t."""
    x, state = torch.randn(num_envs, 64), (torch.randn(1, num_envs, agent.lstm.hidden_size),
                                           torch.randn(1, num_envs, agent.lstm.hidden_size))
    cell = lambda: torch.lstm_cell(x, (state[0][0], state[1][0]), *agent.lstm.all_weights[0])
    sequence = lambda: agent.lstm(x.unsqueeze(1), state)
    timings = {}
    with torch.no_grad():
        for name, step in (("nn.LSTM", sequence), ("lstm_cell", cell)):
            for _ in range(100):
                step()
            start = time.perf_counter()
            for _ in range(repeats):
                step()
            timings[name] = (time.perf_counter() - start) / repeats * 1e6
        difference = float((sequence()[0][:, 0] - cell()[0]).abs().max())
    return timings["nn.LSTM"], timings["lstm_cell"], difference


def phases(argv):
    """Seconds in collect_rollout, ppo_update and the rest of a training run."""
    spent = {"rollout": 0.0, "update": 0.0}

    def timed(name, function):
        def wrapper(*a, **k):
            start = time.perf_counter()
            try:
                return function(*a, **k)
            finally:
                spent[name] += time.perf_counter() - start
        return wrapper

    collect_rollout, ppo_update = ppo_lstm.collect_rollout, ppo_lstm.ppo_update
    ppo_lstm.collect_rollout, ppo_lstm.ppo_update = timed("rollout", collect_rollout), timed("update", ppo_update)
    try:
        start = time.perf_counter()
        ppo_lstm.train(ppo_lstm.parse_args(argv))
        total = time.perf_counter() - start
    finally:
        ppo_lstm.collect_rollout, ppo_lstm.ppo_update = collect_rollout, ppo_update
    return spent, total


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iterations", type=int, default=40, help="iterations of the profiled training run")
    p.add_argument("--repeats", type=int, default=5, help="timings of each update (the median is kept)")
    p.add_argument("--log-dir", default="/tmp/lstm_update_profile", help="where the profiled run logs")
    cli = p.parse_args()
    torch.set_num_threads(1)
    args = ppo_lstm.parse_args([])
    argv = ["--total-timesteps", str(cli.iterations * args.batch_size), "--log-dir", cli.log_dir]
    spent, total = phases(argv)
    lines = [f"Command: `python benchmarks/lstm_update_profile.py {' '.join(sys.argv[1:])}` "
             f"({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, 1 torch thread)", "",
             f"A run at the defaults ({args.num_envs} envs x {args.num_steps} steps, {args.update_epochs} epochs of "
             f"{args.num_minibatches} minibatches, LSTM of {args.lstm_hidden_size}), {cli.iterations} iterations: "
             f"{total:.1f} s, of which the rollouts {spent['rollout']:.1f} s ({spent['rollout'] / total:.0%}), "
             f"the updates {spent['update']:.1f} s ({spent['update'] / total:.0%}).", "",
             "| rollout | runs of steps per env sequence (mean) | way of replaying | one update's replays, "
             "forward + backward (ms) | against the Python loop |", "|---|---|---|---|---|"]
    agent, storages = rollouts(args)
    for name, storage in storages.items():
        error = same_logprobs(agent, storage, args)
        assert error < 1e-5, f"the two replays disagree by {error}"
        runs = sum(int(starts.sum()) for _, starts, _ in ppo_lstm.sequence_minibatches(storage, 1)) / args.num_envs
        loop = time_update(agent, storage, args, "a Python loop per time step (CleanRL)", cli.repeats)
        ours = time_update(agent, storage, args, "one nn.LSTM call per minibatch (ppo_lstm.py)", cli.repeats)
        lines.append(f"| {name} | {runs:.1f} | a Python loop per time step (CleanRL) | {loop * 1e3:.0f} | 1.00x |")
        lines.append(f"| {name} | {runs:.1f} | one nn.LSTM call per minibatch (ppo_lstm.py) | {ours * 1e3:.0f} | "
                     f"{loop / ours:.2f}x faster |")
    sequence_us, cell_us, difference = rollout_step(agent, args.num_envs)
    lines += ["", f"One rollout step of the LSTM for {args.num_envs} envs: {sequence_us:.0f} us as a one-step nn.LSTM "
              f"call, {cell_us:.0f} us with torch.lstm_cell on the same weights (what the rollout does), "
              f"h_t equal to {difference:.0e}."]
    write_table("lstm_update_profile", lines)


if __name__ == "__main__":
    main()
