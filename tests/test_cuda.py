"""--cuda: off by default (the CPU is faster for these networks), refused with one line where torch
sees no GPU, and working where it does (these tests skip on a CPU-only machine such as CI)."""
import math

import pytest
import torch

from conftest import GYM_SCRIPTS, read_scalars, run_dirs
from test_scripts import TAGS, record_agent_calls

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(),
                               reason="torch sees no CUDA GPU: the --cuda path is tested only where one exists")


@pytest.mark.parametrize("script", GYM_SCRIPTS, ids=repr)
def test_cpu_is_the_default(script):
    assert script.module.parse_args([]).cuda is False


@needs_gpu
@pytest.mark.parametrize("script", GYM_SCRIPTS, ids=repr)
def test_cuda_trains_on_the_gpu_and_saves_a_model_the_cpu_loads(script, in_tmp, monkeypatch):
    calls = record_agent_calls(script, monkeypatch)
    script.module.train(script.module.parse_args(script.short + ["--cuda", "--save-model"]))
    assert calls and all(x.is_cuda for _, x, _, _ in calls)
    (run_dir,) = run_dirs(in_tmp)
    scalars = read_scalars(run_dir)
    for tag in TAGS:
        assert tag in scalars and all(math.isfinite(v) for _, v in scalars[tag]), tag
    checkpoint = run_dir / f"{script.module.__name__}.pt"
    assert len(script.module.evaluate(str(checkpoint), eval_episodes=2)) == 2  # loads on the CPU
