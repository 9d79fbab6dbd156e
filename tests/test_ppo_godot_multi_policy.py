"""ppo_godot_multi_policy.py: several policies in one game, on the real engine: the Chase game's tag mode, whose
chasers (4 floats, a discrete move of 5) and runners (5 floats, a continuous move of 2) are two policy
names. Each learns from its own agents' rows, logs under its own tags, is saved, resumed, played and
exported on its own; --frozen-policy plays one from a checkpoint and keeps it fixed."""
import copy
import pickle
import re

import numpy as np
import onnxruntime
import pytest
import torch

import ppo_godot_multi_policy as multi
from conftest import (REPO, assert_one_line_error, assert_plugin_plays_like_torch, free_port, game_pids, needs_godot,
                      read_scalars, run_dirs, run_script, saved_agents)

SCRIPT = "ppo_godot_multi_policy.py"
GAMES = REPO / "godot" / "chase"
TAG, VS_SCRIPTED_RUNNER, VS_SCRIPTED_CHASER = (str(GAMES / f"chase_tag{mode}.x86_64") for mode in
                                                ("", "_scripted_runner", "_scripted_chaser"))
SPACES = {"chaser": ({"obs": 4}, {"move": ("discrete", 5)}), "runner": ({"obs": 5}, {"move": ("continuous", 2)})}
LOSSES = ["losses/policy_loss", "losses/value_loss", "losses/entropy", "losses/approx_kl", "losses/clipfrac",
          "losses/explained_variance", "diagnostics/grad_norm", "charts/learning_rate"]


def game_argv(game, port, *extra):  # 16 agents x 16 steps: 256 rows an iteration, 128 of each policy
    return ["--env-path", game, "--port", str(port), "--num-steps", "16", *extra]


@pytest.fixture(scope="module")
def tag_run(tmp_path_factory):
    """A finished two-policy run of 2 iterations, exported: (checkpoint, ONNX path given, stdout)."""
    needs_godot()
    folder = tmp_path_factory.mktemp("tag_run")
    proc = run_script(SCRIPT, *game_argv(TAG, free_port(), "--total-timesteps", "512"),
                      "--onnx-export-path", str(folder / "tag.onnx"), cwd=folder)
    return run_dirs(folder)[0] / "ppo_godot_multi_policy.pt", folder / "tag.onnx", proc.stdout


def test_each_policy_learns_from_its_own_agents_rows_only(port, tmp_path, monkeypatch, capsys):
    needs_godot()
    updates = []
    original = multi.ppo_update

    def recording(args, agent, optimizer, storage, *rest):
        updates.append((agent, {key: np.copy(rows) for key, rows in vars(storage).items()}))
        return original(args, agent, optimizer, storage, *rest)

    monkeypatch.setattr(multi, "ppo_update", recording)
    # 8 iterations: 128 steps of each agent, so that every pair's episode has ended (by 100 steps, a time-out)
    argv = game_argv(TAG, port, "--total-timesteps", "2100", "--norm-reward", "false", "--log-dir", str(tmp_path))
    run_dir = multi.train(multi.parse_args(argv))
    assert ("ppo_godot_multi_policy.py: note: --total-timesteps 2100 is not a whole number of rollouts (16 agents x "
            "--num-steps 16 = 256): 8 rollouts run, 2048 steps") in capsys.readouterr().out.splitlines()
    assert not game_pids(port)

    assert len(updates) == 16 and updates[0][0] is updates[14][0] and updates[1][0] is updates[15][0]
    (chaser, chaser_rows), (runner, runner_rows) = updates[-2:]
    assert chaser is not runner and chaser.heads == [("discrete", 5)] and runner.heads == [("continuous", 2)]
    assert chaser_rows["obs"].shape == (16, 8, 4) and runner_rows["obs"].shape == (16, 8, 5)
    assert chaser_rows["actions"].shape == (16, 8, 1) and runner_rows["actions"].shape == (16, 8, 2)
    assert set(np.unique(chaser_rows["actions"])) <= set(range(5))
    assert ((runner_rows["obs"][..., 4] >= 0) & (runner_rows["obs"][..., 4] <= 1)).all()  # share of episode left
    # chaser k and runner k are one pair of the game: their rewards are opposed, step by step
    np.testing.assert_allclose(chaser_rows["rewards"], -runner_rows["rewards"], atol=1e-5)
    assert (chaser_rows["terminations"] == runner_rows["terminations"]).all()

    scalars = read_scalars(run_dir)
    for tag in LOSSES + ["charts/episodic_return", "charts/episodic_length"]:
        assert tag not in scalars  # no tag without its policy's name
        for name in ("chaser", "runner"):
            assert len(scalars[f"{tag}/{name}"]) >= (2 if tag in LOSSES else 8), f"{tag}/{name}"
    assert [step for step, _ in scalars["charts/SPS"]] == [256 * i for i in range(1, 9)]


def test_a_two_policy_run_saves_and_exports_a_model_for_each(tag_run):
    checkpoint, onnx_path, stdout = tag_run
    agents = saved_agents(checkpoint)
    assert list(agents) == ["chaser", "runner"]
    for name, (agent, obs_layout) in agents.items():
        assert [(key, tuple(shape)) for key, shape in obs_layout] == [("obs", (SPACES[name][0]["obs"],))]
        exported = onnx_path.with_name(f"tag_{name}.onnx")
        assert str(exported) in stdout
        session = onnxruntime.InferenceSession(str(exported), providers=["CPUExecutionProvider"])
        assert_plugin_plays_like_torch(agent, session, *SPACES[name])
    assert not onnx_path.exists()  # a file per policy, none under the name given

    # and from the checkpoint alone, with no game
    export = run_script(SCRIPT, "--export-checkpoint", str(checkpoint), "--onnx-export-path",
                        str(onnx_path.with_name("again.onnx")), cwd=checkpoint.parent)
    assert export.stdout.count("exported to") == 2
    for name in agents:
        assert onnx_path.with_name(f"again_{name}.onnx").exists()


def test_a_resumed_two_policy_run_starts_from_both_saved_policies_and_their_optimizer(tag_run, tmp_path, port,
                                                                                      monkeypatch, capsys):
    checkpoint, _, _ = tag_run
    resumed_path = tmp_path / "run" / "ppo_godot_multi_policy.pt"
    resumed_path.parent.mkdir()
    resumed_path.write_bytes(checkpoint.read_bytes())
    saved = torch.load(resumed_path)
    first_weights = {}
    original = multi.Agent.evaluate_actions

    def recording(self, x, action):  # each policy's weights at its first update of the second life
        kind = self.heads[0][0]  # the chaser's action is discrete, the runner's continuous
        if torch.is_grad_enabled() and kind not in first_weights:
            first_weights[kind] = {k: v.clone() for k, v in self.state_dict().items()}
        return original(self, x, action)

    monkeypatch.setattr(multi.Agent, "evaluate_actions", recording)
    optimizers, start = [], multi.GameRun.start

    def recording_start(self):  # the optimizer's state once the run has resumed
        started = start(self)
        optimizers.append(copy.deepcopy(self.optimizer.state_dict()))
        return started

    monkeypatch.setattr(multi.GameRun, "start", recording_start)
    multi.train(multi.parse_args(["--resume", str(resumed_path), "--port", str(port),
                                          "--total-timesteps", "1100", "--checkpoint-minutes", "0",
                                          "--onnx-export-path", str(tmp_path / "r.onnx")]))
    out = capsys.readouterr().out.splitlines()
    assert ("resume: the run goes on from global_step=512 (iteration 2) to global_step=1024, the whole rollouts of "
            "256 steps in --total-timesteps 1100") in out
    assert [line.split()[1] for line in out if line.endswith("s (checkpoint saved)")] == [
        "global_step=768", "global_step=1024"]
    for kind, name in (("discrete", "chaser"), ("continuous", "runner")):
        weights = {k[len(f"agents.{name}."):]: v for k, v in saved["model"].items() if k.startswith(f"agents.{name}.")}
        assert weights and weights.keys() == first_weights[kind].keys()
        assert all(torch.equal(first_weights[kind][k], v) for k, v in weights.items()), name
    saved_optimizer = pickle.loads(saved["resume"])["optimizer"]
    n_parameters = sum(len(list(agent.parameters())) for agent, _ in saved_agents(resumed_path).values())
    assert len(saved_optimizer["state"]) == n_parameters  # Adam's moments of both policies' every weight
    assert all(torch.equal(optimizers[0]["state"][i]["exp_avg"], state["exp_avg"])
               for i, state in saved_optimizer["state"].items())
    scalars = read_scalars(resumed_path.parent)
    for name in ("chaser", "runner"):
        assert [step for step, _ in scalars[f"losses/value_loss/{name}"]] == [768, 1024]  # the second life's


def test_evaluation_plays_every_policy_the_game_names(tag_run, tmp_path, port):
    checkpoint, _, _ = tag_run
    both = run_script(SCRIPT, *game_argv(TAG, port, "--eval-checkpoint", str(checkpoint),
                                                 "--eval-episodes", "8"), cwd=tmp_path)
    for greedy in ("greedy", "sampled"):
        means = {name: re.search(rf"^{greedy} policy {name}: mean_return=(\S+) \+- \S+ over (\d+) episodes$",
                                 both.stdout, flags=re.M).groups() for name in ("chaser", "runner")}
        # each policy gets its own agents' episodes: 8 agents of each, one episode each; and a chaser's
        # reward is its runner's, negated, step by step, so each pair's returns cancel
        assert means["chaser"][1] == means["runner"][1] == "8", means
        assert abs(float(means["chaser"][0]) + float(means["runner"][0])) <= 0.1, means
    # against the game's scripted runner, the checkpoint's chaser plays alone
    alone = run_script(SCRIPT, *game_argv(VS_SCRIPTED_RUNNER, port, "--eval-checkpoint", str(checkpoint),
                                                  "--eval-episodes", "8"), cwd=tmp_path)
    assert "greedy policy chaser: mean_return=" in alone.stdout and "runner" not in alone.stdout


def test_a_frozen_policy_plays_its_saved_weights_and_never_learns(tag_run, tmp_path, port):
    checkpoint, _, _ = tag_run
    proc = run_script(SCRIPT, *game_argv(TAG, port, "--total-timesteps", "2048",  # every pair's episode ends
                                                 "--frozen-policy", f"runner={checkpoint}"), cwd=tmp_path)
    saved_at = torch.load(checkpoint, weights_only=True)["global_step"]
    assert (f"policy 'runner' is frozen: its weights from {checkpoint} (run {checkpoint.parent.name}, "
            f"ppo_godot_multi_policy.py, global_step={saved_at})") in proc.stdout.splitlines()
    episode_lines = [line for line in proc.stdout.splitlines() if line.startswith("global_step=")]
    assert {line.split(", episodic_return")[1].split("=")[0] for line in episode_lines} == {"/chaser", "/runner"}
    run_dir = run_dirs(tmp_path)[0]
    before, after = saved_agents(checkpoint), saved_agents(run_dir / "ppo_godot_multi_policy.pt")
    assert all(torch.equal(a, b) for a, b in zip(before["runner"][0].state_dict().values(),
                                                 after["runner"][0].state_dict().values()))
    assert not all(torch.equal(a, b) for a, b in zip(before["chaser"][0].state_dict().values(),
                                                     after["chaser"][0].state_dict().values()))
    scalars = read_scalars(run_dir)
    assert "losses/value_loss/chaser" in scalars and not any(tag.startswith("losses/") and tag.endswith("/runner")
                                                             for tag in scalars)
    assert len(scalars["charts/episodic_return/runner"]) >= 8  # it plays, and its episodes are logged


@pytest.fixture(scope="module")
def runner_only(tmp_path_factory):
    """A checkpoint of ppo_godot.py: a runner trained one iteration against the game's scripted chaser."""
    needs_godot()
    folder = tmp_path_factory.mktemp("runner_only")
    run_script("ppo_godot.py", *game_argv(VS_SCRIPTED_CHASER, free_port(), "--total-timesteps", "128"), cwd=folder)
    return run_dirs(folder)[0] / "ppo_godot.pt"


@pytest.mark.parametrize("game, frozen, message", [
    (TAG, "runner", "--frozen-policy takes NAME=CHECKPOINT"),
    (TAG, "chaser={renamed}", "holds no policy 'chaser': it holds 'seeker', 'runner'"),
    (TAG, "keeper={tag}", "the game has no policy 'keeper'; its agents' policy names are 'chaser', 'runner'"),
    (VS_SCRIPTED_RUNNER, "runner={tag}", "the game has no policy 'runner'; its agents' policy names are 'chaser'"),
    (TAG, "chaser={runner}", "the saved policy for 'chaser' observes [('obs', (5,))] and acts [('move', 'continuous', 2)]"),
    (VS_SCRIPTED_RUNNER, "chaser={tag}", "freezes every policy of the game: nothing would learn"),
    (TAG, "chaser={missing}", "no such checkpoint"),
], ids=["no-checkpoint", "unknown-in-file", "unknown-in-both", "unknown-in-game", "spaces-differ", "all-frozen",
        "missing-file"])
def test_a_bad_frozen_policy_gets_one_line(game, frozen, message, tag_run, runner_only, tmp_path, port):
    checkpoint = torch.load(tag_run[0], weights_only=True)  # the tag run's, its chaser renamed "seeker"
    checkpoint["args"]["policies"] = {{"chaser": "seeker"}.get(name, name): spec
                                      for name, spec in checkpoint["args"]["policies"].items()}
    checkpoint["model"] = {key.replace("agents.chaser.", "agents.seeker."): value
                           for key, value in checkpoint["model"].items()}
    torch.save(checkpoint, tmp_path / "renamed.pt")
    frozen = frozen.format(tag=tag_run[0], runner=runner_only, missing=tmp_path / "none.pt",
                           renamed=tmp_path / "renamed.pt")
    proc = run_script(SCRIPT, *game_argv(game, port, "--frozen-policy", frozen), cwd=tmp_path, check=False)
    assert_one_line_error(proc, message)
    assert not (tmp_path / "runs").exists() and not game_pids(port)


@pytest.mark.parametrize("frozen", [["runner", "x.pt"], ["runner = x.pt"], ["runner =x.pt"], ["runner= x.pt"]],
                         ids=["name-space-path", "spaces-around", "space-before", "space-after"])
def test_frozen_policy_spelt_otherwise_gets_the_name_checkpoint_line(frozen, tmp_path, port):
    (tmp_path / "x.pt").write_bytes(b"")  # the file exists: the line is about the spelling
    proc = run_script(SCRIPT, *game_argv(TAG, port, "--frozen-policy", *frozen), cwd=tmp_path, check=False)
    assert_one_line_error(proc, f"--frozen-policy takes NAME=CHECKPOINT (a policy the game names, a .pt file), "
                                f"got {' '.join(frozen)!r}")
    assert not (tmp_path / "runs").exists() and not game_pids(port)


def test_frozen_policy_is_for_training_only(tag_run, tmp_path, port):
    proc = run_script(SCRIPT, *game_argv(TAG, port, "--eval-checkpoint", str(tag_run[0]),
                                                 "--frozen-policy", f"runner={tag_run[0]}"), cwd=tmp_path, check=False)
    assert_one_line_error(proc, "--frozen-policy is for training")


class TwoPolicies:
    """The games' vector env as NormalizeReward sees it: agents 0-1 of policy "big", 2-3 of "small"."""
    policies = {name: multi.argparse.Namespace(agent_ids=np.array(agents))
                for name, agents in (("big", [0, 1]), ("small", [2, 3]))}
    num_envs = 4

    def step(self, actions):
        reward = np.array([100.0, 100.0, 0.01, 0.01], dtype=np.float32)
        return None, reward, np.zeros(4, bool), np.zeros(4, bool), {"autoreset": np.zeros(4, bool)}


def test_each_policy_s_rewards_are_scaled_by_its_own_statistics():
    """Rewards 10,000 times apart come out of --norm-reward on one scale: a statistic per policy."""
    envs = multi.NormalizeReward(TwoPolicies(), gamma=0.99)
    for _ in range(50):
        _, reward, _, _, _ = envs.step(None)
    assert reward[0] == reward[1] and reward[2] == reward[3]
    assert 0.5 < reward[0] / reward[2] < 2


def test_policies_of_other_widths_each_read_their_own_columns_and_export_their_own_inputs(tmp_path):
    """Where policies of other layouts meet in one batch: each policy's Agent is built from its own
    layout, reads its own agents' rows cut to its own width (the rows are float32, padded to the
    widest), answers in its own columns of the padded action row, and exports its own ONNX inputs."""
    watcher = multi.argparse.Namespace(obs_layout=[("eye", (8,))], action_heads=[("turn", "discrete", 3)],
                                       agent_ids=np.array([0, 2]), width=8, columns=1)
    mover = multi.argparse.Namespace(obs_layout=[("obs", (5,))], action_heads=[("move", "continuous", 2)],
                                     agent_ids=np.array([1]), width=5, columns=2)
    agents = multi.AgentPerPolicy({"watcher": watcher, "mover": mover})
    rows = torch.randn(3, 8)
    rows[1, 5:] = 0  # the mover's padding
    with torch.no_grad():
        action = agents.get_action(rows, greedy=True)
        assert action.shape == (3, 2) and (action[[0, 2], 1] == 0).all()  # the watcher's row padded
        assert torch.equal(action[[0, 2], :1], agents["watcher"].get_action(rows[[0, 2]], greedy=True))
        assert torch.equal(action[[1]], agents["mover"].get_action(rows[[1], :5], greedy=True))
    rollout = multi.argparse.Namespace(obs=np.zeros((4, 3, 8), np.float32), actions=np.zeros((4, 3, 2), np.float32),
                                       rewards=np.zeros((4, 3)), terminations=np.zeros((4, 3)),
                                       truncations=np.zeros((4, 3)), is_transition=np.ones((4, 3), bool))
    learned = {}
    for name, policy in agents.policies.items():
        storage, next_obs = multi.policy_share(policy, rollout, rows.numpy())
        learned[name] = (storage.obs.shape, storage.actions.shape, next_obs.shape)
    assert learned == {"watcher": ((4, 2, 8), (4, 2, 1), (2, 8)), "mover": ((4, 1, 5), (4, 1, 2), (1, 5))}
    written = multi.export_policy(agents, multi.argparse.Namespace(
        onnx_export_path=str(tmp_path / "two.onnx"), gdscript_export_path=None))
    assert "two_watcher.onnx" in written and "two_mover.onnx" in written
    for name, key in (("watcher", "eye"), ("mover", "obs")):
        session = onnxruntime.InferenceSession(str(tmp_path / f"two_{name}.onnx"), providers=["CPUExecutionProvider"])
        assert [i.name for i in session.get_inputs()] == [key, "state_ins"]
