"""ppo_godot_lstm.py on the real Chase game: each agent's LSTM state is zero exactly where its episode starts,
for both ways a game resets a finished agent (gymnasium-like, the demo game; on the spot, like the plugin),
and the update's replay of whole agent sequences gives back the rollout's log pi_old and V."""
import argparse
import re

import numpy as np
import pytest
import torch

import ppo_godot_lstm
from conftest import CHASE, REPO, assert_one_line_error, free_port, needs_godot, run_script
from test_gdscript_export import ENGINES, as_get_obs, far_from_uniform, needs, played_alone

GAMES = {"memory": str(REPO / "godot" / "chase" / "chase_memory.x86_64"),
         "plugin": str(REPO / "godot" / "chase" / "chase_plugin.x86_64")}


def rollout(game, num_steps=160, lstm_hidden_size=16):
    """One rollout of an untrained agent in the real game: (agent, storage, the state each step was fed)."""
    args = ppo_godot_lstm.parse_args(["--env-path", GAMES[game], "--port", str(free_port()), "--num-steps",
                                      str(num_steps), "--lstm-hidden-size", str(lstm_hidden_size)])
    envs = ppo_godot_lstm.make_envs(args)
    try:
        args.num_envs = envs.num_envs
        torch.manual_seed(0)
        agent = ppo_godot_lstm.Agent(envs.obs_layout, envs.action_heads, args.lstm_hidden_size)
        fed = []
        get_action = agent.get_action

        def recording(x, lstm_state, greedy=False):
            fed.append((lstm_state[0][0].abs().sum(-1) + lstm_state[1][0].abs().sum(-1)).numpy().copy())
            return get_action(x, lstm_state, greedy)

        agent.get_action = recording
        storage = ppo_godot_lstm.make_storage(args, envs)
        next_obs, _ = envs.reset(seed=1)
        writer = argparse.Namespace(add_scalar=lambda *a: None)
        ppo_godot_lstm.collect_rollout(envs, agent, storage, next_obs, agent.initial_state(envs.num_envs), 0,
                                       writer, torch.device("cpu"))
    finally:
        envs.close()
    agent.get_action = get_action
    return agent, storage, np.array(fed)


@pytest.mark.parametrize("game", ["memory", "plugin"])
def test_the_state_is_zero_exactly_where_an_episode_starts(game):
    """memory (gymnasium-like): after each autoreset step; plugin: after each done, whose observation is
    already the next episode's first (no autoreset step). Nowhere else."""
    needs_godot()
    _, storage, fed = rollout(game)
    zero = fed == 0
    assert zero[0].all()  # the first observations: new episodes
    np.testing.assert_array_equal(zero[1:], storage.new_episode[:-1])
    done = (storage.terminations + storage.truncations) > 0
    if game == "memory":
        np.testing.assert_array_equal(storage.new_episode[1:], done[:-1])  # the step after an end only resets
        assert not (storage.new_episode & storage.is_transition).any()
    else:
        np.testing.assert_array_equal(storage.new_episode, done)
        assert storage.is_transition.all()
    assert storage.new_episode.sum() >= 10  # episodes did end (time-outs after 100 steps at least)


@pytest.mark.parametrize("game", ["memory", "plugin"])
def test_the_replay_of_whole_sequences_gives_the_rollouts_log_probs_and_values(game):
    """Before any gradient step, evaluate_actions on each minibatch of whole agent sequences (runs cut where
    episodes start, each from the kept or a zero state) gives what get_action computed step by step."""
    needs_godot()
    agent, storage, _ = rollout(game)
    b_obs = torch.as_tensor(storage.obs.swapaxes(0, 1).reshape(-1, storage.obs.shape[-1]))
    b_actions = torch.as_tensor(storage.actions.swapaxes(0, 1).reshape(-1, storage.actions.shape[-1]))
    logprobs, values = storage.logprobs.T.reshape(-1), storage.values.T.reshape(-1)
    checked = 0
    with torch.no_grad():
        for mb_inds, run_starts, lstm_state in ppo_godot_lstm.sequence_minibatches(storage, 4):
            newlogprob, _, newvalue = agent.evaluate_actions(b_obs[mb_inds], b_actions[mb_inds], lstm_state,
                                                             run_starts)
            np.testing.assert_allclose(newlogprob.numpy(), logprobs[mb_inds], rtol=0, atol=1e-5)
            np.testing.assert_allclose(newvalue.flatten().numpy(), values[mb_inds], rtol=0, atol=1e-5)
            checked += len(mb_inds)
    assert checked == storage.is_transition.sum()


@pytest.mark.parametrize("flags, message", [
    # 16 agents x 64 steps = 1024 rows divide into 32 minibatches; the 16 agents' sequences do not
    (["--num-minibatches", "32"], "the game's 16 agents do not divide into --num-minibatches 32: each minibatch "
                                  "takes whole agent sequences"),
    (["--num-steps", "1"], "--num-steps 1: ppo_godot_lstm.py needs sequences of at least 2 steps"),
    (["--lstm-hidden-size", "0"], "--lstm-hidden-size must be positive, got 0"),
])
def test_what_memory_cannot_take_is_one_line(flags, message, tmp_path):
    needs_godot()
    proc = run_script("ppo_godot_lstm.py", "--env-path", CHASE["discrete"], "--port", str(free_port()), *flags,
                      cwd=tmp_path, check=False)
    assert_one_line_error(proc, message)


def test_the_lstm_state_is_32_units_unless_told():
    """32, not ppo_lstm.py's 128: the default the docs give, with why."""
    assert ppo_godot_lstm.parse_args([]).lstm_hidden_size == 32
    why = r"Its state is 32\s+units, not ppo_lstm.py's 128 \(`--lstm-hidden-size`\): the exported GDScript\s+pays for"
    assert re.search(why, (REPO / "docs" / "training-godot-games.md").read_text())


def test_eval_checkpoint_zeroes_each_agent_s_state_where_its_episode_starts_in_a_plugin_game(tmp_path, monkeypatch):
    """A plugin-like game resets an agent on the spot: the observation sent with done is already the next
    episode's first, and --eval-checkpoint feeds it a zero state, as training does; nowhere else."""
    needs_godot()
    argv = ["--env-path", GAMES["plugin"], "--num-steps", "32", "--lstm-hidden-size", "16"]
    run_dir = ppo_godot_lstm.train(ppo_godot_lstm.parse_args(argv + [
        "--port", str(free_port()), "--total-timesteps", "512", "--save-model", "--log-dir", str(tmp_path)]))
    fed, done = [], []
    get_action, step = ppo_godot_lstm.Agent.get_action, ppo_godot_lstm.GodotVecEnv.step

    def recording_get_action(agent, x, lstm_state, greedy=False):
        fed.append((lstm_state[0][0].abs().sum(-1) + lstm_state[1][0].abs().sum(-1)).numpy().copy())
        return get_action(agent, x, lstm_state, greedy)

    def recording_step(envs, actions):
        reply = step(envs, actions)
        done.append(reply[2] | reply[3])
        return reply

    monkeypatch.setattr(ppo_godot_lstm.Agent, "get_action", recording_get_action)
    monkeypatch.setattr(ppo_godot_lstm.GodotVecEnv, "step", recording_step)
    returns = ppo_godot_lstm.evaluate(ppo_godot_lstm.parse_args(argv + [
        "--port", str(free_port()), "--eval-checkpoint", f"{run_dir}/ppo_godot_lstm.pt", "--eval-episodes", "32"]))
    zero, done = np.array(fed) == 0, np.array(done)
    assert zero[0].all()  # the first observations: new episodes
    np.testing.assert_array_equal(zero[1:], done[:-1])
    assert len(returns) == 32 and done.sum() >= 32


OTHER_SCRIPTS_CHECKPOINTS = {  # what a checkpoint of each holds that this script's never does
    "ppo_godot_camera.py": {"obs_layout": [("camera_2d", (36, 36, 3))], "action_heads": [("move", "discrete", 5)]},
    "ppo_godot_multi_policy.py": {"policies": {"chaser": {}, "runner": {}}},
}


@pytest.mark.parametrize("flags", [["--eval-checkpoint", "{path}"], ["--resume", "{path}"],
                                   ["--export-checkpoint", "{path}", "--onnx-export-path", "policy.onnx"]],
                         ids=["eval", "resume", "export"])
@pytest.mark.parametrize("script", OTHER_SCRIPTS_CHECKPOINTS)
def test_another_script_s_checkpoint_gets_one_line_naming_it(script, flags, tmp_path, monkeypatch, capsys):
    """A camera game's or a game of several policies' checkpoint, given to this script by mistake."""
    monkeypatch.chdir(tmp_path)
    torch.save({"script": script, "model": {}, "args": OTHER_SCRIPTS_CHECKPOINTS[script]}, tmp_path / "other.pt")
    with pytest.raises(SystemExit) as stop:
        args = ppo_godot_lstm.parse_args([flag.format(path=tmp_path / "other.pt") for flag in flags])
        if args.export_checkpoint:
            ppo_godot_lstm.export_checkpoint(args.export_checkpoint, args)
        else:
            ppo_godot_lstm.evaluate(args)
    assert stop.value.code == 2 and not list(tmp_path.glob("policy*"))
    assert capsys.readouterr().err == (f"ppo_godot_lstm.py: error: '{tmp_path / 'other.pt'}' was saved by {script}; "
                                       f"evaluate or resume it with that script\n")


def played_episodes(game, steps=300, lstm_hidden_size=16):
    """An agent with a policy far from uniform (far_from_uniform) plays the real game greedily, its state carried
    and zeroed as in training: (agent, layout, heads, the observations every agent was fed in turn, None where
    its state was zeroed, and torch's actions for them)."""
    args = ppo_godot_lstm.parse_args(["--env-path", GAMES.get(game, CHASE.get(game)), "--port", str(free_port())])
    envs = ppo_godot_lstm.make_envs(args)
    try:
        torch.manual_seed(0)
        agent = ppo_godot_lstm.Agent(envs.obs_layout, envs.action_heads, lstm_hidden_size)
        far_from_uniform(agent.actor, envs.action_heads)
        per_agent = [[None] for _ in range(envs.num_envs)]  # None: a reset, here the first episodes' start
        actions = [[] for _ in range(envs.num_envs)]
        obs, _ = envs.reset(seed=1)
        lstm_state = agent.initial_state(envs.num_envs)
        for _ in range(steps):
            with torch.no_grad():
                action, _, _, lstm_state = agent.get_action(torch.as_tensor(obs), lstm_state, greedy=True)
            for i in range(envs.num_envs):
                per_agent[i].append(obs[i])
                actions[i].append(ppo_godot_lstm.to_game_action(action[i].numpy(), envs.action_heads))
            obs, _, _, _, infos = envs.step(action.numpy())
            lstm_state = ppo_godot_lstm.forget(lstm_state, infos["new_episode"])
            for i in np.nonzero(infos["new_episode"])[0]:
                per_agent[i].append(None)
    finally:
        envs.close()
    return agent, envs.obs_layout, envs.action_heads, sum(per_agent, []), sum(actions, [])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("game", ["memory", "continuous"])
def test_the_exported_file_remembers_as_torch_does_over_whole_episodes(game, engine, tmp_path):
    """Every agent's whole stream of episodes (300 steps each, its resets included) on one instance of the file,
    reset() where the state is zeroed: the same discrete actions as torch, continuous ones within 1e-5."""
    needs(engine)
    agent, obs_layout, action_heads, observations, expected = played_episodes(game)
    assert sum(row is None for row in observations) > 32  # episodes ended and began again
    path = tmp_path / "policy.gd"
    ppo_godot_lstm.export_gdscript(agent, obs_layout, action_heads, str(path), "the tests")
    played = ENGINES[engine](path, [None if row is None else as_get_obs(row, obs_layout) for row in observations],
                             tmp_path)
    assert len(played) == len(expected) == 16 * 300
    for i, (got, want) in enumerate(zip(played, expected)):
        for name, kind, _ in action_heads:
            if kind == "discrete":
                assert got[name] == want[name], (i, name, got, want)
            else:
                np.testing.assert_allclose(got[name], want[name], rtol=0, atol=1e-5, err_msg=f"{i} {name}")


def test_the_demo_plays_the_recurrent_file_alone_as_eval_checkpoint_does(tmp_path):
    """godot/chase/main.gd --policy, no Python: one instance of the file per agent, reset where its episode
    starts anew; each agent's first episodes give --eval-checkpoint's greedy mean."""
    needs_godot()
    argv = ["--env-path", GAMES["memory"], "--num-steps", "32", "--lstm-hidden-size", "16"]
    run_dir = ppo_godot_lstm.train(ppo_godot_lstm.parse_args(argv + [
        "--port", str(free_port()), "--total-timesteps", "8192", "--save-model", "--log-dir", str(tmp_path)]))
    checkpoint = f"{run_dir}/ppo_godot_lstm.pt"
    returns = ppo_godot_lstm.evaluate(ppo_godot_lstm.parse_args(argv + [
        "--port", str(free_port()), "--eval-checkpoint", checkpoint, "--eval-episodes", "48", "--seed", "3"]),
        greedy=True)
    run_script("ppo_godot_lstm.py", "--export-checkpoint", checkpoint, "--gdscript-export-path",
               tmp_path / "policy.gd", cwd=tmp_path)
    means = played_alone(GAMES["memory"], {"": tmp_path / "policy.gd"}, 48, 3, tmp_path)
    assert means == {"shared_policy": (pytest.approx(np.mean(returns), abs=1e-4), len(returns))}


@pytest.mark.parametrize("part, network, line", [
    ("encoder", torch.nn.Sequential(torch.nn.Linear(4, 64), torch.nn.ELU()), "the encoder is Linear -> ELU; the "
                                                                            "export writes Linear layers"),
    ("actor", torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.Sigmoid(), torch.nn.Linear(8, 5)),
     "the actor is Linear -> Sigmoid -> Linear; the export writes Linear layers"),
])
def test_an_encoder_or_actor_the_export_cannot_write_gets_one_line(part, network, line, tmp_path, capsys):
    """The file writes the encoder and the actor layer by layer: a layer it has no GDScript for in either is one
    line, and no file."""
    obs_layout, heads = [("obs", (4,))], [("move", "discrete", 5)]
    agent = ppo_godot_lstm.Agent(obs_layout, heads, 16)
    setattr(agent, part, network)
    with pytest.raises(SystemExit) as stop:
        ppo_godot_lstm.export_gdscript(agent, obs_layout, heads, str(tmp_path / "policy.gd"), "the tests")
    assert stop.value.code == 2 and not list(tmp_path.iterdir())
    assert capsys.readouterr().err == f"ppo_godot_lstm.py: error: --gdscript-export-path: {line}, each one followed " \
                                      f"by Tanh, ReLU or nothing\n"


def test_the_onnx_model_takes_the_state_in_and_gives_it_out(tmp_path):
    """The ONNX export's state_ins and state_outs are [1, 2 x lstm_hidden_size] (h, then c): fed back each step
    and zeroed where an episode starts, the model acts as torch does over whole episodes. The plugin's own
    inference feeds state_ins a constant of one value (sync.gd's _inference_process and ONNXInference.cs's
    RunInference, the plugin at bf5d6a2), which this model refuses: a game runs it with the state itself."""
    import onnxruntime

    needs_godot()
    agent, obs_layout, action_heads, observations, expected = played_episodes("memory", steps=120)
    path = tmp_path / "policy.onnx"
    ppo_godot_lstm.export_onnx(agent, obs_layout, str(path))
    session = onnxruntime.InferenceSession(str(path))
    assert [(i.name, i.shape[1]) for i in session.get_inputs()] == [("obs", 4), ("state_ins", 32)]
    played, state = [], None
    for row in observations:
        if row is None:
            state = np.zeros((1, 32), np.float32)
            continue
        output, state = session.run(["output", "state_outs"], {"obs": np.array([row], np.float32), "state_ins": state})
        played.append({"move": int(output[0].argmax())})
    assert played == expected
    with pytest.raises(Exception, match="state_ins"):  # what the plugin feeds: one value
        session.run(["output"], {"obs": np.zeros((1, 4), np.float32), "state_ins": np.array([1.0], np.float32)})
