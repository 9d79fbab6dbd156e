"""Saving without asking, and checkpoints that survive a hard kill: every training script keeps its
training state at the end, at every stop and every --checkpoint-minutes (0: after every update);
a run killed with SIGKILL (nothing runs on its way out) and resumed from its last periodic checkpoint
logs what a run never killed logs, step for step."""
import os
import pickle
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from conftest import (CHASE, GODOT, GODOT_LSTM, GYM_SCRIPTS, REPO, game_pids, needs_godot, read_scalars, run_dirs,
                      run_script)
from test_resume import assert_same_metrics, resume, signal_at_gae, train_in


def count_saves(script, monkeypatch):
    saves = []
    original = script.module.save_checkpoint
    monkeypatch.setattr(script.module, "save_checkpoint", lambda *a: saves.append(1) or original(*a))
    return saves


def test_a_run_keeps_its_model_unless_told_not_to(script, in_tmp, monkeypatch, capsys):
    """No --save-model: the training state is saved at the end, and the Done line says where."""
    saves = count_saves(script, monkeypatch)
    run_dir = script.module.train(script.module.parse_args(script.short))
    checkpoint = f"{run_dir}/{script.module.__name__}.pt"
    assert f"The state at global_step=1024 is saved to {checkpoint}" in capsys.readouterr().out.splitlines()[-1]
    assert pickle.loads(torch.load(checkpoint)["resume"])["iteration"] == 4
    assert len(saves) == 1  # the default interval (5 minutes) is longer than the run

    run_dir = script.module.train(script.module.parse_args(script.short + ["--save-model", "false", "--seed", "2"]))
    assert not os.path.exists(f"{run_dir}/{script.module.__name__}.pt")
    assert "No model is saved (--save-model false)" in capsys.readouterr().out


def test_checkpoint_minutes_0_saves_after_every_update_and_changes_nothing_learned(script, in_tmp, monkeypatch):
    saves = count_saves(script, monkeypatch)
    every_update = script.module.train(script.module.parse_args(script.short + ["--checkpoint-minutes", "0",
                                                                                "--log-dir", "every_update"]))
    assert len(saves) == 4 + 1  # each of the 4 updates, then the end
    at_the_end = script.module.train(script.module.parse_args(script.short + ["--log-dir", "at_the_end"]))
    saved, reference = read_scalars(every_update), read_scalars(at_the_end)
    assert saved.keys() == reference.keys()
    assert all(saved[tag] == reference[tag] for tag in reference if tag != "charts/SPS")


def test_a_resumed_run_saves_like_any_other(script, tmp_path, monkeypatch):
    """A run stopped with --save-model false (or saved before saving was the default) and resumed
    saves at its end: resuming it again goes on from there, not from the old stop."""
    compute_gae = script.module.compute_gae
    signal_at_gae(script, monkeypatch, on_call=2)
    assert train_in(tmp_path, script, script.short + ["--save-model", "false"], monkeypatch) == 130
    monkeypatch.setattr(script.module, "compute_gae", compute_gae)
    checkpoint = run_dirs(tmp_path)[0] / f"{script.module.__name__}.pt"
    assert torch.load(checkpoint)["args"]["save_model"] is False
    resume(tmp_path, script, [], monkeypatch)
    assert pickle.loads(torch.load(checkpoint)["resume"])["global_step"] == 1024


def start(script_file, *argv, cwd):
    """The script as a process, its output in a file (a game it starts inherits it, and outlives it)."""
    with open(cwd / "output.txt", "w") as output:
        return subprocess.Popen([sys.executable, str(REPO / script_file), *argv], cwd=cwd, stdout=output,
                                stderr=subprocess.STDOUT)


def kill_after_first_checkpoint(proc, checkpoint_glob, cwd):
    """SIGKILL the run as soon as a periodic checkpoint is on disk; the checkpoint's path."""
    deadline = time.monotonic() + 120
    while not list(cwd.glob(checkpoint_glob)):
        assert proc.poll() is None, f"the run ended before its first checkpoint: {(cwd / 'output.txt').read_text()}"
        assert time.monotonic() < deadline, "no checkpoint within 120 s"
        time.sleep(0.02)
    proc.kill()
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL  # killed mid-run, not finished
    return next(cwd.glob(checkpoint_glob))


@pytest.mark.parametrize("script", GYM_SCRIPTS, ids=repr)
def test_killed_after_a_periodic_checkpoint_resumes_like_never_killed(script, tmp_path, monkeypatch):
    iterations = 20  # killed mid-run: the 19 after the first checkpoint take over a second
    args = script.module.parse_args(script.short)
    argv = script.short + ["--total-timesteps", str(iterations * args.batch_size), "--checkpoint-minutes", "0"]
    assert train_in(tmp_path / "reference", script, argv, monkeypatch) is None

    (tmp_path / "killed").mkdir()
    proc = start(script.file, *argv, cwd=tmp_path / "killed")
    checkpoint = kill_after_first_checkpoint(proc, f"runs/*/{script.module.__name__}.pt", tmp_path / "killed")
    saved_step = pickle.loads(torch.load(checkpoint)["resume"])["global_step"]
    assert 0 < saved_step < iterations * args.batch_size

    resumed_dir = resume(tmp_path / "killed", script, [], monkeypatch)
    assert_same_metrics(run_dirs(tmp_path / "reference")[0], resumed_dir, iterations)


def test_a_game_run_killed_after_a_periodic_checkpoint_resumes_from_it(tmp_path, port):
    """The real Chase game: SIGKILL leaves the game to notice the closed connection and quit, and the
    checkpoint resumes (with new episodes: a game's state is its own) from the step it saved."""
    needs_godot()
    game = ["--env-path", CHASE["discrete"], "--port", str(port), "--num-steps", "32"]
    proc = start("ppo_godot.py", *game, "--total-timesteps", "100000", "--checkpoint-minutes", "0", cwd=tmp_path)
    checkpoint = kill_after_first_checkpoint(proc, "runs/*/ppo_godot.pt", tmp_path)
    saved_step = pickle.loads(torch.load(checkpoint)["resume"])["global_step"]
    deadline = time.monotonic() + 30
    while game_pids(port) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not game_pids(port), "the game outlived the killed run by 30 s"

    time.sleep(1.05)  # TensorBoard orders event files by the second in their names
    run_script("ppo_godot.py", "--resume", str(checkpoint), "--port", str(port), "--total-timesteps",
               str(saved_step + 2048), cwd=tmp_path)
    returns = read_scalars(checkpoint.parent)["losses/policy_loss"]
    steps = [step for step, _ in returns]
    assert steps == sorted(set(steps))  # nothing twice: the killed life's steps after the checkpoint are gone
    assert steps[-1] == saved_step + 2048 and saved_step in steps


def test_a_run_saved_before_a_flag_existed_resumes_with_its_default(script, tmp_path, monkeypatch, capsys):
    """A student adds a flag, then resumes a run saved before it: the flag's default, said in one line."""
    assert train_in(tmp_path, script, script.short, monkeypatch) is None
    checkpoint = run_dirs(tmp_path)[0] / f"{script.module.__name__}.pt"
    saved = torch.load(checkpoint)
    del saved["args"]["norm_adv"]  # as if --norm-adv were added since
    torch.save(saved, checkpoint)
    capsys.readouterr()
    resume(tmp_path, script, ["--total-timesteps", "2048"], monkeypatch)
    assert ("resume: the run was saved before --norm-adv existed; it goes on with --norm-adv True"
            in capsys.readouterr().out.splitlines())
    assert torch.load(checkpoint)["args"]["norm_adv"] is True


def crash_in_the_rollout(*args):
    raise RuntimeError("a bug in a hack")


def crash_inside_the_update(args, agent, optimizer, *rest):
    optimizer.step()  # the weights are now between two boundaries
    raise RuntimeError("a bug in a hack")


@pytest.mark.parametrize("crash", [crash_in_the_rollout, crash_inside_the_update], ids=["rollout", "update"])
def test_a_crash_in_a_resumed_run_keeps_the_checkpoint_it_started_from(script, crash, tmp_path, monkeypatch,
                                                                        capsys):
    """A crash before the resumed run's first boundary would save less than the checkpoint it started
    from (its episodes, or anything resumable at all): that checkpoint stays as it was. What it held is
    read from the file itself, not through the script's own resumes_to, which this protects."""
    compute_gae = script.module.compute_gae
    signal_at_gae(script, monkeypatch, on_call=2)
    assert train_in(tmp_path, script, script.short, monkeypatch) == 130  # Ctrl-C: saved exactly
    monkeypatch.setattr(script.module, "compute_gae", compute_gae)
    checkpoint = run_dirs(tmp_path)[0] / f"{script.module.__name__}.pt"
    before = checkpoint.read_bytes()
    started_from = pickle.loads(torch.load(checkpoint)["resume"])
    assert started_from["global_step"] == 2 * 256  # stopped after the second of the short run's rollouts
    game = script in (GODOT, GODOT_LSTM)  # a running game's episodes are never saved
    assert game or started_from["envs"].get("sub_envs") is not None  # stopped between updates: episodes saved

    patched = "collect_rollout" if crash is crash_in_the_rollout else "ppo_update"
    monkeypatch.setattr(script.module, patched, crash)
    with pytest.raises(RuntimeError, match="a bug in a hack"):
        script.module.train(script.module.parse_args(["--resume", str(checkpoint)]))
    stderr = capsys.readouterr().err
    if not game or crash is crash_inside_the_update:  # a save would lose the episodes, or all of it
        assert (f"{checkpoint.relative_to(tmp_path)} is kept as it was: it resumes from "
                f"global_step={started_from['global_step']}") in stderr
        assert checkpoint.read_bytes() == before
    else:  # the boundary it started from, saved again
        after = pickle.loads(torch.load(checkpoint)["resume"])
        assert (after["iteration"], after["global_step"]) == (started_from["iteration"], started_from["global_step"])


def test_a_save_cut_short_leaves_the_last_checkpoint_whole(script, in_tmp, monkeypatch):
    """A checkpoint is written whole or not at all: a save that fails half-way (a full disk) leaves the
    last good checkpoint where it was, whole, and the run ends in one line."""
    saves = []
    torch_save = torch.save

    def failing_from_the_third(obj, path, *rest, **kwargs):
        if isinstance(path, str):  # a checkpoint (torch.save also serves copies in memory)
            saves.append(path)
        if len(saves) < 3 or not isinstance(path, str):
            return torch_save(obj, path, *rest, **kwargs)
        with open(path, "wb") as half:  # what a write cut short leaves
            half.write(b"PK\x03\x04" + b"\0" * 100)
        raise RuntimeError("PytorchStreamWriter failed writing file data/0: file write failed")

    monkeypatch.setattr(script.module.torch, "save", failing_from_the_third)
    with pytest.raises(SystemExit) as stop:
        script.module.train(script.module.parse_args(script.short + ["--checkpoint-minutes", "0"]))
    assert stop.value.code == 2
    monkeypatch.undo()
    (checkpoint,) = in_tmp.glob(f"runs/*/{script.module.__name__}.pt")
    assert pickle.loads(torch.load(checkpoint)["resume"])["iteration"] == 2  # the second save, whole


def test_a_checkpoint_is_on_the_disk_before_it_replaces_the_last(script, in_tmp, monkeypatch):
    """Each checkpoint is written beside the last one, flushed to the disk (fsync), and only then
    renamed over it: a power cut after the rename finds a whole file, not the rename of an empty one."""
    events, fsync, replace = [], os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
                        or fsync(fd))
    monkeypatch.setattr(os, "replace", lambda src, dst: events.append(("replace", os.path.abspath(src)))
                        or replace(src, dst))
    script.module.train(script.module.parse_args(script.short + ["--checkpoint-minutes", "0"]))
    renames = [i for i, (event, path) in enumerate(events) if event == "replace" and path.endswith(".pt.tmp")]
    assert len(renames) == 5  # after each of the 4 updates, and at the end
    assert all(events[i - 1] == ("fsync", events[i][1]) for i in renames), events


def test_the_end_of_run_line_names_the_run_s_log_folder(script, in_tmp, capsys):
    """The Done line names the folder the run really logged to, in the --log-dir given, for a new run
    and for a resumed one, and the checkpoint in it."""
    for argv in (script.short + ["--log-dir", "elsewhere/logs"], None):
        if argv is None:  # the same run, resumed for longer
            argv = ["--resume", str(checkpoint), "--total-timesteps", "2048"]
        script.module.train(script.module.parse_args(argv))
        done = capsys.readouterr().out.splitlines()[-1]
        logs, logdir, checkpoint = re.fullmatch(
            r"Done\. The logs are in (\S+): watch them with `tensorboard --logdir (\S+)`\. The state at "
            r"global_step=\d+ is saved to (\S+) \(continue it with --resume \S+\)", done).groups()
        (run_dir,) = (in_tmp / "elsewhere" / "logs").iterdir()
        assert Path(logs).resolve() == Path(logdir).resolve() == run_dir.resolve()
        assert any(run_dir.glob("events.out.tfevents.*"))
        assert Path(checkpoint).resolve() == (run_dir / f"{script.module.__name__}.pt").resolve()


def test_a_hack_that_changes_args_in_the_loop_is_not_saved_so_a_resumed_run_starts_from_the_flag(script, in_tmp,
                                                                                                 monkeypatch):
    """Run's docstring and the exercises page: the checkpoint keeps the flags as the loop started. A hack
    that decays args.ent_coef in the loop leaves the flag's value in the checkpoint, so --resume starts
    from the flag, not from the decayed value."""
    ppo_update = script.module.ppo_update

    def decaying_ent_coef(args, *rest):  # a hack whose schedule lives in args
        args.ent_coef *= 0.5
        return ppo_update(args, *rest)

    monkeypatch.setattr(script.module, "ppo_update", decaying_ent_coef)
    run_dir = script.module.train(script.module.parse_args(script.short + ["--ent-coef", "0.01"]))
    checkpoint = f"{run_dir}/{script.module.__name__}.pt"
    assert torch.load(checkpoint)["args"]["ent_coef"] == 0.01
    assert script.module.parse_args(["--resume", checkpoint, "--total-timesteps", "2048"]).ent_coef == 0.01
