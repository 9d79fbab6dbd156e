"""The exercises' worked answers (course/answers/*.patch, see course/exercises.md): each still
applies to today's script, and the patched script runs and shows what the exercise asks for."""
import re
import shutil
import subprocess

import numpy as np
import pytest

from conftest import REPO, read_scalars, run_dirs, run_script

ANSWERS = REPO / "course" / "answers"


def train_patched(answer, tmp_path, *argv):
    """Apply the answer to a copy of its script, train briefly, and return the run's scalars."""
    patch = ANSWERS / f"{answer}.patch"
    script = re.search(r"^\+\+\+ b/(\S+)$", patch.read_text(), re.M).group(1)
    shutil.copy(REPO / script, tmp_path / script)
    proc = subprocess.run(["git", "apply", str(patch)], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, f"{patch.name} no longer applies to {script}; redo it:\n{proc.stderr}"
    run_script(tmp_path / script, *argv, cwd=tmp_path)
    (run_dir,) = run_dirs(tmp_path)
    return {tag: np.array([v for _, v in events]) for tag, events in read_scalars(run_dir).items()}


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
