"""ppo_godot_camera.py on a game that observes through a camera: the Chase game's camera mode rendered by a
real engine (Debian's windowed Godot 3, godot3-runner, on a virtual display), decoded where the scene
put things; trained and exported; and the ways a camera game fails (no display, a headless engine,
RLlib); the vector scripts' one line for a camera game; and a camera checkpoint saved by ppo_godot.py
before cameras moved to their own file (tests/checkpoints/ppo_godot_4bb54dc_chase_camera.pt: 2 iterations of 16
agents x 16 steps, saved at commit 4bb54dc), resumed, evaluated and exported here."""
import argparse
import shutil

import numpy as np
import onnxruntime
import pytest
import torch

import ppo_godot_camera
from conftest import (CHASE, REPO, benchmark, assert_one_line_error, assert_plugin_plays_like_torch, game_pids, needs_godot,
                      read_scalars, run_dirs, run_script, saved_agents)
from test_ppo_godot import misbehaving_game
from test_rllib_godot import RAY_PROCESSES, SCRIPT, pids, rllib_script, wait_until_gone  # noqa: F401 (a fixture)

CAMERA, WALL, MARK = 36, 2, 4  # main.gd's image size, wall width and square size, in pixels


def pixel_centre(point):
    """Where main.gd draws a square's centre for a position in [-1, 1] x [-1, 1], as (column, row) in
    pixel indices: the square covers [corner, corner + MARK) on each axis."""
    return WALL + (np.asarray(point) + 1) / 2 * (CAMERA - 2 * WALL) - 0.5


def test_a_rendered_frame_shows_each_agent_and_its_target_where_they_are(display, port):
    """Blue squares at the agents' positions and red ones at their targets, x along a row, y down the
    rows, walls grey and the floor black: a flipped or transposed decoding puts them elsewhere."""
    envs = ppo_godot_camera.GodotVecEnv(ppo_godot_camera.parse_args(["--env-path", CHASE["camera"], "--port", str(port)]))
    try:
        assert envs.obs_layout == [("camera_2d", (CAMERA, CAMERA, 3))]  # declared [3, 36, 36]
        assert envs.single_observation_space.dtype == np.uint8
        envs.reset()
        game, checked = envs.games[0], 0
        rng = np.random.default_rng(0)
        for _ in range(5):
            game._send_as_json({"type": "action", "action": [{"move": int(m)} for m in rng.integers(0, 5, 16)]})
            reply = ppo_godot_camera.await_reply(game, 10)
            images = envs.observations([reply]).reshape(-1, CAMERA, CAMERA, 3)
            for image, info in zip(images, reply["info"]):
                for corner in (image[0, 0], image[-1, -1], image[WALL - 1, CAMERA // 2]):  # the walls' grey
                    assert set(corner.tolist()) <= {127, 128}
                blue = np.argwhere((image == [0, 0, 255]).all(-1))  # (row, column) of each pixel
                red = np.argwhere((image == [255, 0, 0]).all(-1))
                np.testing.assert_allclose(blue.mean(0)[::-1], pixel_centre(info["position"]), atol=1.0)
                if len(red) == MARK * MARK:  # the target, when the agent does not cover part of it
                    np.testing.assert_allclose(red.mean(0)[::-1], pixel_centre(info["target"]), atol=1.0)
                    checked += 1
                floor = np.ones((CAMERA, CAMERA), bool)
                floor[:WALL], floor[-WALL:], floor[:, :WALL], floor[:, -WALL:] = False, False, False, False
                for row, column in np.concatenate([blue, red]):
                    floor[max(row - 1, 0):row + 2, max(column - 1, 0):column + 2] = False
                assert (image[floor] == 0).all()  # the floor is black away from the squares
        assert checked >= 40
    finally:
        envs.close()


def test_the_camera_game_trains_saves_and_exports_a_model_the_plugin_can_run(display, port, tmp_path):
    onnx_path = tmp_path / "camera.onnx"
    run_script("ppo_godot_camera.py", "--env-path", CHASE["camera"], "--port", str(port), "--num-steps", "32",
               "--total-timesteps", "1024", "--onnx-export-path", str(onnx_path), cwd=tmp_path)
    run_dir = run_dirs(tmp_path)[0]
    assert len(read_scalars(run_dir)["losses/value_loss"]) == 2
    ((agent, obs_layout),) = saved_agents(run_dir / "ppo_godot_camera.pt").values()
    assert [tuple(k) for k in obs_layout] == [("camera_2d", (CAMERA, CAMERA, 3))]
    session = onnxruntime.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    inputs = session.get_inputs()  # the pixels as floats, in the bytes' order, as a game sends them to a model
    assert [i.name for i in inputs] == ["camera_2d", "state_ins"] and inputs[0].shape[1] == CAMERA * CAMERA * 3
    assert_plugin_plays_like_torch(agent, session, {"camera_2d": (CAMERA, CAMERA, 3)},
                                   {"move": ("discrete", 5)}, n=50, tol=1e-4)
    assert not game_pids(port)
    # a CNN is no job for GDScript: its export is refused in one line that points to the ONNX route
    proc = run_script("ppo_godot_camera.py", "--export-checkpoint", str(run_dir / "ppo_godot_camera.pt"), "--gdscript-export-path",
                      str(tmp_path / "camera.gd"), cwd=tmp_path, check=False)
    assert_one_line_error(proc, "'camera_2d' is a camera, and a CNN is no job for GDScript")
    assert "ship a camera policy with --onnx-export-path" in proc.stderr and not (tmp_path / "camera.gd").exists()


def test_a_camera_game_is_refused_before_training_when_a_gdscript_export_is_asked(display, port, tmp_path):
    proc = run_script("ppo_godot_camera.py", "--env-path", CHASE["camera"], "--port", str(port), "--gdscript-export-path",
                      str(tmp_path / "camera.gd"), cwd=tmp_path, check=False)
    assert_one_line_error(proc, "'camera_2d' is a camera")
    assert not (tmp_path / "camera.gd").exists() and not game_pids(port)


def test_a_camera_game_without_a_display_is_named_in_one_line(port, tmp_path, monkeypatch):
    needs_godot()
    monkeypatch.delenv("DISPLAY", raising=False)
    proc = run_script("ppo_godot_camera.py", "--env-path", CHASE["camera"], "--port", str(port), cwd=tmp_path,
                      check=False, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    # the engine's own lines went to the game's log: our one line quotes its last ones, and the log,
    # which waited beside the run folder that a failed start never makes, is gone with the game
    assert proc.stderr.strip().splitlines() == [
        f"ppo_godot_camera.py: error: no game connected on port {port}: the game exited with code 255 (no DISPLAY is "
        f"set: if the game opens a window, run it under xvfb-run -a); its last output: "
        f"'ERROR: initialize: X11 Display is not available | At: platform/x11/os_x11.cpp:129. | Godot Engine "
        f"v3.2.3.stable.custom_build - https://godotengine.org'"]
    assert not (tmp_path / "runs").exists() and not list(tmp_path.iterdir())


def test_a_camera_game_on_a_headless_engine_is_refused_before_training_on_blank_images(port, tmp_path):
    """Debian's godot3-server renders nothing: the Chase game sends black images, and the run stops
    at the first observations, not after training on them."""
    needs_godot()
    game = tmp_path / "chase_camera_headless.x86_64"
    game.write_text(f'#!/bin/sh\nLANG=en_US.UTF-8 exec godot3-server --path "{REPO / "godot" / "chase"}" "$@" '
                    f'--action_type=discrete --observation=camera\n')
    game.chmod(0o755)
    proc = run_script("ppo_godot_camera.py", "--env-path", str(game), "--port", str(port), cwd=tmp_path, check=False,
                      timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr  # before it, the engine's own errors
    assert proc.stderr.strip().splitlines()[-1].startswith(
        "ppo_godot_camera.py: error: the camera 'camera_2d' sent blank images (every pixel [0, 0, 0]) from every agent: "
        "the engine renders nothing. A camera needs a window: give --show-window")
    assert not list((tmp_path / "runs").glob("*")) and not game_pids(port)  # no empty run folder left


def test_the_rllib_script_refuses_a_camera_game_in_one_line(rllib_script, port, tmp_path):
    ray_before = pids(RAY_PROCESSES)
    proc = run_script(SCRIPT, "--env-path", misbehaving_game(tmp_path, "camera-blank"), "--num-env-runners", "1",
                      "--num-cpus", "1", "--port", str(port), cwd=tmp_path, check=False, timeout=300)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "error: the game observes through a camera (camera_2d): this script trains vector observations only; "
        "train camera games with ppo_godot_camera.py")
    assert not set(wait_until_gone(RAY_PROCESSES)) - set(ray_before)


def camera_and_vector_envs():
    """GodotVecEnv of one game (port 11008) whose agents observe a camera rgb_2d [3, 36, 40] and position [2]
    (their layout), and pixels for it: (envs, its layout, pixels)."""
    envs = ppo_godot_camera.GodotVecEnv.__new__(ppo_godot_camera.GodotVecEnv)
    layout = [("position", (2,)), ("rgb_2d", (36, 40, 3))]
    envs.obs_layout, envs.obs_keys = layout, ["position", "rgb_2d"]
    envs.single_observation_space = ppo_godot_camera.gym.spaces.Box(-np.inf, np.inf, (2 + 36 * 40 * 3,), np.float32)
    envs.games = [argparse.Namespace(port=11008)]
    return envs, layout, np.random.default_rng(0).integers(0, 256, 36 * 40 * 3).astype(np.uint8)


def test_a_camera_beside_vector_keys_is_one_float_row_in_sorted_key_order():
    """A row holds the keys in sorted order; a camera's hex string as its bytes, H x W x C as sent,
    and the row is float32 (the pixels exact) when vector keys share it."""
    envs, layout, pixels = camera_and_vector_envs()
    reply = {"obs": [{"rgb_2d": pixels.tobytes().hex(), "position": [0.25, -0.5]}]}
    row = envs.observations([reply])
    assert row.dtype == np.float32 and row.shape == (1, 2 + 36 * 40 * 3)
    np.testing.assert_array_equal(row[0], np.concatenate([[0.25, -0.5], pixels]))
    agent = ppo_godot_camera.Agent(layout, [("move", "discrete", 3)])
    assert agent.encode(torch.as_tensor(row)).shape == (1, 2 + 256)
    seen = []  # what the CNN gets: (N, C, H, W), the pixel at row 5, column 7 that the bytes put there
    agent.cameras["rgb_2d"].register_forward_pre_hook(lambda module, inputs: seen.append(inputs[0]))
    agent.encode(torch.as_tensor(row))
    assert seen[0].shape == (1, 3, 36, 40)
    first = (5 * 40 + 7) * 3
    np.testing.assert_allclose(seen[0][0, :, 5, 7].numpy(), pixels[first:first + 3] / 255.0, rtol=1e-6)


def test_a_final_observation_is_one_row_in_sorted_key_order_as_an_observation_is():
    """An end's terminal_observation, its keys in the game's order (the camera first), is the row the same
    observation makes: the keys joined in obs_layout's order, the camera's hex as its bytes."""
    envs, _, pixels = camera_and_vector_envs()
    sent = {"rgb_2d": pixels.tobytes().hex(), "position": [0.25, -0.5]}
    replies, info = [{"obs": [sent, sent]}], [{}, {"terminal_observation": sent}]
    final = ppo_godot_camera.final_observations(envs, replies, info, np.array([False, True]))
    np.testing.assert_array_equal(final, [np.zeros(2 + 36 * 40 * 3), envs.observations(replies)[1]])


def test_a_terminal_camera_of_the_wrong_size_is_an_env_fault_naming_the_agent_and_the_key():
    """Not the H x W x C bytes declared: EnvFault, which the run ends on in one line, exit 2, the model saved
    (tests/test_terminal_observations.py: the vector keys' faults, the same plumbing)."""
    envs, _, pixels = camera_and_vector_envs()
    sent = {"rgb_2d": pixels[:100].tobytes().hex(), "position": [0.25, -0.5]}
    with pytest.raises(ppo_godot_camera.EnvFault) as fault:
        ppo_godot_camera.final_observations(envs, [{"obs": [sent]}], [{"terminal_observation": sent}], np.array([True]))
    assert str(fault.value) == (f"agent 0 of the game on port 11008 sent 'rgb_2d' in its terminal_observation as "
                                f"{sent['rgb_2d'][:40]}, but declares the hex of 4320 bytes")


def test_vector_keys_beside_a_camera_keep_their_values_as_sent(port, tmp_path):
    """Rows of a policy that observes a camera and vector keys are float32 (only a camera-only policy's
    are uint8, a quarter of the bytes): built by the env from what a game declares, the vector's floats
    as sent and the pixels 0-255, exact."""
    args = ppo_godot_camera.parse_args(["--env-path", misbehaving_game(tmp_path, "camera-and-vector"),
                                        "--port", str(port)])
    envs = ppo_godot_camera.GodotVecEnv(args)
    try:
        obs, _ = envs.reset()
    finally:
        envs.close()
    assert obs.dtype == np.float32 and obs.shape == (2, 3888 + 2)  # the keys in sorted order: the camera first
    np.testing.assert_array_equal(obs[:, -2:], [[0.25, -0.5], [0.25, -0.5]])
    assert obs[:, :3888].max() > 200 and (obs[:, :3888] == obs[:, :3888].round()).all()


def test_an_rgba_camera_trains_and_exports_a_model_the_plugin_can_run(port, tmp_path):
    """A camera of 4 channels (the plugin's sensor on a viewport with a transparent background): a CNN
    of 4 input channels, trained, and exported with the H x W x 4 pixels as its input."""
    onnx_path, script = tmp_path / "rgba.onnx", "ppo_godot_camera.py"
    run_script(script, "--env-path", misbehaving_game(tmp_path, "rgba-camera"), "--port", str(port),
               "--num-steps", "16", "--total-timesteps", "64", "--onnx-export-path", str(onnx_path), cwd=tmp_path)
    run_dir = run_dirs(tmp_path)[0]
    assert len([key for key in read_scalars(run_dir) if key.startswith("losses/value_loss")]) == 1
    ((agent, obs_layout),) = saved_agents(run_dir / script.replace(".py", ".pt")).values()
    assert [tuple(k) for k in obs_layout] == [("camera_2d", (36, 36, 4))]
    first_conv = next(m for m in agent.cameras["camera_2d"].modules() if isinstance(m, torch.nn.Conv2d))
    assert first_conv.in_channels == 4
    session = onnxruntime.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    inputs = session.get_inputs()
    assert [i.name for i in inputs] == ["camera_2d", "state_ins"] and inputs[0].shape[1] == 36 * 36 * 4
    assert_plugin_plays_like_torch(agent, session, {"camera_2d": (36, 36, 4)}, {"move": ("discrete", 2)},
                                   n=50, tol=1e-4)
    assert not game_pids(port)


def test_the_pixels_or_positions_benchmark_times_and_trains_the_camera_game(display, port):
    pixels_or_positions = benchmark("pixels_or_positions")
    split = pixels_or_positions.time_split("camera", port, steps=10)
    assert set(split) == {"drawing", "hex", "game", "json", "decode", "forward", "update"}
    assert all(v > 0 for v in split.values())
    args = pixels_or_positions.argparse.Namespace(port=port, total_timesteps=2048, ppo_args="--num-steps 32")
    run = pixels_or_positions.train("camera", 1, args)
    steps, returns = run["curve"]
    assert len(returns) >= 16 and steps.max() <= 2048 and run["sps"] > 0  # every agent timed out once
    # the crossing of a curve that rises from 0 to 10 over 1,000 steps, one episode a step
    rising = (np.arange(1, 1001), np.linspace(0, 10, 1000))
    assert pixels_or_positions.first_crossing([rising], 8.0) is not None
    assert pixels_or_positions.first_crossing([rising], 11.0) is None


VECTOR_SCRIPTS = {"ppo_godot.py": [], "ppo_godot_lstm.py": [], "ppo_godot_multi_policy.py": [],
                  "ppo_godot_self_play.py": [],
                  "ppo_godot_bc.py": ["--demos", str(REPO / "godot" / "chase" / "demos" / "chase_discrete_scripted.json")]}


@pytest.mark.parametrize("script", VECTOR_SCRIPTS)
def test_a_vector_script_refuses_a_camera_game_in_one_line_that_names_the_camera_script(script, port, tmp_path):
    needs_godot()
    proc = run_script(script, "--env-path", misbehaving_game(tmp_path, "camera-and-vector"), "--port", str(port),
                      *VECTOR_SCRIPTS[script], cwd=tmp_path, check=False, timeout=60)
    assert_one_line_error(proc, f"the observation 'camera_2d' is a camera (\"2d\" in its name): {script} takes "
                                f"vector observations; ppo_godot_camera.py trains a game with cameras")
    assert not (tmp_path / "runs").exists() and not game_pids(port)


def test_a_camera_checkpoint_saved_by_ppo_godot_py_resumes_evaluates_and_exports_here(display, port, tmp_path):
    saved_before = REPO / "tests" / "checkpoints" / "ppo_godot_4bb54dc_chase_camera.pt"
    checkpoint = tmp_path / "run" / "ppo_godot.pt"  # its run's folder, where a resumed run goes on
    checkpoint.parent.mkdir()
    shutil.copy(saved_before, checkpoint)
    game = ["--env-path", CHASE["camera"], "--port", str(port), "--show-window"]
    for flags in (["--resume", str(checkpoint), *game, "--total-timesteps", "768"],
                  ["--eval-checkpoint", str(checkpoint), *game],
                  ["--export-checkpoint", str(checkpoint), "--onnx-export-path", str(tmp_path / "x.onnx")]):
        assert_one_line_error(run_script("ppo_godot.py", *flags, cwd=tmp_path, check=False),
                              f"{checkpoint} played a game with the camera 'camera_2d': resume, evaluate or export it "
                              f"with ppo_godot_camera.py")
    assert not game_pids(port) and not (tmp_path / "x.onnx").exists()

    resumed = run_script("ppo_godot_camera.py", "--resume", str(checkpoint), *game, "--total-timesteps", "768",
                         cwd=tmp_path)
    assert "The state at global_step=768 is saved" in resumed.stdout
    assert len(read_scalars(checkpoint.parent)["losses/value_loss"]) == 1  # the third update, after the two saved
    assert torch.load(checkpoint, weights_only=True)["script"] == "ppo_godot_camera.py"  # saved again, by its owner
    played = run_script("ppo_godot_camera.py", "--eval-checkpoint", str(checkpoint), *game, "--eval-episodes", "2",
                        cwd=tmp_path)
    assert played.stdout.count("mean_return=") == 2  # greedy, then sampled
    exported = run_script("ppo_godot_camera.py", "--export-checkpoint", str(checkpoint), "--onnx-export-path",
                          str(tmp_path / "camera.onnx"), cwd=tmp_path)
    assert "exported to" in exported.stdout and (tmp_path / "camera.onnx").exists()
    assert not game_pids(port)
