"""The fault table of docs/using-the-scripts.md, walked as a user meets it: each bad input and fault, in each of the five
scripts it applies to, run as a process of its own. What it prints (one line, no traceback), its
exit code, and what it keeps. Rows whose provoking needs a hook inside the process (a signal in an
update, a NaN from the env or the loss, a crash) are tested in test_scripts.py and test_resume.py;
the Godot game's own faults in test_ppo_godot.py. test_readme_fault_table_names_real_tests keeps
the table's references true."""
import os
import pickle
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import ppo_godot
import as_a_process
from conftest import (CHASE, GODOT, GODOT_LSTM, GYM_SCRIPTS, REPO, as_from_a_terminal, assert_one_line_error,
                      free_port, game_pids, needs_godot, run_dirs, run_script)
from interrupting import PLACES
from test_ppo_godot import assert_whole_onnx
from scratch_reference import SOLUTIONS, complete

TRAINING = ["ppo.py", "ppo_continuous_action.py", "ppo_godot.py", "ppo_lstm.py"]
# ppo_godot_bc.py's and ppo_godot_camera.py's plumbing is ppo_godot.py's (tests/test_shared_code.py); their checkpoints and
# help checked here too
WITH_SIBLINGS = TRAINING + ["ppo_godot_bc.py", "ppo_godot_camera.py"]
SHORT = {  # a run of a few seconds
    "ppo.py": ["--total-timesteps", "1024", "--num-steps", "64"],
    "ppo_continuous_action.py": ["--env-id", "Pendulum-v1", "--total-timesteps", "1024", "--num-steps", "128",
                                 "--num-minibatches", "4", "--update-epochs", "2"],
    "ppo_godot.py": ["--num-steps", "16", "--total-timesteps", "1024"],
    "ppo_lstm.py": ["--total-timesteps", "1024", "--num-envs", "4", "--num-steps", "64"],
}


def game_argv(script):
    """ppo_godot.py plays the real Chase game; the others need nothing."""
    if script != "ppo_godot.py":
        return []
    needs_godot()
    return ["--env-path", CHASE["discrete"], "--port", str(free_port())]


# ------------------------------------------------------------------------------------------------
# Bad input: one line, exit 2, before anything slow
# ------------------------------------------------------------------------------------------------
BAD_INPUT = {  # fault: {script: (argv, what the line says)}
    "flag value not understood": {s: (["--anneal-lr", "maybe"], "--anneal-lr") for s in TRAINING},
    "number out of range": {s: (["--num-steps", "-5"], "--num-steps must be positive") for s in TRAINING},
    "no game process": {"ppo_godot.py": (["--n-parallel", "0"], "--n-parallel must be positive")},
    "unknown env": {
        "ppo.py": (["--env-id", "NoSuchEnv-v0"], "NoSuchEnv-v0"),
        "ppo_continuous_action.py": (["--env-id", "NoSuchEnv-v0"], "NoSuchEnv-v0"),
        "ppo_godot.py": (["--env-path", "README.md"], "is not an executable file"),
        "ppo_lstm.py": (["--env-id", "NoSuchEnv-v0"], "NoSuchEnv-v0"),
    },
    "env module that does not import": {
        s: (["--env-id", "no_such_module:Env-v0"], "no_such_module")
        for s in ["ppo.py", "ppo_continuous_action.py", "ppo_lstm.py"]},
    "action space of the other script": {
        "ppo.py": (["--env-id", "Pendulum-v1"], "needs a Discrete action space"),
        "ppo_continuous_action.py": (["--env-id", "CartPole-v1"], "needs a Box action space"),
        "ppo_lstm.py": (["--env-id", "Pendulum-v1"], "needs a Discrete action space"),
    },
    "batch that does not split into minibatches": {
        "ppo.py": (["--num-minibatches", "3"], "--num-minibatches"),
        "ppo_continuous_action.py": (["--num-minibatches", "3"], "--num-minibatches"),
        "ppo_godot.py": (["--num-minibatches", "5"], "does not divide into --num-minibatches 5"),
        "ppo_lstm.py": (["--num-minibatches", "3"], "each minibatch takes whole env sequences"),
    },
    "minibatches of one row": {
        "ppo.py": (["--num-envs", "1", "--num-steps", "8", "--num-minibatches", "8"], "minibatches of 1 row"),
        "ppo_continuous_action.py": (["--num-envs", "1", "--num-steps", "8", "--num-minibatches", "8"],
                                     "minibatches of 1 row"),
        "ppo_godot.py": (["--num-steps", "1", "--num-minibatches", "16"], "minibatches of 1 row"),
    },
    # ppo_lstm.py: a minibatch of whole sequences of 2 steps or more never has 1 row; 1-step sequences are refused
    "sequences of one step": {"ppo_lstm.py": (["--num-steps", "1"], "sequences of at least 2 steps")},
    "--cuda without a GPU": {s: (["--cuda"], "sees no CUDA GPU") for s in TRAINING},
    "export without a path": {"ppo_godot.py": (["--export-checkpoint", "x.pt"], "--gdscript-export-path: give one")},
    "export to a missing folder": {"ppo_godot.py": (["--onnx-export-path", "no/such/dir/m.onnx"],
                                                    "its folder does not exist")},
    "GDScript export to a missing folder": {"ppo_godot.py": (["--gdscript-export-path", "no/such/dir/npc.gd"],
                                                             "--gdscript-export-path 'no/such/dir/npc.gd': its folder")},
    "checkpoints at a negative interval": {s: (["--checkpoint-minutes", "-1"], "--checkpoint-minutes must be 0")
                                           for s in TRAINING},
    "checkpoints at no interval": {s: (["--checkpoint-minutes", "nan"], "--checkpoint-minutes must be 0")
                                   for s in TRAINING},
    "a game that never runs": {"ppo_godot.py": (["--speedup", "0"], "--speedup must be positive")},
    "a negative frame rate": {"ppo_godot.py": (["--framerate", "-1"], "--framerate must be 0 (real time) or more")},
    "several games from the editor": {"ppo_godot.py": (["--n-parallel", "2"], "needs --env-path: the editor runs one")},
    "a game speed the editor never gets": {"ppo_godot.py": (["--speedup", "8"], "--speedup needs --env-path: a game "
                                                            "played from the editor keeps its Sync node's speed_up")},
    "an action repeat the editor never gets": {"ppo_godot_lstm.py": (["--action-repeat", "4"],
                                                                     "--action-repeat needs --env-path")},
    "godot-rl's spelling of a flag": {"ppo_godot.py": (["--env_path", "game.x86_64"],
                                                       "--env_path is godot-rl's spelling; here it is --env-path")},
}
BAD_INPUT_CASES = [(fault, script) for fault, by_script in BAD_INPUT.items() for script in by_script]


@pytest.mark.parametrize("fault, script", BAD_INPUT_CASES, ids=[f"{f}-{s}" for f, s in BAD_INPUT_CASES])
def test_bad_input(fault, script, tmp_path):
    if fault == "--cuda without a GPU" and torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    argv, message = BAD_INPUT[fault][script]
    needs_game = script == "ppo_godot.py" and fault in ("batch that does not split into minibatches",
                                                        "minibatches of one row")  # known once the game is up
    proc = run_script(script, *(game_argv(script) if needs_game else []), *argv, cwd=tmp_path, check=False)
    assert_one_line_error(proc, message)
    assert not (tmp_path / "runs").exists()  # bad input leaves no empty run folder behind


# ------------------------------------------------------------------------------------------------
# Checkpoints given to --eval-checkpoint and --resume
# ------------------------------------------------------------------------------------------------
FINISHED = {}


@pytest.fixture
def finished_run(script, tmp_path_factory):
    """The checkpoint of a short finished run of `script` (one per script, made once)."""
    if script not in FINISHED:
        cwd = tmp_path_factory.mktemp(script.split(".")[0])
        run_script(script, *game_argv(script), *SHORT[script], "--save-model", cwd=cwd)
        (run_dir,) = run_dirs(cwd)
        FINISHED[script] = run_dir / f"{script[:-3]}.pt"
    return FINISHED[script]


def other_script(script):
    return WITH_SIBLINGS[(WITH_SIBLINGS.index(script) + 1) % len(WITH_SIBLINGS)]


CHECKPOINT_FAULTS = {  # fault: (make the file in a folder, for a script; what the line says)
    "no such file": (lambda folder, script: folder / "missing.pt", "no such checkpoint"),
    "a file that is not a checkpoint": (
        lambda folder, script: write(folder / "notes.pt", b"these are my notes"), "is not a checkpoint: give the .pt"),
    "a checkpoint that holds what weights_only refuses": (
        lambda folder, script: save(folder / "hacked.pt", {"script": script, "args": {"data": Path("x")}}),
        "cannot be read as a checkpoint of"),
    "an ONNX export": (lambda folder, script: write(folder / "policy.onnx", b"\x08\x07\x12\x07pytorch"),
                       "is not a checkpoint: give the .pt file that a training run of"),
    "a checkpoint of another script": (
        lambda folder, script: save(folder / "other.pt", {"script": other_script(script), "model": {},
                                                          "args": {}}),
        "was saved by"),
    "a checkpoint from before checkpoints named their script": (
        lambda folder, script: save(folder / "old.pt", {"model": {}, "args": {}}), "or one from before"),
}


def write(path, data):
    path.write_bytes(data)
    return path


def save(path, checkpoint):
    torch.save(checkpoint, path)
    return path


@pytest.mark.parametrize("flag", ["--eval-checkpoint", "--resume"])
@pytest.mark.parametrize("fault", CHECKPOINT_FAULTS)
@pytest.mark.parametrize("script", WITH_SIBLINGS)
def test_bad_checkpoint(script, fault, flag, tmp_path):
    make, message = CHECKPOINT_FAULTS[fault]
    path = make(tmp_path, script)
    proc = run_script(script, flag, str(path), cwd=tmp_path, check=False)
    assert_one_line_error(proc, message)
    assert "weights_only" not in proc.stderr  # torch's advice, wrong for a file that is no checkpoint
    assert ("not an ONNX export" in proc.stderr) == path.name.endswith(".onnx")


EXPORT_FAULTS = {**CHECKPOINT_FAULTS, "a checkpoint from before checkpoints held the game's layouts": (
    lambda folder, script: save(folder / "old.pt", {"script": script, "model": {}, "args": {}}),
    "predates checkpoints that record the game's layout")}


@pytest.mark.parametrize("export", ["--onnx-export-path", "--gdscript-export-path"])
@pytest.mark.parametrize("fault", EXPORT_FAULTS)
def test_bad_checkpoint_to_export(fault, export, tmp_path):
    make, message = EXPORT_FAULTS[fault]
    proc = run_script("ppo_godot.py", "--export-checkpoint", str(make(tmp_path, "ppo_godot.py")),
                      export, "model", cwd=tmp_path, check=False)
    assert_one_line_error(proc, message)
    assert not list(tmp_path.glob("model*"))


@pytest.mark.parametrize("export", ["--onnx-export-path", "--gdscript-export-path"])
def test_a_checkpoint_of_the_one_policy_script_is_not_exported_as_several_policies(export, tmp_path):
    path = REPO / "tests" / "checkpoints" / "ppo_godot_153f0a8_chase_discrete.pt"
    proc = run_script("ppo_godot_multi_policy.py", "--export-checkpoint", str(path), export, "model", cwd=tmp_path,
                      check=False)
    assert_one_line_error(proc, "was saved by ppo_godot.py from a game of one policy: resume, evaluate or export it")
    assert not list(tmp_path.glob("model*"))


@pytest.mark.parametrize("script", TRAINING)
def test_resume_takes_only_its_own_flags(script, tmp_path):
    proc = run_script(script, "--resume", "any.pt", "--seed", "2", cwd=tmp_path, check=False)
    assert_one_line_error(proc, "--resume continues a run with the flags it started with")


@pytest.mark.parametrize("script", TRAINING)
def test_resume_of_a_finished_run_asks_for_more_timesteps(script, finished_run, tmp_path):
    proc = run_script(script, "--resume", str(finished_run), cwd=tmp_path, check=False)
    assert_one_line_error(proc, "give a larger --total-timesteps")


@pytest.mark.parametrize("script", TRAINING)
def test_a_checkpoint_saved_inside_an_update_is_not_resumed(script, finished_run, tmp_path):
    checkpoint = torch.load(finished_run)
    checkpoint["resume"] = pickle.dumps(None)  # what a stop inside an update saves
    path = save(tmp_path / "inside_an_update.pt", checkpoint)
    proc = run_script(script, "--resume", str(path), "--total-timesteps", "4096", cwd=tmp_path, check=False)
    assert_one_line_error(proc, "holds weights but no state to resume")


@pytest.mark.parametrize("flag", ["--eval-checkpoint", "--resume"])
@pytest.mark.parametrize("script", TRAINING)
def test_weights_that_do_not_fit_the_agent_are_named(script, finished_run, flag, tmp_path):
    checkpoint = torch.load(finished_run)
    checkpoint["model"]["rnd_predictor.weight"] = torch.zeros(2, 2)  # saved by an Agent a hack changed since
    path = save(tmp_path / "hacked.pt", checkpoint)
    argv = [*game_argv(script), flag, str(path)] + (["--total-timesteps", "100000"] if flag == "--resume" else [])
    proc = run_script(script, *argv, cwd=tmp_path, check=False)
    assert_one_line_error(proc, "its weights do not fit this Agent")
    assert "rnd_predictor.weight" in proc.stderr


def test_state_kept_outside_state_dict_is_named(in_tmp, monkeypatch, capsys):
    """A hack that keeps a tensor as a plain attribute of the agent is told its state is not saved."""
    script = GYM_SCRIPTS[0]
    original_init = script.module.Agent.__init__

    def with_a_plain_tensor(self, *args):
        original_init(self, *args)
        self.visits = torch.zeros(4)  # neither a module, a parameter nor a registered buffer

    monkeypatch.setattr(script.module.Agent, "__init__", with_a_plain_tensor)
    run_dir = script.module.train(script.module.parse_args(script.short + ["--save-model"]))
    assert "Not saved: Agent.visits" in capsys.readouterr().out
    checkpoint = f"{run_dir}/{script.module.__name__}.pt"
    script.module.train(script.module.parse_args(["--resume", checkpoint, "--total-timesteps", "2048"]))
    assert "resume: Agent.visits were not saved: they start anew" in capsys.readouterr().out


# ------------------------------------------------------------------------------------------------
# The machine: a log folder that cannot be made, a disk that fills up
# ------------------------------------------------------------------------------------------------
def completed_skeleton(tmp_path, solutions=None):
    """The exercise with every TODO done (with `solutions` instead, where given)."""
    path = tmp_path / "ppo_scratch_skeleton.py"
    path.write_text(complete({**SOLUTIONS, **(solutions or {})}))
    return path


@pytest.mark.parametrize("script", TRAINING + ["ppo_scratch_skeleton.py"])
def test_runs_folder_that_cannot_be_made(script, tmp_path):
    (tmp_path / "runs").write_text("a file where the folder should be")
    argv = [] if script == "ppo_scratch_skeleton.py" else [*game_argv(script), *SHORT[script]]
    proc = run_script(script, *argv, cwd=tmp_path, check=False)
    if script == "ppo_scratch_skeleton.py":  # the exercise exits 1, as for a TODO not done
        assert_one_line_error(proc, "Not a directory", code=1)
    else:
        assert_one_line_error(proc, "cannot make the log folder")


@pytest.mark.parametrize("script", TRAINING)
def test_disk_full(script, tmp_path):
    argv = [*game_argv(script), *SHORT[script], "--total-timesteps", "200000", "--save-model"]
    proc = as_a_process.run(REPO / "tests" / "full_disk.py", [REPO / script, *argv], cwd=tmp_path, timeout=300)
    assert_one_line_error(proc, "failed (File too large)")
    (run_dir,) = run_dirs(tmp_path)
    assert any(run_dir.glob("events.out.tfevents.*"))  # the logs up to the fault stay
    assert not any(run_dir.glob("*.tmp"))  # a checkpoint that could not be written leaves nothing half-done


# ------------------------------------------------------------------------------------------------
# Ctrl-C again while the run saves, exports and closes
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("script", TRAINING + ["ppo_godot_multi_policy.py"])
def test_ctrl_c_again_while_saving_exporting_and_closing_waits_for_them(script, tmp_path):
    """tests/interrupting.py presses Ctrl-C once inside the first update, then twice as each checkpoint
    write, ONNX export and closing of the writer begins: the second Ctrl-C lands inside the save every
    time. The run stops at the first boundary and keeps all of it: exit 130, no traceback."""
    port = free_port()
    argv = {"ppo_godot.py": ["--env-path", CHASE["discrete"], "--num-steps", "16"],
            "ppo_godot_multi_policy.py": ["--env-path", str(REPO / "godot" / "chase" / "chase_tag.x86_64"),
                                          "--num-steps", "16"]}.get(script, SHORT.get(script))
    if "godot" in script:
        needs_godot()
        argv += ["--port", str(port), "--onnx-export-path", "policy.onnx"]
    proc = as_a_process.run(REPO / "tests" / "interrupting.py", [REPO / script, *argv], cwd=tmp_path, timeout=300)
    assert proc.returncode == 130 and "Traceback" not in proc.stderr, proc.stderr
    assert "interrupted. " in proc.stdout
    checkpoint = torch.load(run_dirs(tmp_path)[0] / f"{Path(script).stem}.pt", weights_only=False)
    resume = pickle.loads(checkpoint["resume"])
    assert resume["iteration"] == 1 and resume["global_step"] == checkpoint["args"]["batch_size"]
    if "godot" in script:
        exported = sorted(tmp_path.glob("policy*.onnx"))  # ppo_godot_multi_policy.py: a file per policy
        assert len(exported) == (2 if "multi" in script else 1) and not game_pids(port)
        for onnx_file in exported:
            assert_whole_onnx(onnx_file)
    else:  # stopped between two updates by the first Ctrl-C: the episodes under way are kept too
        assert resume["envs"].get("sub_envs") is not None


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("script", ["ppo_scratch_skeleton.py", "ppo.py", "ppo_continuous_action.py", "ppo_lstm.py"])
def test_a_ctrl_c_inside_a_library_is_raised_nowhere_and_the_run_ends(script, place, tmp_path):
    """The first Ctrl-C, pressed as the writer, the env or the optimizer is called (tests/interrupting.py),
    only asks the run to stop after the iteration under way. One raised inside the TensorBoard writer
    left the skeleton's writer.close() waiting over a minute on the writer's thread (once in 26 runs
    stopped by hand at random moments): a hang fails this test at its timeout, the process killed."""
    if script == "ppo_scratch_skeleton.py":
        path, argv = completed_skeleton(tmp_path), []
    else:
        path, argv = REPO / script, [*SHORT[script], "--total-timesteps", "10000000"]
    proc = as_a_process.run(REPO / "tests" / "interrupting.py", ["--once-inside", place, path, *argv],
                            cwd=tmp_path, timeout=120)
    assert proc.returncode == 130 and "Traceback" not in proc.stderr, proc.stderr
    assert "KeyboardInterrupt inside" not in proc.stderr
    assert (run_dirs(tmp_path)[0] / f"{Path(script).stem}.pt").exists()


# ------------------------------------------------------------------------------------------------
# The exercise: a TODO done wrong, Ctrl-C
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("todo8, message", [("return pg_loss * float('nan')", "check TODOs 5 to 8"),
                                            ("return pg_loss - ent_coef * entropy + v_loss * vf_coef",
                                             "TODOs 6-8: the loss has shape")])
def test_skeleton_bad_loss_names_the_todos(todo8, message, tmp_path):
    path = completed_skeleton(tmp_path, {8: todo8})
    proc = subprocess.run([sys.executable, str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert_one_line_error(proc, message, code=1)


def test_skeleton_ctrl_c_keeps_the_weights(tmp_path):
    path = completed_skeleton(tmp_path)
    proc = subprocess.Popen([sys.executable, str(path)], cwd=tmp_path, preexec_fn=as_from_a_terminal,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    for line in proc.stdout:
        if line.startswith("global_step=") and int(line.split(",")[0].split("=")[1]) > 2000:
            break
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in stderr, stderr
    assert "the weights are saved to" in stdout
    (run_dir,) = run_dirs(tmp_path)
    assert (run_dir / "ppo_scratch_skeleton.pt").exists()


def test_a_process_a_test_will_ctrl_c_takes_sigint_though_its_shell_ignored_it():
    """as_from_a_terminal: a CI runner's shell starts background jobs with SIGINT ignored, which a child inherits;
    started with it, a Python raises KeyboardInterrupt at SIGINT, as one started from a terminal does."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # this process as such a job (conftest puts its handler back)
    probe = [sys.executable, "-c",
             "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"]
    assert subprocess.run(probe, capture_output=True, text=True, check=True).stdout == "False\n"  # as inherited
    assert subprocess.run(probe, preexec_fn=as_from_a_terminal, capture_output=True, text=True,
                          check=True).stdout == "True\n"


# ------------------------------------------------------------------------------------------------
# The README's table names the tests that walk it
# ------------------------------------------------------------------------------------------------
def test_readme_fault_table_names_real_tests():
    page = (REPO / "docs" / "using-the-scripts.md").read_text()
    table = page[page.index("## When things go wrong"):]
    table = table[:table.find("\n## ", 1) % (len(table) + 1)]
    named = set(re.findall(r"`(test_\w+)`", table))
    assert len(named) >= 15
    defined = set()
    for test_file in Path(__file__).parent.glob("test_*.py"):
        defined |= set(re.findall(r"^def (test_\w+)", test_file.read_text(), flags=re.M))
    assert named <= defined, f"the fault table names tests that do not exist: {sorted(named - defined)}"


# ------------------------------------------------------------------------------------------------
# Flags a user can find: defaults in --help, godot-rl's spellings, a budget below one rollout
# ------------------------------------------------------------------------------------------------
def options_in_help(script, tmp_path):
    """{flag: its help text} of `script --help`."""
    proc = run_script(script, "--help", cwd=tmp_path)
    options = re.split(r"\n  (?=-)", proc.stdout.split("options:", 1)[1])
    return {option.split()[0].rstrip(","): " ".join(option.split()) for option in options if option.strip()}


@pytest.mark.parametrize("script", WITH_SIBLINGS + ["ppo_scratch_skeleton.py"])
def test_help_shows_every_default(script, tmp_path):
    options = options_in_help(script, tmp_path)
    assert len(options) > 20 and "--total-timesteps" in options
    missing = [flag for flag, text in options.items() if flag != "-h" and "(default:" not in text]
    assert not missing, missing


def test_godot_rl_spellings_are_named_with_ours(tmp_path, capsys):
    ours = options_in_help("ppo_godot.py", tmp_path)
    for theirs, here in ppo_godot.GODOT_RL_SPELLINGS.items():
        assert here.split()[0].rstrip(",") in ours, here  # the flag named is one ppo_godot.py has
        with pytest.raises(SystemExit) as stop:
            ppo_godot.parse_args([theirs, "x"])
        assert stop.value.code == 2
        assert capsys.readouterr().err == f"ppo_godot.py: error: {theirs} is godot-rl's spelling; here it is {here}\n"
    with pytest.raises(SystemExit):  # several at once: one line names them all
        ppo_godot.parse_args(["--env_path", "game.x86_64", "--viz", "--timesteps=1000"])
    assert capsys.readouterr().err == ("ppo_godot.py: error: --env_path is godot-rl's spelling; here it is --env-path; "
                                       "--viz is godot-rl's spelling; here it is --show-window; --timesteps is "
                                       "godot-rl's spelling; here it is --total-timesteps\n")


@pytest.mark.parametrize("given, written", [("model", "model.onnx"), ("model.bin", "model.onnx"),
                                            ("model.onnx", "model.onnx")])
def test_an_onnx_export_path_gets_the_onnx_suffix_as_godot_rl_gives_it(given, written, tmp_path):
    args = ppo_godot.parse_args(["--onnx-export-path", str(tmp_path / given)])
    assert args.onnx_export_path == str(tmp_path / written)


@pytest.mark.parametrize("total, says", [
    (100, "is less than one rollout ({batch}): 1 rollout runs, 256 steps"),
    (700, "is not a whole number of rollouts ({batch}): 2 rollouts run, 512 steps")])
def test_a_budget_of_no_whole_rollouts_says_what_runs(script, total, says, in_tmp, capsys):
    script.module.train(script.module.parse_args(script.short + ["--total-timesteps", str(total)]))
    out = capsys.readouterr().out.splitlines()
    batch = "4 agents x --num-steps 64 = 256" if script in (GODOT, GODOT_LSTM) else "--num-envs x --num-steps = 256"
    assert out[0] == f"{script.file}: note: --total-timesteps {total} {says.format(batch=batch)}"
    assert f"global_step={says.split()[-2]} " in out[-2]


def test_whole_rollouts_need_no_note(script, in_tmp, capsys):
    script.module.train(script.module.parse_args(script.short))
    assert "note:" not in capsys.readouterr().out


def test_a_checkpoint_write_and_a_resume_say_so(script, in_tmp, capsys):
    script.module.train(script.module.parse_args(script.short + ["--checkpoint-minutes", "0"]))
    progress = [line for line in capsys.readouterr().out.splitlines() if line.startswith("[")]
    assert len(progress) == 4 and all(line.endswith("s (checkpoint saved)") for line in progress), progress
    checkpoint = run_dirs(in_tmp)[0] / f"{script.module.__name__}.pt"
    script.module.train(script.module.parse_args(["--resume", str(checkpoint), "--total-timesteps", "1600"]))
    out = capsys.readouterr().out.splitlines()
    assert ("resume: the run goes on from global_step=1024 (iteration 4) to global_step=1536, the whole rollouts "
            "of 256 steps in --total-timesteps 1600") in out
    assert not any("checkpoint saved" in line for line in out)  # --checkpoint-minutes is the command's: 5