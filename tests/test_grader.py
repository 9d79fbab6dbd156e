"""Grader for ppo_scratch_skeleton.py: each TODO checked on its own, each mistake named.

    python -m pytest tests/test_grader.py --solution ppo_scratch_skeleton.py

Without --solution it grades the reference completion (tests/scratch_reference.py). Every wrong
answer ends in a message that names its TODO: an exception raised inside the solution is reported
with the TODO of the function it came from (@graded), never as the grader's own traceback.
"""
import functools
import importlib.util
import re
import traceback
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.distributions.categorical import Categorical

from conftest import read_scalars
from scratch_reference import complete

GAMMA, LAMBDA = 0.99, 0.95
TODOS_OF = {"get_action_and_value": "TODO 1", "compute_gae": "TODOs 2-3", "clipped_policy_loss": "TODOs 4-5",
            "value_loss": "TODO 6", "total_loss": "TODO 7"}
USED_BY = {"collect_rollout": "TODO 1", "ppo_update": "TODOs 1 and 4-8", "train": "TODOs 1-8"}


def todo_of(frame):
    """The TODO to blame for an exception raised on this line of the solution (or of a test, on
    what the solution returned)."""
    if frame.name in TODOS_OF:
        return TODOS_OF[frame.name]
    tested = re.match(r"test_todo(\d+)(?:_(\d+))?_", frame.name)
    if tested:
        return f"TODOs {tested[1]}-{tested[2]}" if tested[2] else f"TODO {tested[1]}"
    if frame.name == "ppo_update" and "clip_grad" in (frame.line or ""):
        return "TODO 8"
    called = [todo for name, todo in TODOS_OF.items() if f"{name}(" in (frame.line or "")]
    return f"{called[0] if called else USED_BY.get(frame.name, 'TODOs 1-8')} (what it returns, used in {frame.name})"


def graded(test):
    """Turn an exception raised in the solution's code into a failure naming the TODO it came from."""
    @functools.wraps(test)
    def run(*args, **kwargs):
        try:
            return test(*args, **kwargs)
        except (AssertionError, pytest.fail.Exception):
            raise
        except Exception as error:
            if "TODO" in str(error):  # the skeleton's own messages (a TODO not done, a loss that is not one number)
                pytest.fail(str(error), pytrace=False)
            frames = traceback.extract_tb(error.__traceback__)
            own = [f for f in frames if f.filename != __file__ and "/lib/python" not in f.filename]
            where = own[-1] if own else frames[-1]
            pytest.fail(f"{todo_of(where)}: {type(error).__name__} in {where.name}, line {where.lineno} "
                        f"`{where.line}`: {error}", pytrace=False)
    return run


@pytest.fixture(scope="module")
def solution(solution_path, tmp_path_factory):
    if solution_path == "reference":
        solution_path = tmp_path_factory.mktemp("reference") / "ppo_scratch_reference.py"
        solution_path.write_text(complete())
    spec = importlib.util.spec_from_file_location(f"solution_{abs(hash(str(solution_path)))}", solution_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def gae(solution, rewards, values, terminations, truncations, next_value, gae_lambda=LAMBDA):
    column = lambda x: np.asarray(x, dtype=np.float32).reshape(-1, 1)
    advantages, _ = solution.compute_gae(column(rewards), column(values), column(terminations),
                                         column(truncations), np.float32([next_value]), GAMMA, gae_lambda)
    advantages = np.asarray(advantages).reshape(-1)
    if not advantages.any() and np.any(rewards):
        pytest.fail("TODO 3: every advantage is 0: store A_t in advantages[t] (and keep it in lastgaelam)")
    return advantages


def reference_gae(rewards, values, terminations, truncations, next_value, gae_lambda):
    advantages, last = np.zeros(len(rewards)), 0.0
    for t in reversed(range(len(rewards))):
        nextvalue = next_value if t == len(rewards) - 1 else values[t + 1]
        delta = rewards[t] + GAMMA * nextvalue * (1 - terminations[t]) - values[t]
        last = delta + GAMMA * gae_lambda * (1 - max(terminations[t], truncations[t])) * last
        advantages[t] = last
    return advantages


def random_rollout(steps=40, seed=0):
    """Rewards, values and episode ends of every kind, as one env's rollout."""
    rng = np.random.default_rng(seed)
    ends = rng.random(steps)
    return dict(rewards=rng.normal(size=steps).round(2), values=rng.normal(size=steps).round(2),
                terminations=(ends < 0.1).astype(float), truncations=((ends >= 0.1) & (ends < 0.2)).astype(float),
                next_value=0.7)


# ------------------------------------------------------------------------------------------------
# TODO 1: the policy
# ------------------------------------------------------------------------------------------------
@graded
def test_todo1_get_action_and_value(solution):
    torch.manual_seed(0)
    agent = solution.ActorCritic(4, 2)
    x = torch.randn(6, 4)
    returned = agent.get_action_and_value(x)
    assert isinstance(returned, tuple) and len(returned) == 4, (
        "TODO 1: return four things: (action, log pi(action|s), entropy, V(s))")
    action, logprob, entropy, value = returned
    probs = Categorical(logits=agent.actor(x))
    assert action.shape == (6,) and logprob.shape == (6,) and entropy.shape == (6,), (
        "TODO 1: return one action, log-prob and entropy per observation (shape (batch,)), not their mean")
    torch.testing.assert_close(logprob, probs.log_prob(action), msg="TODO 1: the log-prob must be "
                               "log pi(action|s) of the action returned: probs.log_prob(action)")
    torch.testing.assert_close(entropy, probs.entropy(), msg="TODO 1: the entropy must be probs.entropy()")
    torch.testing.assert_close(value.reshape(-1), agent.critic(x).reshape(-1),
                               msg="TODO 1: the value must be V(s) = self.critic(x)")
    given = torch.tensor([1, 0, 1, 0, 1, 0])
    returned, logprob_given, _, _ = agent.get_action_and_value(x, given)
    assert torch.equal(returned, given), "TODO 1: when an action is given, return it (do not sample)"
    torch.testing.assert_close(logprob_given, probs.log_prob(given),
                               msg="TODO 1: when an action is given, return log pi(given action|s)")
    # the starting policy is near uniform: 400 samples of one state must show both actions
    sampled, _, _, _ = agent.get_action_and_value(x[:1].repeat(400, 1))
    assert 0.3 < sampled.float().mean() < 0.7, (
        "TODO 1: a_t must sample a_t ~ pi(.|s_t) (probs.sample()), not take the most likely action")


# ------------------------------------------------------------------------------------------------
# TODOs 2 and 3: GAE
# ------------------------------------------------------------------------------------------------
@graded
def test_todo2_3_gae_worked_example(solution):
    advantages = gae(solution, [0, 0, 0, 1], [0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0], 0.0)
    expected = [0.8319, 0.8845, 0.9405, 1.0]
    assert np.allclose(advantages, expected, atol=1e-4), (
        f"TODOs 2-3: rewards [0,0,0,1], values 0, gamma 0.99, lambda 0.95 must give A = {expected}, "
        f"got {np.round(advantages, 4).tolist()}")


def first_difference(got, expected, rollout):
    """(t, what kind of step t is) of the first advantage that differs, or None."""
    wrong = np.flatnonzero(~np.isclose(got, expected, atol=1e-4))
    if not len(wrong):
        return None
    t = wrong[0]
    kind = ("a termination" if rollout["terminations"][t] else "a truncation (time limit)" if rollout["truncations"][t]
            else "no episode end")
    return t, f"at t={t} ({kind}) it should be {expected[t]:.4f}, got {got[t]:.4f}"


@graded
def test_todo2_delta_is_the_advantage_at_lambda_0(solution):
    # lambda = 0 leaves A_t = delta_t: this checks TODO 2 alone, at every kind of step
    rollout = random_rollout()
    difference = first_difference(gae(solution, **rollout, gae_lambda=0.0), reference_gae(**rollout, gae_lambda=0.0),
                                  rollout)
    if difference:
        t, where = difference
        pytest.fail(f"TODO 2: with lambda = 0, A_t = delta_t = r_t + gamma V(s_t+1) (1 - terminated_t) - V(s_t); "
                    f"{where} (r_t={rollout['rewards'][t]}, V(s_t)={rollout['values'][t]}, gamma={GAMMA})")


@graded
def test_todo3_recursion_over_a_whole_rollout(solution):
    rollout = random_rollout(seed=1)
    difference = first_difference(gae(solution, **rollout), reference_gae(**rollout, gae_lambda=LAMBDA), rollout)
    if difference:
        pytest.fail(f"TODO 3: A_t = delta_t + gamma lambda (1 - done_t) A_t+1 over a rollout with terminations and "
                    f"truncations, gamma={GAMMA}, lambda={LAMBDA}: {difference[1]} (delta_t alone is checked "
                    "with lambda = 0, by the test for TODO 2)")


# The episode ends at t=0; the next episode has A_1 = 1. V is 0 everywhere, so only the recursion
# can carry A_1 into A_0. After a time limit delta_0 still bootstraps V(s_1) = 0; the chain stops too.
@pytest.mark.parametrize("terminations, truncations, mistake", [
    ([1, 0], [0, 0], "the next episode's advantage leaked into this one. Multiply A_{t+1} by "
                     "(1 - done_t) in the A_t recursion"),
    ([0, 0], [1, 0], "the next episode's advantage leaked across a time limit (truncated). Use "
                     "done_t = dones[t], not terminations[t], in the A_t recursion"),
], ids=["termination", "time-limit"])
@graded
def test_todo3_recursion_stops_at_episode_end(solution, terminations, truncations, mistake):
    advantages = gae(solution, [1, 1], [0, 0], terminations, truncations, 0.0)
    assert advantages[0] == pytest.approx(1.0, abs=1e-5), f"TODO 3: A_0 should be 1.0, got {advantages[0]:.4f}: {mistake}"


@graded
def test_todo2_no_bootstrap_after_termination(solution):
    # Terminated at t=0. V(s_1) = 5 belongs to the next episode, whose A_1 is 0 (r=5, V=5).
    advantages = gae(solution, [1, 5], [0, 5], [1, 0], [0, 0], 0.0)
    assert advantages[0] == pytest.approx(1.0, abs=1e-5), (
        f"TODO 2: A_0 should be 1.0, got {advantages[0]:.4f}: delta_t bootstraps across a "
        "termination. Multiply gamma * V(s_{t+1}) by (1 - terminated_t)")


@graded
def test_todo2_truncation_bootstraps(solution):
    # Truncated (time limit) at t=0: the final state's value V(s_1) = 5 still counts.
    advantages = gae(solution, [1, 5], [0, 5], [0, 0], [1, 0], 0.0)
    assert advantages[0] == pytest.approx(1 + GAMMA * 5, abs=1e-4), (
        f"TODO 2: A_0 should be {1 + GAMMA * 5:.4f}, got {advantages[0]:.4f}: a truncated episode "
        "must still bootstrap V(s_{t+1}). Use (1 - terminations[t]) in delta_t, not dones[t]")


# ------------------------------------------------------------------------------------------------
# TODOs 4 and 5: the ratio and L^CLIP
# ------------------------------------------------------------------------------------------------
@graded
def test_todo4_ratio(solution):
    new, old = torch.tensor([-0.5, -1.0, -2.0]), torch.tensor([-0.7, -1.0, -1.5])
    _, ratio = solution.clipped_policy_loss(new, old, torch.ones(3), 0.2)
    expected = (new - old).exp()
    if torch.allclose(ratio, new - old):
        pytest.fail("TODO 4: you forgot the exp: r_t = exp(logp_new - logp_old), not the difference")
    if torch.allclose(ratio, (old - new).exp()):
        pytest.fail("TODO 4: the ratio's sign is flipped: r_t = exp(logp_new - logp_old)")
    torch.testing.assert_close(ratio, expected, msg="TODO 4: r_t must be exp(newlogprob - oldlogprob)")


@graded
def test_todo4_ratio_carries_the_gradient(solution):
    new = torch.tensor([-0.5, -1.0], requires_grad=True)
    pg_loss, ratio = solution.clipped_policy_loss(new, torch.tensor([-0.6, -1.0]), torch.ones(2), 0.2)
    assert isinstance(ratio, torch.Tensor) and ratio.requires_grad, (
        "TODO 4: r_t carries no gradient to log pi_theta (a .detach(), .item(), numpy or torch.no_grad()?): "
        "the policy could never learn")
    assert isinstance(pg_loss, torch.Tensor) and pg_loss.requires_grad, (
        "TODO 5: -L^CLIP carries no gradient to log pi_theta: build it from the ratio with torch operations")


# (advantage, ratio): every branch of min(r A, clip(r) A) for both signs of A
CLIP_CASES = [(1.0, 1.1), (1.0, 1.5), (1.0, 0.5), (-1.0, 0.9), (-1.0, 0.5), (-1.0, 1.5)]


@graded
def test_todo5_policy_loss_is_one_number(solution):
    pg_loss, _ = solution.clipped_policy_loss(torch.tensor([-0.5, -1.0, -2.0]), torch.tensor([-0.7, -1.0, -1.5]),
                                              torch.tensor([1.0, -1.0, 0.5]), 0.2)
    assert torch.as_tensor(pg_loss).numel() == 1, (
        "TODO 5: pg_loss must be one number, the mean over the batch: end with .mean()")


def policy_losses(solution, eps):
    """-L^CLIP of each of CLIP_CASES, as the solution computes it and as it should be."""
    got, expected, with_min, unclipped = [], [], [], []
    for advantage, ratio in CLIP_CASES:
        new, old = torch.tensor([np.log(ratio)], dtype=torch.float32), torch.zeros(1)
        pg_loss, _ = solution.clipped_policy_loss(new, old, torch.tensor([advantage]), eps)
        got.append(float(pg_loss))
        clipped = min(max(ratio, 1 - eps), 1 + eps)
        expected.append(max(-advantage * ratio, -advantage * clipped))
        with_min.append(min(-advantage * ratio, -advantage * clipped))
        unclipped.append(-advantage * ratio)
    return got, expected, with_min, unclipped


@graded
def test_todo5_clipped_objective(solution):
    got, expected, with_min, unclipped = policy_losses(solution, 0.2)
    if np.allclose(got, expected, atol=1e-5):
        return
    cases = ", ".join(f"A={a:+.0f} r={r}" for a, r in CLIP_CASES)
    if np.allclose(got, with_min, atol=1e-5):
        pytest.fail("TODO 5: uses min where -L^CLIP needs max: -min(rA, clip(r)A) = max(-rA, -clip(r)A)")
    if np.allclose(got, unclipped, atol=1e-5):
        pytest.fail("TODO 5: the loss does not clip the ratio: add clip(r_t, 1 - eps, 1 + eps) * A_t")
    if np.allclose(got, [-x for x in expected], atol=1e-5):
        pytest.fail("TODO 5: wrong sign: return -L^CLIP, since the optimizer minimises")
    pytest.fail(f"TODO 5: for {cases} with eps=0.2, -L^CLIP should be {np.round(expected, 3).tolist()}, "
                f"got {np.round(got, 3).tolist()}")


@graded
def test_todo5_uses_the_clip_coef_given(solution):
    got, expected, _, _ = policy_losses(solution, 0.1)
    if not np.allclose(got, expected, atol=1e-5) and np.allclose(got, policy_losses(solution, 0.2)[1], atol=1e-5):
        pytest.fail("TODO 5: the clip range must be the clip_coef argument, not a fixed 0.2")
    assert np.allclose(got, expected, atol=1e-5), (
        f"TODO 5: with eps=0.1, -L^CLIP should be {np.round(expected, 3).tolist()}, got {np.round(got, 3).tolist()}")


# ------------------------------------------------------------------------------------------------
# TODOs 6 and 7: value loss, entropy bonus
# ------------------------------------------------------------------------------------------------
@graded
def test_todo6_value_loss(solution):
    v_loss = solution.value_loss(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([0.0, 2.0, 5.0]))
    assert torch.as_tensor(v_loss).numel() == 1, "TODO 6: L^VF must be one number: the mean over the batch"
    if float(v_loss) == pytest.approx((1 + 0 + 4) / 3, abs=1e-5):
        pytest.fail("TODO 6: L^VF = 0.5 * mean((V - R)^2): the 0.5 is missing")
    assert float(v_loss) == pytest.approx(0.5 * (1 + 0 + 4) / 3, abs=1e-5), (
        f"TODO 6: L^VF = 0.5 * mean((V - R)^2) should be {0.5 * 5 / 3:.4f} for V=[1,2,3], R=[0,2,5], "
        f"got {float(v_loss):.4f}")


@graded
def test_todo7_total_loss(solution):
    entropy = torch.tensor([0.5, 0.7])
    loss = solution.total_loss(torch.tensor(1.0), torch.tensor(2.0), entropy, 0.5, 0.01)
    assert torch.as_tensor(loss).numel() == 1, (
        "TODO 7: the loss must be one number: use the entropy's mean, entropy.mean()")
    loss = float(loss)
    if loss == pytest.approx(1 + 0.5 * 2 + 0.01 * 0.6, abs=1e-6):
        pytest.fail("TODO 7: the entropy is a bonus: subtract ent_coef * H[pi], do not add it")
    assert loss == pytest.approx(1 + 0.5 * 2 - 0.01 * 0.6, abs=1e-6), (
        f"TODO 7: loss = pg_loss + vf_coef * v_loss - ent_coef * entropy.mean() should be 1.994 for "
        f"pg_loss=1, v_loss=2, vf_coef=0.5, ent_coef=0.01, entropy=[0.5, 0.7]; got {loss:.4f}")


# ------------------------------------------------------------------------------------------------
# TODO 8 and the scaffolding, on a real rollout
# ------------------------------------------------------------------------------------------------
@pytest.fixture
def rollout(solution, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    torch.manual_seed(0)
    envs = solution.make_envs()
    agent = solution.ActorCritic(4, 2)
    next_obs, _ = envs.reset(seed=0)
    next_done = np.zeros(envs.num_envs, dtype=bool)
    writer = solution.SummaryWriter(str(tmp_path / "runs" / "grader"))
    yield solution, envs, agent, next_obs, next_done, writer
    writer.close()
    envs.close()


@graded
def test_todo8_gradient_clipping(rollout):
    solution, envs, agent, next_obs, next_done, writer = rollout
    storage, *_ = solution.collect_rollout(envs, agent, next_obs, next_done, writer, 0)
    advantages, returns = solution.compute_gae(storage["rewards"], storage["values"], storage["terminations"],
                                               storage["truncations"], storage["next_value"], GAMMA, LAMBDA)
    norms = []

    class RecordingAdam(torch.optim.Adam):
        def step(self, closure=None):
            norms.append(float(torch.norm(torch.stack([p.grad.norm() for p in agent.parameters()
                                                       if p.grad is not None]))))
            return super().step(closure)

    optimizer = RecordingAdam(agent.parameters(), lr=1e-4)
    solution.ppo_update(agent, optimizer, storage, advantages, returns, max_grad_norm=0.01)
    assert norms, "ppo_update made no optimizer step"
    if 0.01 * 1.001 < max(norms) <= solution.MAX_GRAD_NORM * 1.001:
        pytest.fail(f"TODO 8: gradients are clipped to MAX_GRAD_NORM={solution.MAX_GRAD_NORM}, not to the "
                    f"max_grad_norm argument (0.01 here): norm {max(norms):.3f} reached optimizer.step()")
    assert max(norms) <= 0.01 * 1.001, (
        f"TODO 8: gradients are not clipped: norm {max(norms):.3f} reached optimizer.step() with "
        "max_grad_norm=0.01. Call nn.utils.clip_grad_norm_(agent.parameters(), max_grad_norm)")


@graded
def test_rollout_carries_episodes_across_rollouts(rollout):
    solution, envs, agent, next_obs, next_done, writer = rollout
    resets = []
    original_reset = envs.reset
    envs.reset = lambda **kwargs: resets.append(kwargs) or original_reset(**kwargs)
    first, carried_obs, carried_done, _ = solution.collect_rollout(envs, agent, next_obs, next_done, writer, 0)
    second, *_ = solution.collect_rollout(envs, agent, carried_obs, carried_done, writer, 512)
    assert not resets and np.array_equal(second["obs"][0], carried_obs), (
        "collect_rollout must not reset the envs: carry next_obs / next_done over from the last "
        f"rollout, or no episode can last more than NUM_STEPS={solution.NUM_STEPS} steps (CartPole "
        "needs 500)")
    # gymnasium 1.0: the row after an episode end is an autoreset row, not a transition
    dones = np.maximum(first["terminations"], first["truncations"]).astype(bool)
    assert dones.any()
    assert np.array_equal(first["is_transition"][1:], ~dones[:-1]), "is_transition must be False right after an end"


@pytest.mark.learning
@graded
def test_short_run_learns(solution, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    solution.train(total_timesteps=40_960, seed=1, run_name="grader")
    returns = [v for _, v in read_scalars(tmp_path / "runs" / "grader")["charts/episodic_return"]]
    late = np.mean(returns[-20:])
    # a random policy averages ~22 on CartPole
    assert late > 100, f"after 40k steps the last 20 episodes average {late:.1f}: no better than random"
