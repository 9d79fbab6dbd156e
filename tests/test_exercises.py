"""The exercises' worked answers (course/answers/*.patch, see course/exercises.md): each still
applies to today's script, and the patched script runs and shows what the exercise asks for. The
curiosity answer's networks, modules of the Agent, are also saved and restored by --resume."""
import re
import shutil
import subprocess
import time

import numpy as np
import pytest
import torch

from conftest import REPO, read_scalars, run_dirs, run_script

ANSWERS = REPO / "course" / "answers"


def patched_copy(answer, folder):
    """The answer applied to a copy of its script in `folder`; returns the copy's path."""
    patch = ANSWERS / f"{answer}.patch"
    script = re.search(r"^\+\+\+ b/(\S+)$", patch.read_text(), re.M).group(1)
    folder.mkdir(exist_ok=True)
    shutil.copy(REPO / script, folder / script)
    proc = subprocess.run(["git", "apply", str(patch)], cwd=folder, capture_output=True, text=True)
    assert proc.returncode == 0, f"{patch.name} no longer applies to {script}; redo it:\n{proc.stderr}"
    return folder / script


def scalars_of(run_dir):
    return {tag: np.array([v for _, v in events]) for tag, events in read_scalars(run_dir).items()}


def train_patched(answer, tmp_path, *argv):
    """Apply the answer to a copy of its script, train briefly, and return the run's scalars."""
    script = patched_copy(answer, tmp_path)
    run_script(script, *argv, cwd=tmp_path)
    (run_dir,) = run_dirs(tmp_path)
    return scalars_of(run_dir)


def test_every_answer_is_tested_and_linked():
    answers = sorted(p.stem for p in ANSWERS.glob("*.patch"))
    page = (REPO / "course" / "exercises.md").read_text()
    assert len(answers) == 5 and all(f"answers/{a}.patch" in page for a in answers)
    tests = open(__file__).read()
    assert all(f'"{a}"' in tests for a in answers)


def test_grad_norm_per_layer(tmp_path):
    scalars = train_patched("1-grad-norm-per-layer", tmp_path, "--total-timesteps", "2048")
    layers = [tag for tag in scalars if tag.startswith("grad_norm/")]
    assert sorted(layers) == [f"grad_norm/{net}.{i}" for net in ("actor", "critic") for i in (0, 2, 4)]
    # the layers' norms make up the global one: |g|^2 = sum over layers of |g_layer|^2
    total = np.sqrt(sum(scalars[tag] ** 2 for tag in layers))
    np.testing.assert_allclose(total, scalars["diagnostics/grad_norm"], rtol=1e-4)


def test_kl_penalty(tmp_path):
    scalars = train_patched("2-kl-penalty", tmp_path, "--total-timesteps", "10240", "--learning-rate", "3e-3",
                            "--update-epochs", "10", "--kl-target", "0.01")
    beta, kl = scalars["losses/kl_beta"], scalars["losses/approx_kl"]
    # after each update, beta halves when KL < target / 1.5 and doubles when KL > 1.5 target
    expected = np.cumprod(np.where(kl < 0.01 / 1.5, 0.5, np.where(kl > 0.015, 2.0, 1.0)))
    np.testing.assert_allclose(beta, expected)
    assert (beta[1:] > beta[:-1]).any() and (beta[1:] < beta[:-1]).any()  # it went both ways


def test_state_dependent_std(tmp_path):
    scalars = train_patched("3-state-dependent-std", tmp_path, "--env-id", "Pendulum-v1", "--total-timesteps", "2048",
                            "--num-steps", "512", "--num-minibatches", "4", "--update-epochs", "2")
    assert scalars["charts/std_mean"][0] == pytest.approx(1.0, abs=0.1)  # std 1 at the start, as before
    assert (scalars["charts/std_spread"] > 0).all()  # a state-free std would be the same in every state


def test_rnd_curiosity(tmp_path):
    scalars = train_patched("4-rnd-curiosity", tmp_path, "--total-timesteps", "10240")
    assert np.isfinite(scalars["charts/novelty"]).all()
    # the predictor learns the states it sees: the familiar ones stop being novel
    assert scalars["losses/rnd_loss"][-1] < 0.5 * scalars["losses/rnd_loss"][0]
    assert scalars["charts/novelty"][-1] < scalars["charts/novelty"][0]


def test_warmup_cosine_schedule(tmp_path):
    scalars = train_patched("5-warmup-cosine-schedule", tmp_path, "--total-timesteps", "10240",
                            "--learning-rate", "1e-3")
    lr = scalars["charts/learning_rate"]  # 20 iterations: 2 of warm-up, then the cosine
    np.testing.assert_allclose(lr[:2], [5e-4, 1e-3], rtol=1e-6)
    assert (np.diff(lr[1:]) < 0).all() and lr[-1] == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(lr[10], 1e-3 * 0.5 * (1 + np.cos(np.pi * 9 / 18)), rtol=1e-6)


def test_rnd_predictor_is_restored_by_resume(tmp_path):
    """A run of the curiosity answer saved at 1024 steps and resumed to 2048 ends as one run
    straight to 2048 does: the same novelty at every step, the same predictor. A predictor that
    --resume did not restore would start the second half from its initial weights: another novelty
    from step 1280 on, and another predictor at the end."""
    script = patched_copy("4-rnd-curiosity", tmp_path)
    argv = ["--num-envs", "4", "--num-steps", "64", "--anneal-lr", "false", "--save-model"]  # 256 steps a rollout
    reference, stopped = tmp_path / "reference", tmp_path / "stopped"
    for folder in (reference, stopped):
        folder.mkdir()
    run_script(script, *argv, "--total-timesteps", "2048", cwd=reference)
    run_script(script, *argv, "--total-timesteps", "1024", cwd=stopped)
    (run_dir,) = run_dirs(stopped)
    first = torch.load(run_dir / "ppo.pt", weights_only=True)["model"]  # before the resumed run overwrites it
    time.sleep(1.0 - time.time() % 1.0 + 0.05)  # TensorBoard orders event files by the second in their names
    run_script(script, "--resume", str(run_dir / "ppo.pt"), "--total-timesteps", "2048", cwd=stopped)

    expected, resumed = scalars_of(run_dirs(reference)[0]), scalars_of(run_dir)
    for tag in ("charts/novelty", "losses/rnd_loss"):
        assert len(expected[tag]) == 8, tag
        np.testing.assert_array_equal(resumed[tag], expected[tag], err_msg=f"{tag} at steps 256, 512, ..., 2048")
    expected = torch.load(run_dirs(reference)[0] / "ppo.pt", weights_only=True)["model"]
    resumed = torch.load(run_dir / "ppo.pt", weights_only=True)["model"]
    predictor = [key for key in first if key.startswith("rnd_predictor.")]
    assert predictor, f"the checkpoint holds no RND predictor, only {sorted(first)}"
    assert expected.keys() == resumed.keys() == first.keys()
    for key in predictor:
        assert torch.equal(resumed[key], expected[key]), key
        assert not torch.equal(resumed[key], first[key]), key  # the resumed run trained it further
    for key in first:
        if key.startswith("rnd_target."):
            assert torch.equal(resumed[key], first[key]), key  # frozen
