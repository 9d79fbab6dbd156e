"""ppo_godot_bc.py: behaviour cloning on the plugin's recorded demonstrations, the critic warmed up before
the actor moves, then PPO beside a BC loss that fades. In this process on CartPole agents (conftest's fake
game) with demonstrations of a simple controller written in the plugin's format; as a process on the real
tag game with the kept recording of its scripted chaser; and each bad demonstration file's one line."""
import argparse
import json
import pickle
import time

import gymnasium as gym
import numpy as np
import pytest
import torch

import ppo_godot_bc as bc
from conftest import REPO, assert_one_line_error, fake_game, game_pids, needs_godot, read_scalars, run_dirs, run_script

SCRIPT = "ppo_godot_bc.py"
GAMES = REPO / "godot" / "chase"
KEPT = {"tag": GAMES / "demos" / "tag_scripted_chaser.json",
        "discrete": GAMES / "demos" / "chase_discrete_scripted.json"}
BATCH = 4 * 64  # the fake game's 4 agents x --num-steps 64


def push_toward_the_lean(obs):
    """A CartPole controller that keeps the pole up: push the cart the way the pole falls."""
    return int(obs[2] + 0.5 * obs[3] > 0)


def cartpole_demos(path, episodes=6, seed=0):
    """Episodes of the controller, as the plugin's RECORD_EXPERT_DEMOS writes them: [observations, actions],
    one more observation than actions."""
    env, recorded = gym.make("CartPole-v1", max_episode_steps=100), []
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        observations, actions, done = [obs.tolist()], [], False
        while not done:
            actions.append([push_toward_the_lean(obs)])
            obs, _, terminated, truncated, _ = env.step(actions[-1][0])
            observations.append(obs.tolist())
            done = terminated or truncated
        recorded.append([observations, actions])
    path.write_text(json.dumps(recorded))
    return path


def train_in_process(folder, monkeypatch, *flags, iterations=6):
    monkeypatch.chdir(folder)
    monkeypatch.setattr(bc, "make_envs", lambda args: fake_game())
    bc.train(bc.parse_args(["--num-steps", "64", "--total-timesteps", str(iterations * BATCH), *flags]))
    (run_dir,) = run_dirs(folder)
    return run_dir


def values(scalars, tag):
    return [value for _, value in scalars[tag]]


def test_cloning_comes_first_then_the_critic_alone_then_ppo_beside_a_fading_bc_loss(tmp_path, monkeypatch):
    demos = cartpole_demos(tmp_path / "demos.json")
    scalars = read_scalars(train_in_process(tmp_path, monkeypatch, "--demos", str(demos), "--critic-warmup", "2",
                                            "--bc-strength", "0.5", "--bc-steps", str(4 * BATCH)))
    # before the first rollout: L^BC well below an untrained policy's log 2 (two actions, near-uniform), and
    # most of the controller's actions taken
    assert scalars["losses/bc_loss"][0][0] == 0 and scalars["losses/bc_loss"][0][1] < 0.45
    assert scalars["charts/demo_accuracy"][0][0] == 0 and scalars["charts/demo_accuracy"][0][1] > 0.8
    # the critic's warm-up: the first 2 updates move no part of the actor (the ratio stays 1)
    approx_kl = values(scalars, "losses/approx_kl")
    assert approx_kl[:2] == [0.0, 0.0] and all(kl != 0 for kl in approx_kl[2:])
    assert values(scalars, "losses/value_loss")[0] > 0
    # beta_t: 0.5, fading linearly to 0 over 4 rollouts of agent-steps, from the first update after the warm-up;
    # L^BC logged where it is in the loss: after the warm-up, while beta_t > 0 (and cloning's at step 0)
    assert [step for step, _ in scalars["charts/bc_coef"]] == [BATCH * i for i in range(3, 7)]
    np.testing.assert_allclose(values(scalars, "charts/bc_coef"), [0.5 * max(0.0, 1 - i / 4) for i in range(3, 7)])
    assert [step for step, _ in scalars["losses/bc_loss"]] == [0, 3 * BATCH]
    assert values(scalars, "losses/bc_loss")[1] > 0
    # the warm-up's loss holds no policy loss and no entropy: neither is logged then
    for tag in ("losses/policy_loss", "losses/entropy"):
        assert [step for step, _ in scalars[tag]] == [BATCH * i for i in range(3, 7)], tag


def test_without_cloning_and_warm_up_the_actor_moves_at_once(tmp_path, monkeypatch):
    """The three parts are flags: with none of them the script is PPO from a new network."""
    demos = cartpole_demos(tmp_path / "demos.json")
    scalars = read_scalars(train_in_process(tmp_path, monkeypatch, "--demos", str(demos), "--bc-epochs", "0",
                                            "--critic-warmup", "0", "--bc-strength", "0", iterations=2))
    assert scalars["charts/demo_accuracy"][0][0] == BATCH  # none at 0
    assert "losses/bc_loss" not in scalars and values(scalars, "charts/bc_coef") == [0.0, 0.0]
    assert all(kl != 0 for kl in values(scalars, "losses/approx_kl"))


def test_bc_steps_0_keeps_the_bc_weight_at_bc_strength(tmp_path, monkeypatch):
    """--bc-steps 0: beta_t never fades (ML-Agents' default), --bc-strength at every update after the warm-up."""
    demos = cartpole_demos(tmp_path / "demos.json")
    scalars = read_scalars(train_in_process(tmp_path, monkeypatch, "--demos", str(demos), "--bc-epochs", "0",
                                            "--critic-warmup", "1", "--bc-strength", "0.3", "--bc-steps", "0",
                                            iterations=4))
    assert scalars["charts/bc_coef"] == [(BATCH * i, pytest.approx(0.3)) for i in range(2, 5)]
    assert [step for step, _ in scalars["losses/bc_loss"]] == [BATCH * i for i in range(2, 5)]


def test_demo_accuracy_counts_the_discrete_actions_alone_and_is_nan_without_any():
    """charts/demo_accuracy: the share of demonstrated discrete choices the greedy policy takes; a game of
    continuous actions only has none to count: nan, as the docs say, not a 0 that reads as never right."""
    torch.manual_seed(0)
    obs = torch.randn(50, 4)
    continuous = bc.Agent([("obs", (4,))], [("move", "continuous", 2)])
    assert np.isnan(bc.demo_accuracy(continuous, argparse.Namespace(obs=obs, actions=torch.zeros(50, 2))))
    mixed = bc.Agent([("obs", (4,))], [("aim", "continuous", 2), ("jump", "discrete", 3)])
    with torch.no_grad():
        actions = mixed.get_action(obs, greedy=True) + torch.tensor([5.0, -5.0, 0.0])  # the means: never taken
    actions[:20, 2] = (actions[:20, 2] + 1) % 3  # 20 of 50 choices the greedy policy does not make
    assert bc.demo_accuracy(mixed, argparse.Namespace(obs=obs, actions=actions)) == pytest.approx(0.6)


def test_cloning_a_continuous_action_lowers_l_bc_and_moves_the_means_to_the_demonstrations():
    """L^BC of a Gaussian head is its negative log-density at the demonstrated values: cloning pulls the
    means toward them (and the log std down as they fit)."""
    torch.manual_seed(0)
    agent = bc.Agent([("obs", (3,))], [("move", "continuous", 2)])
    obs = torch.randn(512, 3)
    demos = argparse.Namespace(obs=obs, actions=torch.tanh(2 * obs[:, :2]))  # a controller's actions in [-1, 1]
    logged = {}
    writer = argparse.Namespace(add_scalar=lambda tag, value, step: logged.__setitem__(tag, (step, value)))
    args = argparse.Namespace(bc_epochs=30, bc_minibatch_size=64, max_grad_norm=0.5)

    def fit():
        with torch.no_grad():
            return (bc.bc_loss(agent, demos.obs, demos.actions).item(),
                    (agent.actor(obs) - demos.actions).abs().mean().item())

    (loss_before, gap_before) = fit()
    bc.behaviour_cloning(args, agent, torch.optim.Adam(agent.parameters(), lr=3e-3), demos, writer)
    (loss_after, gap_after) = fit()
    assert loss_after < loss_before - 0.5 and gap_after < 0.5 * gap_before, (loss_before, loss_after, gap_before,
                                                                             gap_after)
    assert logged["losses/bc_loss"] == (0, pytest.approx(loss_after)) and np.isnan(logged["charts/demo_accuracy"][1])


def test_cloning_stops_before_a_non_finite_loss_reaches_the_weights():
    """The update's guard, in the cloning too: a step whose loss or gradient is not finite raises before
    Adam moves a weight (the run then saves and says so, as for an update)."""
    agent = bc.Agent([("obs", (3,))], [("move", "discrete", 2)])
    weights = {name: value.clone() for name, value in agent.state_dict().items()}
    demos = argparse.Namespace(obs=torch.full((8, 3), float("inf")), actions=torch.zeros(8, 1))
    args = argparse.Namespace(bc_epochs=1, bc_minibatch_size=8, max_grad_norm=0.5)
    with pytest.raises(FloatingPointError):
        bc.behaviour_cloning(args, agent, torch.optim.Adam(agent.parameters()), demos, writer=None)
    assert all(torch.equal(value, weights[name]) for name, value in agent.state_dict().items())


def test_a_resumed_run_keeps_its_demonstrations_and_does_not_clone_again(tmp_path, monkeypatch):
    demos = cartpole_demos(tmp_path / "demos.json")
    run_dir = train_in_process(tmp_path, monkeypatch, "--demos", str(demos), iterations=3)
    saved = pickle.loads(torch.load(run_dir / "ppo_godot_bc.pt")["resume"])["demos"]
    recorded = json.loads(demos.read_text())
    np.testing.assert_array_equal(saved["actions"][:, 0], [a[0] for _, actions in recorded for a in actions])
    assert len(saved["obs"]) == sum(len(actions) for _, actions in recorded)  # no final observation: no action
    demos.unlink()  # the file is gone: the checkpoint has what the run learned from
    time.sleep(1.0 - time.time() % 1.0 + 0.05)  # a new event file name: TensorBoard's names go by the second
    bc.train(bc.parse_args(["--resume", str(run_dir / "ppo_godot_bc.pt"), "--total-timesteps", str(6 * BATCH)]))
    scalars = read_scalars(run_dir)
    # each point once: the cloning's at 0 not again (L^BC from the first update after the warm-up of 2)
    for tag, first in (("charts/demo_accuracy", 1), ("losses/bc_loss", 3)):
        assert sorted(step for step, _ in scalars[tag]) == [0] + [BATCH * i for i in range(first, 7)], tag


@pytest.mark.parametrize("content, message", [
    (None, "--demos 'none.json': no such file"),
    ("[[[0, 1]", "--demos 'demos.json' is not JSON (Expecting"),
    ("[]", "--demos 'demos.json' holds no episodes (the plugin writes them when the game's window closes"),
    ('[[[[0, 1, 2, 3]]]]', "--demos 'demos.json': episode 1 is not [observations, actions]"),
], ids=["missing", "not-json", "empty", "not-pairs"])
def test_a_file_that_holds_no_demonstrations_gets_one_line_before_a_game_starts(content, message, tmp_path):
    if content is not None:
        (tmp_path / "demos.json").write_text(content)
    proc = run_script(SCRIPT, "--env-path", str(GAMES / "chase_discrete.x86_64"), "--port", "1", "--demos",
                      "none.json" if content is None else "demos.json", cwd=tmp_path, check=False)
    assert_one_line_error(proc, message)
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("given", ["relative", "absolute"])
def test_each_file_is_parsed_once_so_a_run_learns_from_the_episodes_it_checked(given, tmp_path, monkeypatch):
    """parse_args reads each file before a game starts; once the game runs, its steps come from that reading,
    not from the file again (here rewritten in between), whichever way its path was given."""
    monkeypatch.chdir(tmp_path)
    demos = cartpole_demos(tmp_path / "demos.json")
    checked = sum(len(actions) for _, actions in json.loads(demos.read_text()))
    args = bc.parse_args(["--demos", "demos.json" if given == "relative" else str(demos)])
    cartpole_demos(demos, episodes=1)
    game = argparse.Namespace(obs_layout=[("obs", (4,))], action_heads=[("move", "discrete", 2)], close=lambda: None)
    assert len(bc.demo_steps(args.demos, game)["actions"]) == checked


def test_training_needs_demonstrations_and_a_resumed_run_takes_none(tmp_path):
    proc = run_script(SCRIPT, "--env-path", str(GAMES / "chase_discrete.x86_64"), cwd=tmp_path, check=False)
    assert_one_line_error(proc, "--demos: give the demonstrations to start from, one file or more (ppo_godot.py "
                                "trains without them)")
    proc = run_script(SCRIPT, "--eval-checkpoint", "x.pt", "--demos", str(KEPT["tag"]), cwd=tmp_path, check=False)
    assert_one_line_error(proc, "--demos is for a new run: --resume keeps its run's, --eval-checkpoint and "
                                "--export-checkpoint need none")
    proc = run_script(SCRIPT, "--demo_files", "demos.json", "--bc_epochs", "5", cwd=tmp_path, check=False)
    assert_one_line_error(proc, "--demo_files is godot-rl's spelling; here it is --demos; --bc_epochs is godot-rl's "
                                "spelling; here it is --bc-epochs")


def edited(change):
    """The kept Chase recording with one change, as a file in the test's folder."""
    def write(tmp_path):
        episodes = json.loads(KEPT["discrete"].read_text())
        change(episodes)
        (tmp_path / "bad.json").write_text(json.dumps(episodes))
        return tmp_path / "bad.json"
    return write


def set_value(episode, part, step, value):
    return lambda episodes: episodes[episode][part].__setitem__(step, value)


bad_action = edited(set_value(1, 1, 3, [7]))


@pytest.mark.parametrize("game, demos, message", [
    ("chase_tag_scripted_chaser", KEPT["tag"], "episode 1's observations hold 4 numbers; the game's obs has 5"),
    ("chase_continuous", KEPT["discrete"],
     "episode 1's actions hold 1 numbers; the game's take 2 (move: continuous 2)"),
    ("chase_discrete", bad_action, "episode 2, step 4: move = 7 is outside its space (discrete: a choice from 0 to 4)"),
    ("chase_discrete", edited(set_value(1, 1, 3, [5])),
     "episode 2, step 4: move = 5 is outside its space (discrete: a choice from 0 to 4)"),
    ("chase_continuous", edited(lambda episodes: [actions.__setitem__(i, [a[0] / 10, 1.5]) for _, actions in episodes
                                                  for i, a in enumerate(actions)]),
     "episode 1, step 1: move = 1.5 is outside its space (continuous: from -1 to 1)"),
    ("chase_plugin", KEPT["discrete"], "--demos: the plugin records the obs key alone, and this game observes "
                                       "position, to_target"),
    ("chase_discrete", edited(set_value(0, 1, 0, ["left"])), "episode 1 holds observations or actions that are "
                                                             "not lists of numbers"),
    ("chase_discrete", edited(set_value(2, 0, 5, [0.1, float("nan"), 0.2, 0.3])),
     "episode 3 holds a NaN or an infinite number"),
    ("chase_discrete", edited(lambda episodes: episodes[0].__setitem__(1, episodes[0][1][:-3])),
     "episode 1 holds"),
    ("chase_discrete", edited(lambda episodes: episodes.__setitem__(slice(None), [[e[0][-1:], []]
                                                                                 for e in episodes])),
     "no episode of"),
], ids=["obs-size", "action-size", "action-outside", "action-of-the-size", "continuous-outside", "more-keys",
        "not-numbers", "nan", "fewer-actions",
        "no-action"])
def test_demonstrations_that_do_not_fit_the_game_get_one_line_and_leave_no_game(game, demos, message, tmp_path,
                                                                                 port):
    needs_godot()
    demos = demos(tmp_path) if callable(demos) else demos
    proc = run_script(SCRIPT, "--env-path", str(GAMES / f"{game}.x86_64"), "--port", str(port), "--godot-version",
                      "3", "--demos", str(demos), cwd=tmp_path, check=False)
    assert_one_line_error(proc, message)
    assert not (tmp_path / "runs").exists() and not game_pids(port)


def test_a_game_that_observes_obs_beside_other_keys_gets_one_line(tmp_path, port):
    """The plugin records get_obs()["obs"] alone: a game with more keys cannot be fed its recordings."""
    from test_ppo_godot import misbehaving_game

    proc = run_script(SCRIPT, "--env-path", misbehaving_game(tmp_path, "obs-and-more"), "--port", str(port),
                      "--demos", str(KEPT["discrete"]), cwd=tmp_path, check=False)
    assert_one_line_error(proc, "--demos: the plugin records the obs key alone, and this game observes obs, speed: "
                                "record a game whose get_obs() returns its whole observation under obs")
    assert not (tmp_path / "runs").exists() and not game_pids(port)


def test_the_tag_game_s_chaser_starts_from_the_kept_recording(tmp_path, port):
    """The real engine: the scripted chaser's recording, cloned, then a short PPO run against the scripted
    runner, exported for the plugin."""
    needs_godot()
    proc = run_script(SCRIPT, "--env-path", str(GAMES / "chase_tag_scripted_runner.x86_64"), "--port", str(port),
                      "--godot-version", "3", "--demos", str(KEPT["tag"]), "--num-steps", "32", "--total-timesteps",
                      "2048", "--onnx-export-path", str(tmp_path / "chaser.onnx"), cwd=tmp_path)
    scalars = read_scalars(run_dirs(tmp_path)[0])
    assert scalars["charts/demo_accuracy"][0] == (0, pytest.approx(scalars["charts/demo_accuracy"][0][1]))
    assert scalars["charts/demo_accuracy"][0][1] > 0.6  # the script's moves, from 10 episodes; chance is 0.2
    assert (tmp_path / "chaser.onnx").exists() and "The policy is exported to" in proc.stdout
