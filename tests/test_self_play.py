"""ppo_godot_self_play.py: one policy learns at a time while the others play snapshots of
their past weights drawn from a pool, with an ELO rating per policy. The schedule and the ratings on
their own; an exact resume on a stand-in game of two policies (a game whose episodes line up with the
rollouts, so that a resumed run's new episodes are the ones it would have played), in this process and
as a process killed with kill -9;
the real tag game for the console, the logs, a saved opponent and each bad input's one line."""
import argparse
import os
import pickle
import shutil
import signal
import time

import gymnasium as gym
import numpy as np
import onnxruntime
import pytest
import torch

import ppo_godot_self_play as selfplay
from conftest import (REPO, assert_one_line_error, assert_plugin_plays_like_torch, free_port, game_pids, needs_godot,
                      read_scalars, read_text_tags, run_dirs, run_script)
from test_checkpoints import kill_after_first_checkpoint, start
from test_ppo_godot import misbehaving_game
from test_ppo_godot_multi_policy import (TAG, VS_SCRIPTED_RUNNER, game_argv, runner_only,  # noqa: F401 (fixtures)
                                         tag_run)

SCRIPT = "ppo_godot_self_play.py"


def policies(**agents):
    """{name: policy} as read_policies makes them: each observes 2 floats and takes a discrete action of 2."""
    return {name: argparse.Namespace(name=name, obs_layout=[("obs", (2,))], obs_keys=["obs"],
                                     action_heads=[("move", "discrete", 2)], agent_ids=np.array(indices), width=2,
                                     columns=1, padding=[], tag=f"/{name}") for name, indices in agents.items()}


def settings(**given):
    """The self-play flags, ML-Agents' defaults unless given, as parse_args returns them."""
    args = selfplay.parse_args([f"--{k.replace('_', '-')}={v}" for k, v in given.items()])
    args.num_steps = given.get("num_steps", 16)
    return args


class Writer:
    def __init__(self):
        self.scalars = {}

    def add_scalar(self, tag, value, step):
        self.scalars.setdefault(tag, []).append((step, value))


def self_play(frozen=None, pool_weights=None, right=(2, 3), envs=None, **given):
    """A SelfPlay over policies left (agents 0, 1) and right (agents 2, 3 unless given), and its AgentPerPolicy;
    envs, unless given, a game that says which ends are time-outs."""
    torch.manual_seed(0)
    n_agents = right[-1] + 1
    agents = selfplay.AgentPerPolicy(policies(left=[0, 1], right=list(right),
                                              **({"fixed": [n_agents]} if frozen else {})), frozen)
    envs = envs or argparse.Namespace(tells_time_outs=np.ones(n_agents + 1, bool))
    return selfplay.SelfPlay(settings(**given), envs, agents, pool_weights or {}), agents


def weights_of(module):
    return torch.cat([value.flatten() for value in module.state_dict().values()])


def test_one_policy_learns_at_a_time_while_the_others_play_snapshots_drawn_from_their_pool():
    # a rollout: 2 agents x 16 steps = 32 agent-steps of each policy
    sp, agents = self_play(self_play_save_steps=64, self_play_team_change=128, self_play_swap_steps=32,
                           self_play_window=3, self_play_latest=1.0)
    writer, learners = Writer(), []
    assert sp.learner == "left" and set(agents.playing) == {"right"}  # right plays its first weights
    assert torch.equal(weights_of(agents.playing["right"]), weights_of(agents["right"]))
    for iteration in range(1, 17):
        with torch.no_grad():  # the learner's update
            for parameter in agents[sp.learner].parameters():
                parameter.add_(0.01 * iteration)
        sp.end_iteration(32 * iteration, writer)
        learners.append(sp.learner)
        waiting = "right" if sp.learner == "left" else "left"
        assert set(agents.playing) == {waiting} and sp.learner not in sp.in_play
        # --self-play-latest 1: the newest snapshot of its pool, whose weights it plays, not its own
        assert sp.in_play[waiting] is sp.pools[waiting][-1]
        assert torch.equal(weights_of(agents.playing[waiting]),
                           torch.cat([v.flatten() for v in sp.pools[waiting][-1]["weights"].values()]))
    # team change every 128 of the learner's agent-steps: 4 rollouts each
    assert learners == ["left"] * 3 + ["right"] * 4 + ["left"] * 4 + ["right"] * 4 + ["left"]
    # a snapshot every 64 of them: the first weights, then 2 a turn, the window keeping the newest 3
    assert [s["source"] for s in sp.pools["left"]] == ["global_step=128", "global_step=320", "global_step=384"]
    assert [s["source"] for s in sp.pools["right"]] == ["global_step=256", "global_step=448", "global_step=512"]
    assert [value for _, value in writer.scalars["self_play/learning/left"]] == [
        float(name == "left") for name in learners]
    # the policies' own weights never became a snapshot's: each learner kept its own
    assert not torch.equal(weights_of(agents["left"]), weights_of(agents.playing["right"]))


def test_each_policy_counts_its_own_steps_to_a_snapshot_across_its_turns():
    """As ML-Agents counts them: a turn's end does not restart the count, so a save interval that does not divide
    the turn still takes a snapshot every save_steps of the policy's learning."""
    sp, _ = self_play(self_play_save_steps=96, self_play_team_change=64)  # a turn: 2 rollouts of 32 agent-steps
    for iteration in range(1, 13):  # left learns in iterations 1-2, 5-6, 9-10: 6 rollouts, 192 agent-steps
        sp.end_iteration(32 * iteration, Writer())
    assert [s["source"] for s in sp.pools["left"]] == ["global_step=0", "global_step=160", "global_step=320"]
    assert [s["source"] for s in sp.pools["right"]] == ["global_step=0", "global_step=224", "global_step=384"]


def test_each_waiting_policy_counts_its_own_agent_steps_to_a_new_draw():
    """Not the learner's: left has 2 agents and right 3, a rollout 32 and 48 agent-steps of each."""
    sp, _ = self_play(right=(2, 3, 4), self_play_swap_steps=96, self_play_team_change=192,
                      self_play_save_steps=10 ** 6)
    draws, swap = [], sp.swap
    sp.swap = lambda name: (draws.append((name, iteration)), swap(name))
    for iteration in range(1, 11):  # left learns 6 rollouts (192 of its agent-steps), then right 4
        sp.end_iteration(80 * iteration, Writer())
    # right's every 2 of left's rollouts, left's every 3 of right's; and each one's at the end of its turn
    assert draws == [("right", 2), ("right", 4), ("left", 6), ("left", 9), ("right", 10)]


def left_waiting_on_its_first_weights():
    """self_play() a turn on: right learns, and left's agents play left's first weights, which left's own no longer
    are: its update negated its actor's output, so that the two's greedy actions differ on every observation."""
    sp, agents = self_play(self_play_save_steps=10 ** 6, self_play_team_change=32)
    with torch.no_grad():
        for parameter in agents["left"].actor[-1].parameters():
            parameter.neg_()
    sp.end_iteration(32, Writer())
    assert sp.learner == "right" and sp.in_play["left"] is sp.pools["left"][0]
    return sp, agents


def test_a_waiting_policy_s_agents_act_with_the_snapshot_in_play_not_its_own_weights():
    sp, agents = left_waiting_on_its_first_weights()
    snapshot = selfplay.Agent([("obs", (2,))], [("move", "discrete", 2)])
    snapshot.load_state_dict(sp.in_play["left"]["weights"])
    x = torch.randn(4, 2)  # a step of the 4 agents
    with torch.no_grad():
        action = agents.get_action(x, greedy=True)
        assert torch.equal(action[:2], snapshot.get_action(x[:2], greedy=True))  # left's agents: the snapshot
        assert torch.equal(action[2:], agents["right"].get_action(x[2:], greedy=True))  # the learner: its own
        assert not torch.equal(action[:2], agents["left"].get_action(x[:2], greedy=True))


def test_the_export_writes_each_policy_s_own_weights_not_the_snapshot_it_plays(tmp_path):
    _, agents = left_waiting_on_its_first_weights()
    args = argparse.Namespace(onnx_export_path=str(tmp_path / "duel.onnx"),
                              gdscript_export_path=str(tmp_path / "duel.gd"), env_id="duel", action_repeat=None)
    selfplay.export_policy(agents, args)
    agents.playing = {}  # the same export with no snapshot in play
    args.gdscript_export_path = str(tmp_path / "own.gd")
    selfplay.export_policy(agents, args)
    for name in ("left", "right"):
        session = onnxruntime.InferenceSession(str(tmp_path / f"duel_{name}.onnx"), providers=["CPUExecutionProvider"])
        assert_plugin_plays_like_torch(agents[name], session, {"obs": 2}, {"move": ("discrete", 2)})
        assert (tmp_path / f"duel_{name}.gd").read_text() == (tmp_path / f"own_{name}.gd").read_text()


def test_a_draw_takes_the_newest_with_the_latest_probability_else_any_of_the_pool():
    sp, _ = self_play(self_play_save_steps=10 ** 6, self_play_team_change=10 ** 6, self_play_swap_steps=1,
                      self_play_latest=0.25)
    for i in range(3):  # right's pool: 4 snapshots
        sp.pools["right"].append(sp.snapshot("right", sp.agents["right"].state_dict(), f"extra {i}"))
    counts = np.zeros(4)
    for iteration in range(1, 4001):  # a draw after every rollout
        sp.end_iteration(32 * iteration, Writer())
        counts[next(i for i, s in enumerate(sp.pools["right"]) if s is sp.in_play["right"])] += 1
    # the newest: 0.25 + 0.75 / 4; each other one: 0.75 / 4
    np.testing.assert_allclose(counts / counts.sum(), [0.1875, 0.1875, 0.1875, 0.4375], atol=0.03)


def test_a_saved_opponent_stays_in_the_pool_beside_the_window():
    saved = {key: torch.zeros_like(value) for key, value in selfplay.Agent([("obs", (2,))], [("move", "discrete", 2)])
             .state_dict().items()}
    sp, _ = self_play(pool_weights={"left": [("/runs/old/ppo_godot_multi_policy.pt", saved)]},
                      self_play_save_steps=32, self_play_window=2, self_play_team_change=32 * 10)
    for iteration in range(1, 10):  # left learns: a snapshot after each rollout
        sp.end_iteration(32 * iteration, Writer())
    sources = [s["source"] for s in sp.pools["left"]]
    assert sources[0] == "/runs/old/ppo_godot_multi_policy.pt" and len(sources) == 3  # the file, then the window's 2
    kept = sp.pools["left"][0]
    assert kept["kept"] and all(torch.equal(value, saved[key]) for key, value in kept["weights"].items())


@pytest.mark.parametrize("outcome, learner, episodic_return, terminated, score", [
    ("return", "left", 2.0, True, 1.0), ("return", "left", 0.0, True, 0.5), ("return", "left", -0.5, False, 0.0),
    ("terminated=left", "left", -3.0, True, 1.0), ("terminated=left", "left", 3.0, False, 0.0),
    ("terminated=left", "right", 3.0, True, 0.0), ("terminated=left", "right", -3.0, False, 1.0),
])
def test_each_episode_end_of_a_learner_moves_its_rating_and_its_opponent_s_by_elo(outcome, learner, episodic_return,
                                                                                  terminated, score):
    sp, _ = self_play(self_play_outcome=outcome)
    if learner == "right":  # the next turn: left's agents play its snapshot
        sp.learner = "right"
        del sp.agents.playing["right"], sp.in_play["right"]
        sp.swap("left")
    opponent = sp.in_play["right" if learner == "left" else "left"]
    sp.ratings.players[learner]["rating"], opponent["rating"] = 1200.0, 1400.0
    agent = 0 if learner == "left" else 2
    sp.ratings.rate(agent, episodic_return, terminated)
    expected = 1 / (1 + 10 ** (200 / 400))  # 0.24: a 200-point weaker player
    change = 16 * (score - expected)
    assert sp.ratings.players[learner]["rating"] == pytest.approx(1200 + change)
    assert opponent["rating"] == pytest.approx(1400 - change)  # zero-sum
    sp.ratings.rate(agent + 1 if learner == "left" else 0, 5.0, True)  # not the learner's agent (left's, a snapshot's)
    if learner == "right":
        assert sp.ratings.players[learner]["rating"] == pytest.approx(1200 + change)


def test_the_progress_line_and_the_logs_give_each_policy_s_own_rating_not_its_snapshot_s():
    sp, _ = self_play()
    sp.ratings.rate(0, 1.0, True)  # left beats right's snapshot, which loses 8; right's own rating stays
    assert sp.in_play["right"]["rating"] == pytest.approx(1192)
    assert sp.ratings.progress_note() == " learning=left elo: left=1208 right=1200"
    writer = Writer()
    sp.ratings.log(writer, 32)
    assert writer.scalars["self_play/elo/right"] == [(32, 1200.0)]


def test_the_learner_s_score_is_logged_against_the_newest_snapshots_and_the_older_ones():
    sp, _ = self_play()
    assert sp.in_play["right"] is sp.pools["right"][-1]  # right's pool: its first weights alone
    sp.ratings.rate(0, 1.0, True)  # left wins twice against the newest, then loses once against an older one
    sp.ratings.rate(1, 1.0, True)
    sp.pools["right"].append(sp.snapshot("right", sp.agents["right"].state_dict(), "global_step=32"))
    sp.ratings.rate(0, -1.0, False)
    sp.ratings.rate(2, 1.0, True)  # right's agents play a snapshot: no score of left's
    writer = Writer()
    sp.ratings.log(writer, 64)
    assert writer.scalars["self_play/score/left/vs_newest"] == [(64, 1.0)]
    assert writer.scalars["self_play/score/left/vs_older"] == [(64, 0.0)]
    assert not [tag for tag in writer.scalars if tag.startswith("self_play/score/right")]
    writer = Writer()
    sp.ratings.log(writer, 96)  # each update's own: nothing was played since
    assert not [tag for tag in writer.scalars if tag.startswith("self_play/score/")]


def test_a_frozen_policy_is_an_opponent_with_a_rating_of_its_own():
    sp, _ = self_play(frozen={"fixed": None})
    assert sp.names == ["left", "right"] and "fixed" not in sp.pools
    sp.ratings.rate(0, 1.0, True)  # left wins against right's snapshot and the frozen policy: each loses half
    assert sp.ratings.players["left"]["rating"] == pytest.approx(1208)
    assert sp.in_play["right"]["rating"] == pytest.approx(1196) and sp.ratings.players["fixed"]["rating"] == pytest.approx(1196)


def test_a_plugin_game_that_sends_its_final_observation_has_its_reached_targets_rated(monkeypatch):
    """--self-play-outcome terminated=left in a game that resets on the spot and sends each end's
    terminal_observation (the plugin's "Send Terminal Obs Info"): an end without TimeLimit.truncated is terminated,
    left's win, and a time-out its loss; both are rated, where a plugin game that sends neither is not."""
    envs = selfplay.GodotVecEnv.__new__(selfplay.GodotVecEnv)  # its step(), on one game's reply
    envs.policies = policies(left=[0, 1], right=[2, 3])
    envs.agent_policy = [envs.policies["left"]] * 2 + [envs.policies["right"]] * 2
    envs.single_observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
    envs.num_envs, envs.games = 4, [argparse.Namespace(port=11008)]
    final = {"obs": [0.5, 0.5]}
    reply = {"obs": [{"obs": [0.0, 0.0]}] * 4, "reward": [1.0, -1.0, -1.0, 1.0], "done": [True, True, False, False],
             "info": [{"terminal_observation": final}, {"terminal_observation": final, "TimeLimit.truncated": True},
                      {}, {}]}
    monkeypatch.setattr(selfplay, "step_games", lambda envs, actions: (
        [reply], np.array(reply["reward"], np.float32), np.array(reply["done"]), reply["info"]))
    _, _, terminated, truncated, _ = envs.step(np.zeros((4, 1), np.float32))
    assert terminated.tolist() == [True, False, False, False] and truncated.tolist() == [False, True, False, False]
    sp, _ = self_play(envs=envs, self_play_outcome="terminated=left")
    sp.ratings.rate(0, 1.0, terminated[0])  # the reached target: left beats right's snapshot
    assert sp.ratings.players["left"]["rating"] == pytest.approx(1208) and not sp.ratings.untold
    sp.ratings.rate(1, -1.0, terminated[1])  # the time-out: left loses
    assert sp.ratings.players["left"]["rating"] < 1208 and not sp.ratings.untold


# ------------------------------------------------------------------------------------------------
# An exact resume, on a stand-in game of two policies
# ------------------------------------------------------------------------------------------------
LENGTH = 16  # steps of every episode, and of every rollout (--num-steps)


class Duel:
    """The games' vector env of ppo_godot_self_play.py, for two policies: agents 0, 1 are "left", 2, 3
    "right", and agent i plays agent i + 2. Each observes [its episode's share done, its opponent's last
    action]; left gets +1 when the two actions are equal, right when they differ, -1 otherwise. Every
    episode lasts LENGTH steps and is reset on the spot, as the plugin does, so episodes end with rollouts
    and a resumed run's new episodes are those a run never stopped plays. stop_at: the step (counted
    from the first) at which the run is stopped, by `how` (a SIGINT, or SystemExit as a hard kill
    leaves a run: no save)."""
    stop_at, how, steps = None, None, 0
    tells_time_outs = np.zeros(4, bool)  # it resets on the spot: every end looks terminated

    def __init__(self):
        self.policies = policies(left=[0, 1], right=[2, 3])
        self.agent_policy = [self.policies["left"]] * 2 + [self.policies["right"]] * 2
        self.num_envs, self.games = 4, []
        self.single_observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
        self.single_action_space = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)

    def observations(self):
        opponent_action = np.concatenate([self.actions[2:], self.actions[:2]])
        return np.stack([np.full(4, self.t / LENGTH), opponent_action], axis=1).astype(np.float32)

    def reset(self, seed=None):
        self.t, self.actions, self.returns = 0, np.zeros(4), np.zeros(4)
        return self.observations(), {}

    def step(self, actions):
        Duel.steps += 1
        if Duel.steps == Duel.stop_at:
            if Duel.how == "kill":
                raise SystemExit(137)
            os.kill(os.getpid(), signal.SIGINT)
        self.actions, self.t = actions[:, 0].astype(float), self.t + 1
        same = np.where(self.actions[:2] == self.actions[2:], 1.0, -1.0)
        reward = np.concatenate([same, -same]).astype(np.float32)
        self.returns += reward
        done = np.full(4, self.t == LENGTH)
        infos = {"autoreset": np.zeros(4, bool), "bootstraps_from_final": np.zeros(4, bool)}
        if done.any():
            infos.update({"episode": {"r": self.returns.copy(), "l": np.full(4, LENGTH)}, "_episode": done})
            self.reset()
        return self.observations(), reward, done, np.zeros(4, bool), infos

    def close(self):
        pass


DUEL_FLAGS = ["--num-steps", str(LENGTH), "--total-timesteps", str(10 * 4 * LENGTH), "--num-minibatches", "2",
              "--self-play-save-steps", "32", "--self-play-team-change", "96",
              "--self-play-swap-steps", "64", "--self-play-window", "2", "--self-play-latest", "0.5"]


class DuelOfTimeOuts(Duel):
    """Duel in a game that tells its time-outs (as a game that resets on the next step does): every episode ends
    by its time limit."""
    tells_time_outs = np.ones(4, bool)

    def step(self, actions):
        obs, reward, done, _, infos = super().step(actions)
        return obs, reward, np.zeros(4, bool), done, infos


def train_duel(folder, argv, monkeypatch, game=Duel):
    """Trains on Duel (or game, a kind of Duel) in `folder`; the exit code when the run stops itself, else None."""
    folder.mkdir(exist_ok=True)
    monkeypatch.chdir(folder)
    monkeypatch.setattr(selfplay, "make_envs", lambda args: selfplay.NormalizeReward(game(), args.gamma))
    Duel.steps = 0
    try:
        selfplay.train(selfplay.parse_args(argv))
    except SystemExit as stop:
        return stop.code
    return None


def test_only_the_learner_learns_and_the_waiting_policy_s_weights_stay_as_they_were(tmp_path, monkeypatch):
    """The rows its snapshot played are no samples of the waiting policy's own weights (log pi_old would be the
    snapshot's): a policy learns, and logs its losses, in its own turns alone."""
    turns, end_iteration = [], selfplay.SelfPlay.end_iteration

    def seen(sp, global_step, writer):  # the rollout's learner, and the weights its update left
        turns.append((sp.learner, {name: weights_of(sp.agents[name]) for name in sp.names}))
        end_iteration(sp, global_step, writer)

    monkeypatch.setattr(selfplay.SelfPlay, "end_iteration", seen)
    Duel.stop_at = None
    assert train_duel(tmp_path, DUEL_FLAGS, monkeypatch) is None
    assert [learner for learner, _ in turns] == ["left"] * 3 + ["right"] * 3 + ["left"] * 3 + ["right"]
    for (_, before), (learner, after) in zip(turns, turns[1:]):
        for name in before:
            assert torch.equal(before[name], after[name]) == (name != learner), name
    scalars = read_scalars(run_dirs(tmp_path)[0])
    for name in ("left", "right"):
        assert [step for step, _ in scalars[f"losses/value_loss/{name}"]] == [
            i * 4 * LENGTH for i, (learner, _) in enumerate(turns, 1) if learner == name]


@pytest.mark.parametrize("how", ["ctrl-c", "kill"])
def test_a_self_play_run_stopped_and_resumed_logs_what_one_never_stopped_logs(how, tmp_path, monkeypatch):
    Duel.stop_at = None
    assert train_duel(tmp_path / "reference", DUEL_FLAGS, monkeypatch) is None
    # in the 6th rollout: Ctrl-C stops after it, a kill (no save) leaves the checkpoint of the 5th
    Duel.stop_at, Duel.how = 5 * LENGTH + 7, how
    assert train_duel(tmp_path / "stopped", DUEL_FLAGS + ["--checkpoint-minutes", "0"], monkeypatch) == (
        130 if how == "ctrl-c" else 137)
    Duel.stop_at = None
    (run_dir,) = run_dirs(tmp_path / "stopped")
    saved = pickle.loads(torch.load(run_dir / "ppo_godot_self_play.pt")["resume"])
    iterations = 6 if how == "ctrl-c" else 5
    assert saved["global_step"] == iterations * 4 * LENGTH
    assert saved["self_play"]["learner"] == ("left" if how == "ctrl-c" else "right")
    time.sleep(1.0 - time.time() % 1.0 + 0.05)  # a new event file name: TensorBoard's names go by the second
    assert train_duel(tmp_path / "stopped", ["--resume", str(run_dir / "ppo_godot_self_play.pt")],
                      monkeypatch) is None

    reference, resumed = read_scalars(run_dirs(tmp_path / "reference")[0]), read_scalars(run_dir)
    assert reference.keys() == resumed.keys()
    for tag in ("self_play/elo/left", "self_play/elo/right", "self_play/learning/left", "losses/value_loss/right"):
        assert tag in reference
    assert [value for _, value in reference["self_play/learning/left"]] == [1, 1, 0, 0, 0, 1, 1, 1, 0, 0]
    assert len({value for _, value in reference["self_play/elo/left"]}) > 2  # the ratings moved
    for tag in reference:
        if tag != "charts/SPS":  # wall-clock
            assert resumed[tag] == reference[tag], tag  # same steps, same values, nothing twice
    assert read_text_tags(run_dir).count("hyperparameters/text_summary") == 1


def test_a_self_play_run_killed_after_a_periodic_checkpoint_resumes_like_never_killed(tmp_path, port):
    """kill -9, as a user's machine does it: the run as a process, playing Duel as a game of its own
    (tests/misbehaving_game.py duel, the stand-in above, over the protocol)."""
    iterations = 150
    argv = ["--env-path", misbehaving_game(tmp_path, "duel"), "--port", str(port), *DUEL_FLAGS,
            "--total-timesteps", str(iterations * 4 * LENGTH), "--checkpoint-minutes", "0"]
    (tmp_path / "reference").mkdir()
    run_script(SCRIPT, *argv, cwd=tmp_path / "reference")
    (tmp_path / "killed").mkdir()
    proc = start(SCRIPT, *argv, cwd=tmp_path / "killed")
    checkpoint = kill_after_first_checkpoint(proc, "runs/*/ppo_godot_self_play.pt", tmp_path / "killed")
    saved = pickle.loads(torch.load(checkpoint)["resume"])
    assert 0 < saved["global_step"] < iterations * 4 * LENGTH and "self_play" in saved
    time.sleep(1.0 - time.time() % 1.0 + 0.05)  # a new event file name: TensorBoard's names go by the second
    run_script(SCRIPT, "--resume", str(checkpoint), "--port", str(port), cwd=tmp_path / "killed")

    reference, resumed = read_scalars(run_dirs(tmp_path / "reference")[0]), read_scalars(checkpoint.parent)
    assert reference.keys() == resumed.keys() and len(reference["self_play/elo/left"]) == iterations
    for tag in reference:
        if tag != "charts/SPS":
            assert resumed[tag] == reference[tag], tag


SAVED_BEFORE_THE_MOVE = REPO / "tests" / "checkpoints" / "self_play_b323d26_duel"
# Its first 5 rollouts were computed on another machine. Exact on any CPU: which tags at which steps, the episodes
# (lengths, sums of +-1 rewards), the turns and the ratings they move. The losses are float32 sums that a CPU's
# kernels add in an order of their own (explained_variance/left differed in its 7th digit on one): held to 1e-5 of
# their size, or 1e-6 near 0, 100x and more below what a resume without its Adam moments moves at its first update
# (entropy/right by 1.5e-3, value_loss/right by 8e-2).
EXACT_ON_ANY_CPU = ("charts/episodic_", "self_play/", "diagnostics/update_epochs_done/", "charts/learning_rate/")


def test_a_self_play_run_saved_by_ppo_godot_multi_policy_resumes_here_as_if_never_moved(tmp_path, port):
    """tests/checkpoints/self_play_b323d26_duel: a run of ppo_godot_multi_policy.py --self-play at b323d26 (before
    self-play moved here) on the duel stand-in, 5 rollouts with DUEL_FLAGS and --anneal-lr false, its log folder
    as it left it. Resumed here to 10 rollouts, it logs what a run of this file never stopped logs (the losses to
    float32's rounding: EXACT_ON_ANY_CPU)."""
    game = misbehaving_game(tmp_path, "duel")
    flags = [*DUEL_FLAGS, "--anneal-lr", "false", "--total-timesteps", str(10 * 4 * LENGTH)]
    (tmp_path / "reference").mkdir()
    run_script(SCRIPT, "--env-path", game, "--port", str(port), *flags, cwd=tmp_path / "reference")
    run_dir = tmp_path / "moved" / "runs" / "duel__ppo_godot_multi_policy__1"
    shutil.copytree(SAVED_BEFORE_THE_MOVE, run_dir)
    checkpoint = run_dir / "ppo_godot_multi_policy.pt"
    assert torch.load(checkpoint, weights_only=True)["script"] == "ppo_godot_multi_policy.py"
    run_script(SCRIPT, "--resume", str(checkpoint), "--env-path", game, "--port", str(port), "--total-timesteps",
               str(10 * 4 * LENGTH), cwd=tmp_path / "moved")
    reference, resumed = read_scalars(run_dirs(tmp_path / "reference")[0]), read_scalars(run_dir)
    assert reference.keys() == resumed.keys() and len(reference["self_play/elo/left"]) == 10
    saved_until = 5 * 4 * LENGTH  # the saved run's last step
    for tag in reference:
        if tag == "charts/SPS":
            continue
        expected = reference[tag]
        if tag.startswith("self_play/score/"):  # logged since b323d26: from the resume on
            expected = [(step, value) for step, value in expected if step > saved_until]
        assert [step for step, _ in resumed[tag]] == [step for step, _ in expected], tag
        values = [value for _, value in resumed[tag]]
        if tag.startswith(EXACT_ON_ANY_CPU):
            assert values == [value for _, value in expected], tag
        else:
            assert values == pytest.approx([value for _, value in expected], rel=1e-5, abs=1e-6), tag
    # the sibling now refuses to resume it, and this file a run saved without self-play
    proc = run_script("ppo_godot_multi_policy.py", "--resume", str(checkpoint), "--total-timesteps", "100000",
                      cwd=tmp_path, check=False)
    assert_one_line_error(proc, f"{checkpoint} is a self-play run: resume it with ppo_godot_self_play.py")


def test_a_run_saved_without_self_play_is_not_resumed_here(tag_run, tmp_path):
    proc = run_script(SCRIPT, "--resume", str(tag_run[0]), "--total-timesteps", "100000", cwd=tmp_path, check=False)
    assert_one_line_error(proc, f"{tag_run[0]} was saved by ppo_godot_multi_policy.py without self-play: resume it "
                                f"with ppo_godot_multi_policy.py")


def test_a_game_that_cannot_tell_a_time_out_is_not_rated_by_terminated(tmp_path, monkeypatch, capsys):
    """--self-play-outcome terminated=NAME in a game that resets on the spot (Duel, like the plugin): every end
    would be NAME's win; the ends are left unrated, and a note says why, once."""
    Duel.stop_at = None
    argv = DUEL_FLAGS + ["--self-play-outcome", "terminated=left", "--total-timesteps", str(4 * 4 * LENGTH)]
    assert train_duel(tmp_path, argv, monkeypatch) is None
    notes = [line for line in capsys.readouterr().out.splitlines() if "cannot say which episode ends" in line]
    assert notes == ["ppo_godot_self_play.py: note: --self-play-outcome terminated=left: the game resets agents "
                     "on the spot (as the plugin does) and sends no terminal_observation, so it cannot say which "
                     "episode ends are time-outs; those "
                     "ends are not rated (use --self-play-outcome return)"]
    scalars = read_scalars(run_dirs(tmp_path)[0])
    assert {value for _, value in scalars["self_play/elo/left"] + scalars["self_play/elo/right"]} == {1200.0}


def test_a_time_out_is_a_loss_for_the_policy_terminated_names_and_a_win_for_the_other(tmp_path, monkeypatch):
    """--self-play-outcome terminated=left in a game that tells its time-outs, whose every episode times out: each
    end is right's win, so left's own rating only falls (in its turns) and right's only rises (in its own)."""
    Duel.stop_at = None
    argv = DUEL_FLAGS + ["--self-play-outcome", "terminated=left", "--total-timesteps", str(6 * 4 * LENGTH)]
    assert train_duel(tmp_path, argv, monkeypatch, DuelOfTimeOuts) is None  # left learns 3 rollouts, then right 3
    scalars = read_scalars(run_dirs(tmp_path)[0])
    left, right = ([value for _, value in scalars[f"self_play/elo/{name}"]] for name in ("left", "right"))
    assert left == sorted(left, reverse=True) and left[-1] < 1200
    assert right == sorted(right) and right[-1] > 1200


# ------------------------------------------------------------------------------------------------
# The real tag game
# ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def self_play_run(tmp_path_factory, tag_run):
    """A self-play run on the tag game, the runner's pool holding the tag run's runner as well: 8 iterations
    of 256 steps (128 of each policy), the learner changing every 2."""
    needs_godot()
    folder = tmp_path_factory.mktemp("self_play")
    proc = run_script(SCRIPT, *game_argv(TAG, free_port(), "--total-timesteps", "2048",
                                         "--self-play-outcome", "terminated=chaser", "--self-play-save-steps", "128",
                                         "--self-play-team-change", "256", "--self-play-swap-steps", "128",
                                         "--self-play-pool", f"runner={tag_run[0]}", "--checkpoint-minutes", "0",
                                         "--onnx-export-path", str(folder / "tag.onnx")), cwd=folder)
    return run_dirs(folder)[0], proc.stdout, folder


def test_a_self_play_run_shows_who_learns_and_the_ratings_and_saves_its_pools(self_play_run, tag_run):
    run_dir, stdout, folder = self_play_run
    saved_at = torch.load(tag_run[0], weights_only=True)["global_step"]
    assert (f"policy 'runner' has a saved opponent in its self-play pool: the weights from {tag_run[0]} (run "
            f"{tag_run[0].parent.name}, ppo_godot_multi_policy.py, global_step={saved_at})") in stdout.splitlines()
    progress = [line for line in stdout.splitlines() if line.startswith("[")]
    assert len(progress) == 8
    learning = [line.split(" learning=")[1].split()[0] for line in progress]
    assert learning == ["chaser", "runner", "runner", "chaser", "chaser", "runner", "runner", "chaser"]
    assert all(" elo: chaser=" in line and " runner=" in line for line in progress)
    scalars = read_scalars(run_dir)
    for name in ("chaser", "runner"):
        assert len(scalars[f"self_play/elo/{name}"]) == 8
        # each policy learns only in its turns: 4 updates each
        assert len(scalars[f"losses/value_loss/{name}"]) == 4
        assert len(scalars[f"charts/episodic_return/{name}"]) >= 8  # each of its 8 agents ended one, learning or not
    state = pickle.loads(torch.load(run_dir / "ppo_godot_self_play.pt")["resume"])["self_play"]
    assert state["pools"]["runner"][0]["source"] == str(tag_run[0]) and state["pools"]["runner"][0]["kept"]
    assert [s["source"] for s in state["pools"]["chaser"]] == [
        "global_step=0", "global_step=256", "global_step=512", "global_step=1280", "global_step=1536"]
    # what is exported is each policy's own weights, never a snapshot's
    assert sorted(p.name for p in folder.glob("*.onnx")) == ["tag_chaser.onnx", "tag_runner.onnx"]


def test_evaluation_lines_give_each_episode_s_length_and_how_it_ended(tag_run, tmp_path, port):
    proc = run_script(SCRIPT, *game_argv(TAG, port, "--eval-checkpoint", str(tag_run[0]), "--eval-episodes", "8"),
                      cwd=tmp_path)
    lines = [line for line in proc.stdout.splitlines() if " eval_episode=" in line]
    assert len(lines) == 32  # 8 of each policy, greedy then sampled
    for line in lines:
        length, ended = line.split("episodic_length=")[1].split()
        assert 1 <= int(length) <= 100 and ended in ("(terminated)", "(time-out)"), line
        assert ended == "(time-out)" or int(length) < 100  # a catch ends it before the time-out's 100 steps


@pytest.mark.parametrize("flags, message", [
    (["--self-play-window", "0"], "--self-play-window must be 1 or more, got 0"),
    (["--self-play-save-steps", "0"], "--self-play-save-steps must be 1 or more, got 0"),
    (["--self-play-team-change", "-5"], "--self-play-team-change must be 1 or more, got -5"),
    (["--self-play-swap-steps", "0"], "--self-play-swap-steps must be 1 or more, got 0"),
    (["--self-play-latest", "1.5"], "--self-play-latest is a probability, from 0 to 1; got 1.5"),
    (["--self-play-latest", "nan"], "--self-play-latest is a probability, from 0 to 1; got nan"),
    (["--self-play-outcome", "win"], "--self-play-outcome takes return or terminated=NAME"),
    (["--self-play-pool", "runner"], "--self-play-pool takes NAME=CHECKPOINT (a policy the game names, a .pt file), "
                                     "got 'runner'"),
    (["--self-play-pool", "runner", "x.pt"], "--self-play-pool takes NAME=CHECKPOINT"),
    (["--self-play-pool", "runner = x.pt"], "--self-play-pool takes NAME=CHECKPOINT"),
    (["--self-play-pool", "runner=none.pt"], "--self-play-pool runner: no such checkpoint: 'none.pt'"),
], ids=["window", "save", "team-change", "swap", "latest", "latest-nan", "outcome", "pool-no-checkpoint",
        "pool-name-space-path", "pool-spaces", "pool-missing"])
def test_a_bad_self_play_setting_gets_one_line(flags, message, tmp_path, port):
    (tmp_path / "x.pt").write_bytes(b"")
    proc = run_script(SCRIPT, *game_argv(TAG, port, *flags), cwd=tmp_path, check=False)
    assert_one_line_error(proc, message)
    assert not (tmp_path / "runs").exists() and not game_pids(port)


def test_self_play_settings_are_for_training(tag_run, tmp_path, port):
    proc = run_script(SCRIPT, *game_argv(TAG, port, "--self-play-window", "3", "--eval-checkpoint", str(tag_run[0])),
                      cwd=tmp_path, check=False)
    assert_one_line_error(proc, "--self-play-window is a setting of training: --eval-checkpoint and "
                                "--export-checkpoint play or export each policy's own weights")


@pytest.mark.parametrize("game, flags, message", [
    (VS_SCRIPTED_RUNNER, [], "self-play needs a game of two or more policy names, which take turns to learn; its "
                             "agents' policy names are 'chaser'"),
    (TAG, ["--frozen-policy", "runner={tag}"], "self-play needs two policies that learn, to take turns; "
                                               "--frozen-policy leaves 'chaser' alone"),
    (TAG, ["--self-play-pool", "keeper={tag}"], "--self-play-pool keeper: the game has no policy 'keeper'; its "
                                                "agents' policy names are 'chaser', 'runner'"),
    (TAG, ["--self-play-pool", "chaser={runner}"], "the saved policy for 'chaser' observes [('obs', (5,))]"),
    (TAG, ["--frozen-policy", "runner={tag}", "--self-play-pool", "runner={tag}"],
     "--self-play-pool runner: policy 'runner' is frozen (--frozen-policy): it has no pool"),
    (TAG, ["--self-play-outcome", "terminated=seeker"], "--self-play-outcome terminated=seeker: the game has no "
                                                        "policy 'seeker'"),
], ids=["one-policy", "one-learns", "pool-unknown-name", "pool-spaces-differ", "pool-of-a-frozen-policy",
        "outcome-unknown-name"])
def test_a_self_play_the_game_cannot_play_gets_one_line(game, flags, message, tag_run, runner_only, tmp_path,
                                                         port):
    flags = [flag.format(tag=tag_run[0], runner=runner_only) for flag in flags]
    proc = run_script(SCRIPT, *game_argv(game, port, *flags), cwd=tmp_path, check=False)
    assert_one_line_error(proc, message)
    assert not (tmp_path / "runs").exists() and not game_pids(port)


def test_a_team_change_shorter_than_a_rollout_gets_a_note(tmp_path, port):
    needs_godot()
    proc = run_script(SCRIPT, *game_argv(TAG, port, "--self-play-team-change", "100",
                                         "--total-timesteps", "256"), cwd=tmp_path)
    assert ("ppo_godot_self_play.py: note: --self-play-team-change 100 is shorter than one rollout of policy "
            "'chaser' (8 agents x --num-steps 16 = 128): the learning policy changes after every rollout"
            ) in proc.stdout.splitlines()
