"""--track: a run synced to Weights & Biases as CleanRL users know it, with the real wandb package in
offline mode (this machine has no network). The offline run's file is read back record by record: the
run's name and id, its config (the flags), and every scalar TensorBoard got."""
import importlib.util
import json
import os
import shutil
import struct
import subprocess
import sys

import pytest

import ppo
import ppo_continuous_action
import ppo_godot
import ppo_lstm
from conftest import (CHASE, REPO, free_port, godot_user_folder, needs_godot, needs_part, read_scalars,
                      run_dirs)


@pytest.fixture(scope="module")
def wandb_records():
    """wandb's protobuf Record, or a skip (a failure under CI, whose .ci/run installs wandb)."""
    needs_part("wandb", importlib.util.find_spec("wandb") is None and "needs wandb: pip install -r requirements-track.txt")
    from wandb.proto import wandb_internal_pb2
    return wandb_internal_pb2.Record


def records(path, record_class):
    """The records of a .wandb file: a 7-byte header, then 32 KiB blocks of chunks, each with a 7-byte
    header (checksum, length, type: 1 whole record, 2 first, 3 middle, 4 last part of one)."""
    data, pos, parts = path.read_bytes(), 7, b""
    while pos + 7 <= len(data):
        if 32768 - pos % 32768 < 7:  # a block's tail too short for a header is padding
            pos += 32768 - pos % 32768
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        chunk, pos = data[pos + 7:pos + 7 + length], pos + 7 + length
        parts = chunk if kind in (1, 2) else parts + chunk
        if kind in (1, 4):
            record = record_class()
            record.ParseFromString(parts)
            yield record


def offline_runs(folder, record_class):
    """Each offline W&B run under folder/wandb, oldest first: its id, name, project, config, history and
    the files it uploads."""
    runs = []
    for run_file in sorted((folder / "wandb").glob("offline-run-*/run-*.wandb")):
        run = {"config": {}, "history": [], "files": []}
        for record in records(run_file, record_class):
            kind = record.WhichOneof("record_type")
            if kind == "run":
                run.update(id=record.run.run_id, name=record.run.display_name, project=record.run.project)
                run["config"].update({item.key: json.loads(item.value_json) for item in record.run.config.update})
            elif kind == "config":
                run["config"].update({item.key: json.loads(item.value_json) for item in record.config.update})
            elif kind == "files":
                run["files"] += [file.path for file in record.files.files]
            elif kind == "history":
                run["history"].append({item.key or "/".join(item.nested_key): json.loads(item.value_json)
                                       for item in record.history.item})
        runs.append(run)
    return runs


def start(script, *argv, cwd):
    """The script as a user runs it, offline: a fresh interpreter (wandb patches TensorBoard's writer)."""
    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_DIR": str(cwd), "WANDB_SILENT": "true"}
    return subprocess.Popen([sys.executable, str(REPO / script), *argv], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finished(proc):
    stderr = proc.communicate(timeout=300)[1]
    assert proc.returncode == 0, stderr[-3000:]


def train(script, *argv, cwd):
    finished(start(script, *argv, cwd=cwd))


def assert_synced(run, run_dir, tags):
    """W&B's history holds each tag's points as TensorBoard has them, at the same global_step (one
    point a step, as TensorBoard's own server shows them: two episodes can end on the same step)."""
    scalars = read_scalars(run_dir)
    for tag in tags:
        logged = {}
        for step, value in scalars[tag]:
            logged.setdefault(step, []).append(value)
        synced = [(row["global_step"], row[tag]) for row in run["history"] if tag in row]
        assert [step for step, _ in synced] == sorted(logged), tag
        assert all(value == pytest.approx(logged[step][-1]) for step, value in synced), tag


def test_track_syncs_scalars_flags_and_videos_and_a_resumed_run_goes_on_in_the_same_w_and_b_run(
        wandb_records, tmp_path):
    train("ppo.py", "--total-timesteps", "1024", "--num-steps", "64", "--track", "--capture-video", cwd=tmp_path)
    (run_dir,) = run_dirs(tmp_path)
    (first,) = offline_runs(tmp_path, wandb_records)
    assert first["name"] == run_dir.name and first["project"] == "single-file-ppo"
    assert first["config"]["learning_rate"] == 2.5e-4 and first["config"]["num_steps"] == 64
    assert_synced(first, run_dir, ["charts/episodic_return", "losses/value_loss", "charts/learning_rate"])
    videos = sorted(path.name for path in (tmp_path / "videos" / run_dir.name).glob("*.mp4"))
    assert len(videos) >= 2
    assert len([path for path in first["files"] if path.startswith("media/videos/")]) == len(videos)

    train("ppo.py", "--resume", str(run_dir / "ppo.pt"), "--total-timesteps", "2048", cwd=tmp_path)
    first_life, second_life = offline_runs(tmp_path, wandb_records)
    assert second_life["id"] == first_life["id"] and second_life["name"] == run_dir.name
    assert min(row["global_step"] for row in second_life["history"] if "losses/value_loss" in row) > 1024


OTHER_SCRIPTS = {"ppo_continuous_action.py": ["--env-id", "Pendulum-v1", "--total-timesteps", "512", "--num-steps",
                                              "256", "--num-minibatches", "4"],
                 "ppo_lstm.py": ["--total-timesteps", "512", "--num-steps", "64"],
                 "ppo_godot.py": ["--total-timesteps", "4096", "--num-steps", "32"]}  # time-outs: episodes


@pytest.fixture(scope="module")
def other_runs(wandb_records, tmp_path_factory):
    """{script: its folder, or the reason it did not run} of a --track run of each of OTHER_SCRIPTS, all started
    at once: wandb's TensorBoard sync waits about 10 s at the end of each run, idle."""
    folders, procs = {}, {}
    for script, argv in OTHER_SCRIPTS.items():
        if script == "ppo_godot.py" and not shutil.which("godot3-server"):
            continue  # the test skips
        folders[script] = tmp_path_factory.mktemp(script.removesuffix(".py"))
        if script == "ppo_godot.py":
            godot_user_folder().mkdir(parents=True, exist_ok=True)  # as needs_godot() does
            argv = argv + ["--env-path", CHASE["discrete"], "--port", str(free_port())]
        procs[script] = start(script, *argv, "--track", cwd=folders[script])
    return folders, procs


@pytest.mark.xdist_group("tracking_other_scripts")  # one worker, the runs of `other_runs`
@pytest.mark.parametrize("script", OTHER_SCRIPTS)
def test_track_in_the_other_scripts(wandb_records, other_runs, script):
    if script == "ppo_godot.py":
        needs_godot()
    argv = OTHER_SCRIPTS[script]
    folders, procs = other_runs
    finished(procs[script])
    tmp_path = folders[script]
    (run_dir,) = run_dirs(tmp_path)
    (run,) = offline_runs(tmp_path, wandb_records)
    assert run["name"] == run_dir.name and run["config"]["total_timesteps"] == int(argv[argv.index("--total-timesteps") + 1])
    assert_synced(run, run_dir, ["losses/policy_loss", "charts/episodic_length"])


@pytest.mark.parametrize("module", [ppo, ppo_continuous_action, ppo_lstm, ppo_godot], ids=lambda m: m.__name__)
def test_track_without_wandb_says_how_to_install_it(module, monkeypatch, capsys):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else find_spec(name, *a))
    with pytest.raises(SystemExit) as stop:
        module.parse_args(["--track"])
    assert stop.value.code == 2
    assert capsys.readouterr().err == (f"{module.__name__}.py: error: --track needs the wandb package: "
                                       f"pip install -r requirements-track.txt\n")
