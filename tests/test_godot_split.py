"""ppo_godot.py trains a game of one policy name, ppo_godot_multi_policy.py a game of several. Each
refuses the other's games and checkpoints with one line that names the right script, and each takes the
checkpoints that ppo_godot.py saved while it trained both kinds (tests/checkpoints/, saved by ppo_godot.py
at commit 153f0a8: 2 iterations of 16 agents x 16 steps on chase_discrete and on chase_tag)."""
import shutil

import pytest
import torch

from conftest import (CHASE, REPO, assert_one_line_error, game_pids, needs_godot, read_scalars, run_dirs,
                      run_script)

TAG = str(REPO / "godot" / "chase" / "chase_tag.x86_64")
SAVED_BEFORE = REPO / "tests" / "checkpoints"
MULTI = "ppo_godot_multi_policy.py"


def test_ppo_godot_refuses_a_game_of_several_policies_and_names_the_script_that_trains_it(tmp_path, port):
    needs_godot()
    proc = run_script("ppo_godot.py", "--env-path", TAG, "--port", str(port), cwd=tmp_path, check=False)
    assert_one_line_error(proc, "the game's agents name several policies ('chaser', 'runner'): ppo_godot.py "
                                "trains one; ppo_godot_multi_policy.py trains one network per policy name")
    assert not (tmp_path / "runs").exists() and not game_pids(port)


def test_a_game_of_one_policy_logs_the_same_in_both_scripts(tmp_path, port):
    """ppo_godot_multi_policy.py's loop over one policy is ppo_godot.py's update: the same scalars, step for step."""
    needs_godot()
    scalars = {}
    for script in ("ppo_godot.py", MULTI):
        (tmp_path / script).mkdir()
        run_script(script, "--env-path", CHASE["discrete"], "--port", str(port), "--num-steps", "16",
                   "--total-timesteps", "1024", cwd=tmp_path / script)
        scalars[script] = read_scalars(run_dirs(tmp_path / script)[0])
        del scalars[script]["charts/SPS"]
    assert "losses/approx_kl" in scalars[MULTI] and scalars[MULTI] == scalars["ppo_godot.py"]


CHECKPOINTS = [  # (checkpoint, the game it played, the script that owns it now, the other, the other's line)
    ("ppo_godot_153f0a8_chase_discrete.pt", CHASE["discrete"], "ppo_godot.py", MULTI,
     "was saved by ppo_godot.py from a game of one policy: resume, evaluate or export it with ppo_godot.py"),
    ("ppo_godot_153f0a8_chase_tag.pt", TAG, MULTI, "ppo_godot.py",
     "holds the policies 'chaser', 'runner' of a game of several: resume, evaluate or export it with "
     "ppo_godot_multi_policy.py"),
]


@pytest.mark.parametrize("saved, game, owner, other, line", CHECKPOINTS, ids=["one policy", "two policies"])
def test_a_checkpoint_saved_before_the_split_resumes_evaluates_and_exports_in_the_script_that_owns_its_kind(
        saved, game, owner, other, line, tmp_path, port):
    needs_godot()
    checkpoint = tmp_path / "run" / "ppo_godot.pt"  # its run's folder, where a resumed run goes on
    checkpoint.parent.mkdir()
    shutil.copy(SAVED_BEFORE / saved, checkpoint)
    game_flags = ["--env-path", game, "--port", str(port)]

    resumed = run_script(owner, "--resume", str(checkpoint), *game_flags, "--total-timesteps", "768", cwd=tmp_path)
    assert "The state at global_step=768 is saved" in resumed.stdout
    assert torch.load(checkpoint, weights_only=True)["script"] == owner  # saved again, now by its owner
    played = run_script(owner, "--eval-checkpoint", str(checkpoint), *game_flags, "--eval-episodes", "2", cwd=tmp_path)
    assert played.stdout.count("mean_return=") == (2 if owner == "ppo_godot.py" else 4)  # greedy, sampled: each policy
    exported = run_script(owner, "--export-checkpoint", str(checkpoint), "--onnx-export-path",
                          str(tmp_path / "m.onnx"), cwd=tmp_path)
    assert "exported to" in exported.stdout

    shutil.copy(SAVED_BEFORE / saved, checkpoint)
    for flags in (["--resume", str(checkpoint), "--env-path", game, "--total-timesteps", "768"],
                  ["--eval-checkpoint", str(checkpoint), "--env-path", game],
                  ["--export-checkpoint", str(checkpoint), "--onnx-export-path", str(tmp_path / "x.onnx")]):
        assert_one_line_error(run_script(other, *flags, "--port", str(port), cwd=tmp_path, check=False), line)
    assert not game_pids(port)
