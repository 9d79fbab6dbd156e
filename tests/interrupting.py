"""Run a training script as `python SCRIPT ARGS` would, with Ctrl-C (SIGINT to itself) pressed at
chosen moments rather than after a chosen time: once inside the first update (a stop asked for,
which the run sees at the next boundary), then twice as every checkpoint write, every closing of the
TensorBoard writer and every ONNX export begins. A window in which a second Ctrl-C is not deferred
while the run saves and closes is then hit on every run, not by luck of timing.

    python tests/interrupting.py SCRIPT ARGS   (or through as_a_process.run, torch already imported)
"""
import os
import runpy
import signal
import sys

import torch
from torch.utils.tensorboard import SummaryWriter


def pressing_ctrl_c(function, times, first_call_only=False):
    """function, which first sends SIGINT to this process `times` times; Python runs the handler
    before the call goes on."""
    calls = []

    def pressed(*args, **kwargs):
        if not (first_call_only and calls):
            for _ in range(times):
                os.kill(os.getpid(), signal.SIGINT)
        calls.append(None)
        return function(*args, **kwargs)
    return pressed


torch.nn.utils.clip_grad_norm_ = pressing_ctrl_c(torch.nn.utils.clip_grad_norm_, 1, first_call_only=True)
torch.save = pressing_ctrl_c(torch.save, 2)
torch.onnx.export = pressing_ctrl_c(torch.onnx.export, 2)
SummaryWriter.close = pressing_ctrl_c(SummaryWriter.close, 2)

if __name__ == "__main__":
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))  # as the interpreter puts the script's folder
    runpy.run_path(sys.argv[0], run_name="__main__")
