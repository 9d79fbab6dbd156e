"""The Godot RL Agents plugin (Godot 4; godot_rl_agents_plugin at commit bf5d6a2) as a game project holds it,
for games the tests run on Godot 4.6 (tests/godot4_web.py). Its code is not in this repository: the files here
are stand-ins written from its API and behaviour, at the plugin's own paths under addons/godot_rl_agents, so a
game's scripts and scenes reach them as they reach the plugin (`extends AIController3D`, `$RaycastSensor3D`, a
sensor's .tscn instanced by path).

    files = addon_files()  # {res path without "res://": text}
    files[".godot/global_script_class_cache.cfg"] = class_cache(files)  # needed for `extends AIController3D`

Stood in, with the plugin's names, exported members, types and defaults:
- controller/ai_controller_2d.gd, ai_controller_3d.gd (AIController2D/3D, Node2D/Node3D): the control modes,
  heuristic, done, reward, n_steps, needs_reset; joining the AGENT group in _ready; the time-out (_physics_process
  counts n_steps and, past reset_after, sets needs_reset alone); get_obs_space from get_obs()["obs"]; reset,
  get_done, set_done_false, zero_reward, set_heuristic. The methods a game must write print an error (the
  plugin asserts, which a release build skips).
- sensors/sensors_2d/RGBCameraSensor2D.gd and .tscn, sensors/sensors_3d/RGBCameraSensor3D.gd and .tscn: the
  scene's root name and type and its child layout (SubViewport/Camera, Control/CameraTexture); the image sent is
  a fixed 36 x 36 RGB8 test image (test_image_bytes()), not what a camera sees, so it needs no rendering.
- sensors/sensors_3d/ISensor3D.gd, RaycastSensor3D.gd and RaycastSensor3D.tscn: the class is RayCastSensor3D
  and the scene's root node is named RaycastSensor3D, as in the plugin; the scene sets 4 x 2 rays of length
  11, as the plugin's does. No ray hits anything: each sends 0.0.
- onnx/wrapper/ONNX_wrapper.gd (ONNXModel): its members; creating one prints an error, since the plugin runs
  ONNX in C# (ONNXInference.cs), which this engine build cannot load.
- sync.gd (Sync), in TRAINING mode, as if Python were connected: it waits for its parent's ready (by then
  every agent below that parent has joined the AGENT group in its own _ready), collects the agents from the
  group once, sets modes as the plugin does (INHERIT_FROM_SYNC takes the node's), heuristic "human" for all
  and "model" for the training ones, reads --speedup, --action_repeat and --env_seed from the command line,
  sets the physics rate and time scale from speed_up, and seeds the global random numbers. Then every
  action_repeat physics ticks it runs _training_process's sequence on the training agents: get_obs() for
  all, get_info() for all, and for a step get_reward() + zero_reward(), then get_done() + set_done_false().
  What Python would receive goes into `messages`: {"type": "reset" or "step", "tick", "obs", "info"}, a step
  with "reward" and "done". The exchange runs as with godot-rl's trainer: the first read (tick 0) is dropped
  and Python's reset arrives (needs_reset = true on every agent), the next read is the "reset" reply, the one
  after it is dropped again and the first action arrives; from then on each read is a "step" followed by the
  next action. An action is the next entry of `actions` (one list per message, an action dict per training
  agent, cycled), or of res://sync_actions.json's list if the file exists at _ready; with none, set_action()
  is never called. HUMAN agents have done cleared each action_repeat ticks (_heuristic_process).
Left out: the TCP socket and handshake, the one-second pause at start, ONNX inference, recording
demonstrations, Python's "call" and "close" messages.

With plugin= a path to a real checkout's addons/godot_rl_agents folder, addon_files() takes the controllers, the
sensors (ISensor3D.gd too) and plugin.cfg from there (read at run time, not stored here); sync.gd and
ONNX_wrapper.gd stay the stand-ins (the web build has no TCP and no C#). The real RGBCameraSensor2D.gd does not
parse on Godot 4.6 (line 42 multiplies a Vector2i by a Vector2).

Packs run with --headless trapped at start-up or not as their contents went: the cause, and the page's fix, are in
tests/godot4_web.py's docstring."""
import re
from pathlib import Path

PLUGIN_COMMIT = "bf5d6a2"
ADDON = "addons/godot_rl_agents"
TEST_IMAGE_SIZE = 36


def test_image_bytes():
    """The stand-in cameras' picture: 36 x 36 RGB8, row by row, each pixel's three bytes (as the plugin sends)."""
    return bytes(v for y in range(TEST_IMAGE_SIZE) for x in range(TEST_IMAGE_SIZE)
                 for v in ((x * 7) % 256, (y * 11) % 256, ((x + y) * 13) % 256))


CONTROLLER = """extends Node{D}
class_name AIController{D}
# Stand-in for the Godot RL Agents plugin's AIController{D} (ai_controller_{d}.gd, plugin commit {commit}), written
# from its API for the tests (tests/godot4_plugin.py): its members, defaults and behaviour, not its code.

enum ControlModes {{ INHERIT_FROM_SYNC, HUMAN, TRAINING, ONNX_INFERENCE, RECORD_EXPERT_DEMOS }}
@export var control_mode: ControlModes = ControlModes.INHERIT_FROM_SYNC
@export var onnx_model_path := ""
@export var reset_after := 1000

@export_group("Record expert demos mode options")
@export var expert_demo_save_path: String
@export var remove_last_episode_key: InputEvent
@export var action_repeat: int = 1

@export_group("Multi-policy mode options")
@export var policy_name: String = "shared_policy"

var onnx_model: ONNXModel
var heuristic := "human"
var done := false
var reward := 0.0
var n_steps := 0
var needs_reset := false
var _player: Node{D}


func _ready():
	add_to_group("AGENT")


func init(player: Node{D}):
	_player = player


func get_obs() -> Dictionary:
	push_error("AIController{D}.get_obs: the game's controller must write it")
	return {{"obs": []}}


func get_reward() -> float:
	push_error("AIController{D}.get_reward: the game's controller must write it")
	return 0.0


func get_action_space() -> Dictionary:
	push_error("AIController{D}.get_action_space: the game's controller must write it")
	return {{}}


func set_action(action) -> void:
	push_error("AIController{D}.set_action: the game's controller must write it")


func get_action() -> Array:
	push_error("AIController{D}.get_action: the game's controller must write it to record demonstrations")
	return []


func get_info() -> Dictionary:
	return {{}}


# The time-out: past reset_after physics ticks, needs_reset; done is left alone.
func _physics_process(_delta):
	n_steps += 1
	if n_steps > reset_after:
		needs_reset = true


func get_obs_space():
	return {{"obs": {{"size": [len(get_obs()["obs"])], "space": "box"}}}}


func reset():
	n_steps = 0
	needs_reset = false


func reset_if_done():
	if done:
		reset()


func set_heuristic(h):
	heuristic = h


func get_done():
	return done


func set_done_false():
	done = false


func zero_reward():
	reward = 0.0
"""
CAMERA = """extends Node{D}
class_name RGBCameraSensor{D}
# Stand-in for the plugin's RGBCameraSensor{D} (sensors/sensors_{d}/RGBCameraSensor{D}.gd, plugin commit {commit}),
# from its API: the scene's layout and members, but the image sent is a fixed 36 x 36 test image, not what the
# camera sees (tests/godot4_plugin.py test_image_bytes()), so it needs no rendering.

@onready var camera_texture := $Control/CameraTexture as Sprite2D
@onready var processed_texture := $Control/ProcessedTexture as Sprite2D
@onready var sub_viewport := $SubViewport as SubViewport

@export var render_image_resolution := Vector2i(36, 36)
@export var displayed_image_scale_factor := Vector2i(8, 8)

@export_group("Downscale image options")
@export var downscale_image: bool = false
@export var display_downscaled_image: bool = true
@export var resized_image_resolution := Vector2(36, 36)

var _picture: Image


func _ready():
	sub_viewport.size = render_image_resolution
	_picture = Image.create(36, 36, false, Image.FORMAT_RGB8)
	for y in range(36):
		for x in range(36):
			_picture.set_pixel(x, y, Color8((x * 7) % 256, (y * 11) % 256, ((x + y) * 13) % 256))
	camera_texture.texture = ImageTexture.create_from_image(_picture)
	camera_texture.scale = displayed_image_scale_factor


# The picture's bytes as hex: rows of RGB8 (RGBA8 with a transparent background) pixels.
func get_camera_pixel_encoding():
	var image := _picture.duplicate() as Image
	if downscale_image:
		image.resize(resized_image_resolution.x, resized_image_resolution.y, Image.INTERPOLATE_NEAREST)
	if sub_viewport.transparent_bg:
		image.convert(Image.FORMAT_RGBA8)
	return image.get_data().hex_encode()


# [channels, height, width]; the plugin asserts at least 36 x 36.
func get_camera_shape() -> Array:
	var size = resized_image_resolution if downscale_image else render_image_resolution
	if size.x < 36 or size.y < 36:
		push_error("RGBCameraSensor{D}: the image sent must be at least 36 x 36")
	return [4 if sub_viewport.transparent_bg else 3, size.y, size.x]
"""
# The plugin's scenes: root node name and type, the script by path, the children the script finds.
CAMERA_SCENE_3D = """[gd_scene load_steps=2 format=3]

[ext_resource type="Script" path="res://addons/godot_rl_agents/sensors/sensors_3d/RGBCameraSensor3D.gd" id="1"]

[node name="RGBCameraSensor3D" type="Node3D"]
script = ExtResource("1")

[node name="RemoteTransform" type="RemoteTransform3D" parent="."]
remote_path = NodePath("../SubViewport/Camera")

[node name="SubViewport" type="SubViewport" parent="."]
size = Vector2i(36, 36)

[node name="Camera" type="Camera3D" parent="SubViewport"]

[node name="Control" type="Control" parent="."]

[node name="CameraTexture" type="Sprite2D" parent="Control"]
centered = false

[node name="ProcessedTexture" type="Sprite2D" parent="Control"]
centered = false
"""
CAMERA_SCENE_2D = """[gd_scene load_steps=2 format=3]

[ext_resource type="Script" path="res://addons/godot_rl_agents/sensors/sensors_2d/RGBCameraSensor2D.gd" id="1"]

[node name="RGBCameraSensor2D" type="Node2D"]
script = ExtResource("1")
displayed_image_scale_factor = Vector2i(3, 3)

[node name="RemoteTransform" type="RemoteTransform2D" parent="."]
remote_path = NodePath("../SubViewport/Camera")

[node name="SubViewport" type="SubViewport" parent="."]
size = Vector2i(36, 36)

[node name="Camera" type="Camera2D" parent="SubViewport"]

[node name="Control" type="Window" parent="."]
title = "CameraSensor"
size = Vector2i(64, 64)

[node name="CameraTexture" type="Sprite2D" parent="Control"]
centered = false

[node name="ProcessedTexture" type="Sprite2D" parent="Control"]
centered = false
"""
SENSOR_BASE = """extends Node3D
class_name ISensor3D
# Stand-in for the plugin's ISensor3D (sensors/sensors_3d/ISensor3D.gd, plugin commit {commit}), from its API.

var _obs: Array = []
var _active := false


func get_observation():
	pass


func activate():
	_active = true


func deactivate():
	_active = false


func _update_observation():
	pass


func reset():
	pass
"""
RAYS = """extends ISensor3D
class_name RayCastSensor3D
# Stand-in for the plugin's RayCastSensor3D (sensors/sensors_3d/RaycastSensor3D.gd, plugin commit {commit}; its
# scene's root node is named RaycastSensor3D), from its API: n_rays_width x n_rays_height rays, one value each
# (two with class_sensor); here no ray hits anything, so each value is 0.0.

@export_flags_3d_physics var collision_mask = 1
@export_flags_3d_physics var boolean_class_mask = 1
@export var n_rays_width := 6.0
@export var n_rays_height := 6.0
@export var ray_length := 10.0
@export var cone_width := 60.0
@export var cone_height := 60.0
@export var collide_with_areas := false
@export var collide_with_bodies := true
@export var class_sensor := false

var rays := []


func get_observation() -> Array:
	return calculate_raycasts()


func calculate_raycasts() -> Array:
	var result = []
	for _ray in range(int(n_rays_width) * int(n_rays_height)):
		result.append(0.0)
		if class_sensor:
			result.append(0.0)
	return result
"""
RAYS_SCENE = """[gd_scene load_steps=2 format=3]

[ext_resource type="Script" path="res://addons/godot_rl_agents/sensors/sensors_3d/RaycastSensor3D.gd" id="1"]

[node name="RaycastSensor3D" type="Node3D"]
script = ExtResource("1")
n_rays_width = 4.0
n_rays_height = 2.0
ray_length = 11.0
"""
ONNX_MODEL = """extends Resource
class_name ONNXModel
# Stand-in for the plugin's ONNXModel (onnx/wrapper/ONNX_wrapper.gd, plugin commit {commit}): its members. The
# plugin runs the model in C# (onnx/csharp/ONNXInference.cs), which needs Godot .NET; here creating one fails.

var inferencer = null
var action_output_size: int
var action_means_only: bool
var action_means_only_set: bool


func _init(model_path, batch_size):
	push_error("ONNXModel: the plugin's ONNX inference runs in C# (Godot .NET); not stood in here")


func run_inference(obs: Dictionary, state_ins: int) -> Dictionary:
	push_error("ONNXModel.run_inference: not stood in here")
	return {{}}


func set_action_means_only(agent_action_space):
	action_means_only_set = true
"""
SYNC = """extends Node
class_name Sync
# Stand-in for the plugin's Sync node (sync.gd, plugin commit {commit}), in TRAINING mode as if Python were
# connected: what a game sees of it. tests/godot4_plugin.py says what is stood in and what is left out.

enum ControlModes {{ HUMAN, TRAINING, ONNX_INFERENCE }}
@export var control_mode: ControlModes = ControlModes.TRAINING
@export_range(1, 10, 1, "or_greater") var action_repeat := 8
@export_range(0, 10, 0.1, "or_greater") var speed_up := 1.0
@export var onnx_model_path := ""
@export var deterministic_inference := true

const DEFAULT_SEED := "1"
var all_agents: Array
var agents_training: Array
var agents_training_policy_names: Array[String] = ["shared_policy"]
var agents_inference: Array
var agents_heuristic: Array
var agents = agents_training  # the training agents (the same Array)
var connected = false
var args = {{}}
var initialized = false
var n_action_steps = 0
var just_reset = false
var need_to_send_obs = false
var reset_received = false

var messages = []  # what Python would receive: {{"type", "tick", "obs", "info"}}, a step with "reward", "done"
var actions = []  # Python's actions: per message, a list of one action dict per training agent (cycled)
var n_actions_sent = 0


func _ready():
	if FileAccess.file_exists("res://sync_actions.json"):
		actions = JSON.parse_string(FileAccess.get_file_as_string("res://sync_actions.json"))
	await get_parent().ready  # every agent below the parent has joined AGENT in its own _ready
	_initialize()


func _initialize():
	_get_agents()
	args = _get_args()
	Engine.physics_ticks_per_second = _get_speedup() * 60
	Engine.time_scale = _get_speedup() * 1.0
	for agent in all_agents:
		agent.set_heuristic("human")
	connected = agents_training.size() > 0  # the plugin connects to Python only when an agent trains
	for agent in agents_training:
		agent.set_heuristic("model")
	seed(args.get("env_seed", DEFAULT_SEED).to_int())
	action_repeat = args.get("action_repeat", str(action_repeat)).to_int()
	initialized = true


func _get_agents():
	all_agents = get_tree().get_nodes_in_group("AGENT")
	for agent in all_agents:
		if agent.control_mode == agent.ControlModes.INHERIT_FROM_SYNC:
			match control_mode:
				ControlModes.HUMAN:
					agent.control_mode = agent.ControlModes.HUMAN
				ControlModes.TRAINING:
					agent.control_mode = agent.ControlModes.TRAINING
				ControlModes.ONNX_INFERENCE:
					agent.control_mode = agent.ControlModes.ONNX_INFERENCE
		if agent.control_mode == agent.ControlModes.TRAINING:
			agents_training.append(agent)
		elif agent.control_mode == agent.ControlModes.ONNX_INFERENCE:
			agents_inference.append(agent)
		elif agent.control_mode == agent.ControlModes.HUMAN:
			agents_heuristic.append(agent)
	agents_training_policy_names.resize(agents_training.size())
	for i in range(agents_training.size()):
		agents_training_policy_names[i] = agents_training[i].policy_name


# "--key=value" as {{key: value}}, "--flag" as {{flag: ""}}
func _get_args():
	var arguments = {{}}
	for argument in OS.get_cmdline_args():
		if argument.find("=") > -1:
			var key_value = argument.split("=")
			arguments[key_value[0].lstrip("--")] = key_value[1]
		else:
			arguments[argument.lstrip("--")] = ""
	return arguments


func _get_speedup():
	return args.get("speedup", str(speed_up)).to_float()


func _physics_process(_delta):
	if not initialized:
		return
	if n_action_steps % action_repeat != 0:
		n_action_steps += 1
		return
	n_action_steps += 1
	_training_process()
	for agent in agents_heuristic:  # _heuristic_process
		if agent.get_done():
			agent.set_done_false()


func _training_process():
	if not connected:
		return
	var obs = []
	for agent in agents_training:
		obs.append(agent.get_obs())
	var info = []
	for agent in agents_training:
		info.append(agent.get_info())
	var tick = Engine.get_physics_frames()
	if just_reset:  # the reply to Python's reset; Python's first action comes with the next read
		just_reset = false
		messages.append({{"type": "reset", "tick": tick, "obs": obs, "info": info}})
		return
	if need_to_send_obs:
		need_to_send_obs = false
		var reward = []
		for agent in agents_training:
			reward.append(agent.get_reward())
			agent.zero_reward()
		var done = []
		for agent in agents_training:
			var agent_done = agent.get_done()
			if agent_done:
				agent.set_done_false()
			done.append(agent_done)
		messages.append({{"type": "step", "tick": tick, "obs": obs, "reward": reward, "done": done, "info": info}})
	# Python's next message: its reset first, then an action after every reply
	if not reset_received:
		reset_received = true
		for agent in all_agents:
			agent.needs_reset = true
		just_reset = true
		return
	if len(actions) > 0:
		var action = actions[n_actions_sent % len(actions)]
		for i in range(len(action)):
			agents_training[i].set_action(action[i])
	n_actions_sent += 1
	need_to_send_obs = true
"""
PLUGIN_CFG = """[plugin]

name="GodotRLAgents"
description="Stand-in for the Godot RL Agents plugin's plugin.cfg (commit {commit}), for the tests"
author="the tests"
version="0.1"
script="godot_rl_agents.gd"
"""
CONTROLLERS = {f"{ADDON}/controller/ai_controller_{d}.gd": CONTROLLER.format(D=d.upper(), d=d, commit=PLUGIN_COMMIT)
               for d in ("2d", "3d")}
SENSORS = {
    f"{ADDON}/sensors/sensors_2d/RGBCameraSensor2D.gd": CAMERA.format(D="2D", d="2d", commit=PLUGIN_COMMIT),
    f"{ADDON}/sensors/sensors_2d/RGBCameraSensor2D.tscn": CAMERA_SCENE_2D,
    f"{ADDON}/sensors/sensors_3d/RGBCameraSensor3D.gd": CAMERA.format(D="3D", d="3d", commit=PLUGIN_COMMIT),
    f"{ADDON}/sensors/sensors_3d/RGBCameraSensor3D.tscn": CAMERA_SCENE_3D,
    f"{ADDON}/sensors/sensors_3d/ISensor3D.gd": SENSOR_BASE.format(commit=PLUGIN_COMMIT),
    f"{ADDON}/sensors/sensors_3d/RaycastSensor3D.gd": RAYS.format(commit=PLUGIN_COMMIT),
    f"{ADDON}/sensors/sensors_3d/RaycastSensor3D.tscn": RAYS_SCENE,
}
ALWAYS_STOOD_IN = {f"{ADDON}/sync.gd": SYNC.format(commit=PLUGIN_COMMIT),
                   f"{ADDON}/onnx/wrapper/ONNX_wrapper.gd": ONNX_MODEL.format(commit=PLUGIN_COMMIT)}


def addon_files(plugin=None):
    """{res path without "res://": text} of addons/godot_rl_agents as a game project holds it: the stand-ins, or
    with plugin= (a real checkout's addons/godot_rl_agents folder) its controllers, sensors and plugin.cfg read
    from there, beside the stand-in sync.gd and ONNX_wrapper.gd."""
    files = {**CONTROLLERS, **SENSORS, f"{ADDON}/plugin.cfg": PLUGIN_CFG.format(commit=PLUGIN_COMMIT)}
    if plugin is not None:
        folder = Path(plugin)
        files = {path: (folder / path.removeprefix(ADDON + "/")).read_text(encoding="utf-8") for path in files}
    return {**files, **ALWAYS_STOOD_IN}


def class_cache(files):
    """The text of .godot/global_script_class_cache.cfg for files ({res path without "res://": text}): one entry
    per .gd that declares a class_name, with the class it extends (a quoted path is followed to its class)."""
    entries = []
    for path, text in sorted(files.items()):
        if path.endswith(".gd") and script_class(text):
            entries.append(f'{{"base": &"{base_class(path, files)}", "class": &"{script_class(text)}", "icon": "", '
                           f'"is_abstract": {str(bool(re.search(r"^@abstract", text, re.M))).lower()}, '
                           f'"is_tool": {str(bool(re.search(r"^@tool", text, re.M))).lower()}, '
                           f'"language": &"GDScript", "path": "res://{path}"}}')
    return "list=[" + ", ".join(entries) + "]\n"


def script_class(text):
    found = re.search(r"^class_name\s+(\w+)", text, re.M)
    return found and found.group(1)


def base_class(path, files):
    """What the script at path extends: a class name, or for `extends "res://x.gd"` that script's own class name
    (or, without one, its base); a script without `extends` is a RefCounted."""
    found = re.search(r"^extends\s+(\S+)", files[path], re.M)
    if not found:
        return "RefCounted"
    base = found.group(1)
    if base[0] in "\"'":
        parent = base.strip("\"'").removeprefix("res://")
        return script_class(files[parent]) or base_class(parent, files)
    return base
