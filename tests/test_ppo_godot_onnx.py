"""ppo_godot.py's ONNX export against the plugin's own inference (conftest.plugin_inference), for
every action layout the plugin reads and for observations in several keys, declared in an order
that is not alphabetical; and --export-checkpoint, which exports a saved model with no game."""
import onnxruntime
import pytest
import torch

import ppo_godot
from conftest import GODOT, assert_plugin_plays_like_torch, fake_game, run_script

LAYOUTS = {  # the game's declared observation and action spaces, as its env_info sends them
    "one discrete action": ({"obs": 4}, {"move": ("discrete", 5)}),
    "two discrete, not alphabetical": ({"velocity": 3, "to_target": 2, "position": 2},
                                       {"jump": ("discrete", 3), "aim": ("discrete", 2)}),
    "continuous, not alphabetical": ({"obs": 4}, {"move": ("continuous", 2), "aim": ("continuous", 1)}),
    "mixed": ({"to_target": 2, "position": 2},
              {"sprint": ("discrete", 2), "direction": ("continuous", 2)}),
    "mixed, discrete between continuous": ({"rays": 5, "obs": 3}, {"move": ("continuous", 2),
                                           "weapon": ("discrete", 3), "aim": ("continuous", 1)}),
}


def exported(agent, obs_space, path):
    obs_layout = sorted(obs_space.items())  # GodotVecEnv's order: godot-rl's Dict sorts the keys
    ppo_godot.export_onnx(agent, obs_layout, str(path))
    return onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_plugin_plays_the_exported_policy_as_torch_does(layout, tmp_path):
    obs_space, action_space = LAYOUTS[layout]
    torch.manual_seed(0)
    agent = ppo_godot.Agent(sum(obs_space.values()),
                            [(name, kind, size) for name, (kind, size) in action_space.items()])
    with torch.no_grad():  # a policy far from uniform, with means inside and outside [-1, 1]
        agent.actor[-1].weight.normal_(std=2.0)
    session = exported(agent, obs_space, tmp_path / "policy.onnx")
    assert {i.name for i in session.get_inputs()} == set(obs_space) | {"state_ins"}
    assert [o.name for o in session.get_outputs()] == ["output", "state_outs"]
    assert_plugin_plays_like_torch(agent, session, obs_space, action_space)


def test_an_observation_key_named_like_a_plugin_input_is_refused(tmp_path):
    agent = ppo_godot.Agent(2, [("move", "discrete", 2)])
    with pytest.raises(SystemExit):
        ppo_godot.export_onnx(agent, [("state_ins", 2)], str(tmp_path / "policy.onnx"))
    assert not list(tmp_path.iterdir())


def test_export_checkpoint_needs_no_game(monkeypatch, tmp_path):
    monkeypatch.setattr(ppo_godot, "make_envs", lambda args: fake_game())
    run_dir = ppo_godot.train(ppo_godot.parse_args(GODOT.short + ["--save-model", "--log-dir", str(tmp_path)]))
    checkpoint = f"{run_dir}/ppo_godot.pt"
    onnx_path = tmp_path / "policy.onnx"
    proc = run_script("ppo_godot.py", "--export-checkpoint", str(checkpoint), "--onnx-export-path", str(onnx_path),
                      cwd=tmp_path)
    assert f"exported to {onnx_path}" in proc.stdout
    agent = ppo_godot.Agent(4, [("move", "discrete", 2)])
    agent.load_state_dict(torch.load(checkpoint)["model"])
    session = onnxruntime.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    assert_plugin_plays_like_torch(agent, session, {"obs": 4}, {"move": ("discrete", 2)})
