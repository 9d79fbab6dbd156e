"""ppo_godot.py's ONNX export against the plugin's own inference (conftest.plugin_inference), for
every action layout the plugin reads and for observations in several keys, declared in an order
that is not alphabetical (cameras: ppo_godot_camera.py's); and --export-checkpoint, which exports a
saved model with no game."""
import onnxruntime
import pytest
import torch

import ppo_godot
import ppo_godot_camera
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
# Cameras ("2d" keys, shapes (H, W, C)), ppo_godot_camera.py's: one alone, as in the plugin's VirtualCamera
# example, and one beside vector keys, each with every kind of action
CAMERAS = {"camera only": {"camera_2d": (36, 36, 3)},
           "camera and vectors": {"velocity": 2, "rgb_2d": (40, 36, 3), "position": 2}}
ACTIONS = {"discrete": {"move": ("discrete", 5)}, "continuous": {"move": ("continuous", 2)},
           "mixed": {"sprint": ("discrete", 2), "direction": ("continuous", 2)}}
LAYOUTS.update({f"{cameras}, {kind} actions": (CAMERAS[cameras], ACTIONS[kind])
                for cameras in CAMERAS for kind in ACTIONS})


def as_layout(obs_space):
    """GodotVecEnv's obs_layout: keys sorted (godot-rl's Dict sorts them), each with its shape."""
    return [(key, (shape,) if isinstance(shape, int) else shape) for key, shape in sorted(obs_space.items())]


def exported(agent, obs_space, path, script=ppo_godot):
    script.export_onnx(agent, as_layout(obs_space), str(path))
    return onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("plugin", ["plugin", "older plugin"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_plugin_plays_the_exported_policy_as_torch_does(layout, plugin, tmp_path):
    """older plugin: its argmax starts at 0 (6245daa until fda220a), which the export's shifted discrete
    outputs (each head's largest is 1) still read right."""
    obs_space, action_space = LAYOUTS[layout]
    camera = "camera" in layout  # a CNN's sums, in another order in onnxruntime: ~1e-5 apart
    script = ppo_godot_camera if camera else ppo_godot
    torch.manual_seed(0)
    agent = script.Agent(as_layout(obs_space), [(name, kind, size) for name, (kind, size) in action_space.items()])
    with torch.no_grad():  # a policy far from uniform, with means inside and outside [-1, 1]
        agent.actor[-1].weight.normal_(std=2.0)
    session = exported(agent, obs_space, tmp_path / "policy.onnx", script)
    assert {i.name for i in session.get_inputs()} == set(obs_space) | {"state_ins"}
    assert [o.name for o in session.get_outputs()] == ["output", "state_outs"]
    assert_plugin_plays_like_torch(agent, session, obs_space, action_space, n=50 if camera else 200,
                                   tol=1e-4 if camera else 1e-5, older=plugin == "older plugin")


def test_an_observation_key_named_like_a_plugin_input_is_refused(tmp_path):
    agent = ppo_godot.Agent([("state_ins", (2,))], [("move", "discrete", 2)])
    with pytest.raises(SystemExit):
        ppo_godot.export_onnx(agent, [("state_ins", (2,))], str(tmp_path / "policy.onnx"))
    assert not list(tmp_path.iterdir())


def test_export_checkpoint_needs_no_game(monkeypatch, tmp_path):
    monkeypatch.setattr(ppo_godot, "make_envs", lambda args: fake_game())
    run_dir = ppo_godot.train(ppo_godot.parse_args(GODOT.short + ["--save-model", "--log-dir", str(tmp_path)]))
    checkpoint = f"{run_dir}/ppo_godot.pt"
    onnx_path = tmp_path / "policy.onnx"
    proc = run_script("ppo_godot.py", "--export-checkpoint", str(checkpoint), "--onnx-export-path", str(onnx_path),
                      cwd=tmp_path)
    assert f"exported to {onnx_path}" in proc.stdout
    agent = ppo_godot.Agent([("obs", (4,))], [("move", "discrete", 2)])
    agent.load_state_dict(torch.load(checkpoint)["model"])
    session = onnxruntime.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    assert_plugin_plays_like_torch(agent, session, {"obs": 4}, {"move": ("discrete", 2)})


def test_a_checkpoint_saved_before_cameras_still_exports(monkeypatch, tmp_path):
    """Checkpoints saved before cameras came record each key's size as a number, not a shape."""
    monkeypatch.setattr(ppo_godot, "make_envs", lambda args: fake_game())
    run_dir = ppo_godot.train(ppo_godot.parse_args(GODOT.short + ["--log-dir", str(tmp_path)]))
    checkpoint = torch.load(f"{run_dir}/ppo_godot.pt")
    assert [tuple(k) for k in checkpoint["args"]["obs_layout"]] == [("obs", (4,))]
    checkpoint["args"]["obs_layout"] = [("obs", 4)]  # as 05f8f71 saved it: each key's size a number
    torch.save(checkpoint, tmp_path / "old.pt")
    proc = run_script("ppo_godot.py", "--export-checkpoint", str(tmp_path / "old.pt"), "--onnx-export-path",
                      str(tmp_path / "old.onnx"), cwd=tmp_path)
    assert "exported to" in proc.stdout
    session = onnxruntime.InferenceSession(str(tmp_path / "old.onnx"), providers=["CPUExecutionProvider"])
    obs_input = session.get_inputs()[0]
    assert obs_input.name == "obs" and obs_input.shape[1] == 4
