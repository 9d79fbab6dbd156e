"""Run a training script as `python SCRIPT ARGS` would, with Ctrl-C (SIGINT to itself) pressed at
chosen moments rather than after a chosen time, so that a test hits the same window on every run:

    python tests/interrupting.py SCRIPT ARGS
        once inside the first update (a stop asked for, which the run sees at the next boundary),
        then twice as every checkpoint write, ONNX export and closing of the TensorBoard writer
        begins: a second Ctrl-C that is not deferred while the run saves and closes is raised there.
    python tests/interrupting.py --once-inside PLACE SCRIPT ARGS
        once, as the 20th call of PLACE (a key of PLACES) begins; a KeyboardInterrupt that comes out
        of that call is named on stderr: the first Ctrl-C must not be raised inside a library.

Through as_a_process.run it starts with torch already imported.
"""
import os
import runpy
import signal
import sys

import gymnasium as gym
import torch
from torch.utils.tensorboard import SummaryWriter

PLACES = {"the writer": (SummaryWriter, "add_scalar"), "the env": (gym.vector.SyncVectorEnv, "step"),
          "the update": (torch.optim.Adam, "step")}


def pressing_ctrl_c(function, times, on_calls=None, place=None):
    """function, which first sends SIGINT to this process `times` times (on the calls numbered in
    on_calls, or on every call); Python runs the handler as the call goes on."""
    calls = []

    def pressed(*args, **kwargs):
        calls.append(None)
        if on_calls is not None and len(calls) not in on_calls:
            return function(*args, **kwargs)
        try:
            for _ in range(times):
                os.kill(os.getpid(), signal.SIGINT)
            return function(*args, **kwargs)
        except KeyboardInterrupt:
            if place:
                print(f"interrupting.py: Ctrl-C raised KeyboardInterrupt inside {place}", file=sys.stderr)
            raise
    return pressed


if __name__ == "__main__":
    if sys.argv[1] == "--once-inside":
        place = sys.argv[2]
        owner, name = PLACES[place]
        setattr(owner, name, pressing_ctrl_c(getattr(owner, name), 1, on_calls={20}, place=place))
        sys.argv = sys.argv[3:]
    else:
        torch.nn.utils.clip_grad_norm_ = pressing_ctrl_c(torch.nn.utils.clip_grad_norm_, 1, on_calls={1})
        torch.save = pressing_ctrl_c(torch.save, 2)
        torch.onnx.export = pressing_ctrl_c(torch.onnx.export, 2)
        SummaryWriter.close = pressing_ctrl_c(SummaryWriter.close, 2)
        sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))  # as the interpreter puts the script's folder
    runpy.run_path(sys.argv[0], run_name="__main__")
