"""Where a training run's time goes, phase by phase (env stepping, forwards, GAE, backward, ...).

    python benchmarks/profile_phases.py                      # ppo.py, CartPole-v1, 100k steps
    python benchmarks/profile_phases.py --script ppo_continuous_action --env-id Pendulum-v1 \
        --total-timesteps 50000
    python benchmarks/profile_phases.py --script ppo_godot --env-path godot/chase/chase_discrete.x86_64 \
        --n-parallel 2 --total-timesteps 300000

It imports the script and runs its train() in this process, with a timer wrapped around each
function a phase consists of: the vector env's step(), Agent.get_action (rollout sampling),
Agent.evaluate_actions and get_value (without gradients: the batched forward after the
rollout; with gradients: the update's forward), compute_gae, Tensor.backward, clip_grad_norm_,
Optimizer.zero_grad/step, SummaryWriter.add_scalar and print. The update's remaining time (from
the end of GAE to the first logged loss, minus the timed parts) is the loss arithmetic, minibatch
indexing and the update's Python loop; the rollout's remaining time is storage writes, tensor
conversions, its Python loop and whatever no timer saw. Timers cost about a microsecond a call.
Writes the table to benchmarks/results/profile_<script>_<env>.md.
"""
import argparse
import builtins
import contextlib
import importlib
import io
import os
import sys
import tempfile
import time
from collections import defaultdict

import torch

from common import REPO, write_table

sys.path.insert(0, str(REPO))

PHASES = [
    ("env", "env stepping (`envs.step`)"),
    ("rollout_forward", "rollout: sampling forward (`get_action`)"),
    ("rollout_rest", "rollout: storage, tensor conversion, loop, what no timer saw"),
    ("old_forward", "log pi_old and V(s_t): one batched forward"),
    ("gae", "GAE (`compute_gae`)"),
    ("update_forward", "update: forward (`evaluate_actions`)"),
    ("update_losses", "update: batching, losses, minibatch loop"),
    ("backward", "update: backward"),
    ("clip", "update: gradient clipping"),
    ("optimizer", "update: optimizer zero_grad + step"),
    ("logging", "logging (`add_scalar`, `print`)"),
    ("setup", "setup (envs, network, writer) and closing"),
]


class Profile:
    def __init__(self):
        self.seconds = defaultdict(float)
        self.calls = defaultdict(int)
        self.update_start = None  # set when GAE returns; the update runs until the first loss is logged
        self.update_seconds = 0.0

    def timed(self, phase, fn):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[phase] += time.perf_counter() - start
                self.calls[phase] += 1

        return wrapper


def patch(module, profile):
    """Wrap the functions each phase is made of; returns a function that undoes it."""
    undo = []

    def setattr_undoable(owner, name, value):
        undo.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    make_envs = module.make_envs

    def timed_make_envs(*args, **kwargs):
        envs = profile.timed("setup", make_envs)(*args, **kwargs)
        envs.step = profile.timed("env", envs.step)  # the outermost wrapper's step, all layers inside
        envs.close = profile.timed("setup", envs.close)
        return envs

    setattr_undoable(module, "make_envs", timed_make_envs)
    setattr_undoable(module.Agent, "get_action", profile.timed("rollout_forward", module.Agent.get_action))
    evaluate_actions = module.Agent.evaluate_actions
    forward_old = profile.timed("old_forward", evaluate_actions)
    forward_update = profile.timed("update_forward", evaluate_actions)
    setattr_undoable(module.Agent, "evaluate_actions", lambda self, *a, **k: (
        forward_update if torch.is_grad_enabled() else forward_old)(self, *a, **k))
    setattr_undoable(module.Agent, "get_value", profile.timed("old_forward", module.Agent.get_value))

    compute_gae = profile.timed("gae", module.compute_gae)

    def gae_then_mark(*args, **kwargs):
        out = compute_gae(*args, **kwargs)
        profile.update_start = time.perf_counter()
        return out

    setattr_undoable(module, "compute_gae", gae_then_mark)
    setattr_undoable(torch.Tensor, "backward", profile.timed("backward", torch.Tensor.backward))
    setattr_undoable(torch.nn.utils, "clip_grad_norm_", profile.timed("clip", torch.nn.utils.clip_grad_norm_))
    optimizer_class = torch.optim.Adam
    setattr_undoable(optimizer_class, "step", profile.timed("optimizer", optimizer_class.step))
    setattr_undoable(optimizer_class, "zero_grad", profile.timed("optimizer", optimizer_class.zero_grad))

    add_scalar = profile.timed("logging", module.SummaryWriter.add_scalar)

    def add_scalar_marking_update_end(self, tag, *args, **kwargs):
        if profile.update_start is not None and not tag.startswith("charts/episodic"):
            profile.update_seconds += time.perf_counter() - profile.update_start
            profile.update_start = None
        return add_scalar(self, tag, *args, **kwargs)

    setattr_undoable(module.SummaryWriter, "add_scalar", add_scalar_marking_update_end)
    setattr_undoable(builtins, "print", profile.timed("logging", builtins.print))
    for name in ("__init__", "close"):
        setattr_undoable(module.SummaryWriter, name, profile.timed("setup", getattr(module.SummaryWriter, name)))

    def restore():
        for owner, name, value in reversed(undo):
            setattr(owner, name, value)

    return restore


def run(script, argv):
    module = importlib.import_module(script)
    args = module.parse_args(argv)
    profile = Profile()
    restore = patch(module, profile)
    with tempfile.TemporaryDirectory() as workdir:
        cwd = os.getcwd()
        os.chdir(workdir)
        start = time.perf_counter()
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                module.train(args)
        finally:
            total = time.perf_counter() - start
            restore()
            os.chdir(cwd)
    return args, profile, total


def table(script, argv, args, profile, total):
    s = profile.seconds
    in_update = s["update_forward"] + s["backward"] + s["clip"] + s["optimizer"]
    s["update_losses"] = max(0.0, profile.update_seconds - in_update)
    s["rollout_rest"] = 0.0  # what no timer saw: the rollout's own loop, mostly
    accounted = sum(s.values())
    s["rollout_rest"] = max(0.0, total - accounted)
    steps = args.num_iterations * args.batch_size
    lines = [f"Command: `python benchmarks/profile_phases.py --script {script} {' '.join(argv)}` "
             f"({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, torch {torch.__version__}, "
             f"{args.torch_threads} thread)", "",
             f"{steps:,} env steps in {total:.1f} s ({steps / total:,.0f} steps/s); "
             f"{args.num_iterations} iterations of {args.num_steps} rollout steps x {args.num_envs} envs "
             f"and {args.update_epochs} epochs x {args.num_minibatches} minibatches.", "",
             "| phase | seconds | share | per call (us) | calls |", "|---|---|---|---|---|"]
    for key, name in PHASES:
        calls = profile.calls.get(key, 0)
        per_call = f"{1e6 * s[key] / calls:,.0f}" if calls else ""
        lines.append(f"| {name} | {s[key]:.2f} | {100 * s[key] / total:.0f}% | {per_call} | "
                     f"{calls if calls else ''} |")
    return lines


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--script", default="ppo", choices=["ppo", "ppo_continuous_action", "ppo_godot"])
    p.add_argument("--out", default=None, help="name of the table in benchmarks/results/")
    known, rest = p.parse_known_args()
    argv = rest or ["--total-timesteps", "100000"]
    args, profile, total = run(known.script, argv + ["--exp-name", "profile"])
    env_id = args.env_id  # ppo_godot.py: the game's file name
    write_table(known.out or f"profile_{known.script}_{env_id}", table(known.script, argv, args, profile, total))


if __name__ == "__main__":
    main()
