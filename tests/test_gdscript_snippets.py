"""Every GDScript snippet in the docs runs on Godot 4.6 (the official web build in headless Chromium,
tests/godot4_web.py). The snippets extend or call the Godot RL Agents plugin's classes (AIController3D,
AIController2D, RGBCameraSensor2D/3D, RayCastSensor3D), whose code cannot live in this repository: they run on
stand-ins written here from the plugin's API (addons/godot_rl_agents at commit bf5d6a2): the members the
snippets use, with the plugin's defaults, and an error for a method the game must write. A snippet that is a
fragment (functions of a controller) runs inside a host file that adds what the page leaves to the game."""
import json
import re

import numpy as np
import pytest
import torch

import godot4_web
import ppo_godot
import ppo_godot_lstm
from conftest import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
PLUGIN_COMMIT = "bf5d6a2"
CONTROLLER = """extends Node{D}
class_name AIController{D}
# A stand-in for the Godot RL Agents plugin's AIController{D} (ai_controller_{d}.gd, plugin commit {commit}),
# written from its API for the tests: its members, defaults and behaviour, not its code.

enum ControlModes {{ INHERIT_FROM_SYNC, HUMAN, TRAINING, ONNX_INFERENCE, RECORD_EXPERT_DEMOS }}
@export var control_mode: ControlModes = ControlModes.INHERIT_FROM_SYNC
@export var reset_after := 1000
@export var policy_name: String = "shared_policy"
var heuristic := "human"
var done := false
var reward := 0.0
var n_steps := 0
var needs_reset := false


func _ready():
	add_to_group("AGENT")


func _physics_process(_delta):
	n_steps += 1
	if n_steps > reset_after:
		needs_reset = true


func get_obs() -> Dictionary:
	push_error("AIController{D}.get_obs: the game's controller must write it")
	return {{"obs": []}}


func get_obs_space():
	return {{"obs": {{"size": [len(get_obs()["obs"])], "space": "box"}}}}


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


func reset():
	n_steps = 0
	needs_reset = false


func get_done():
	return done


func set_done_false():
	done = false


func zero_reward():
	reward = 0.0
"""
CAMERA = """extends Node{D}
class_name RGBCameraSensor{D}
# A stand-in for the plugin's RGBCameraSensor{D} (plugin commit {commit}), from its API: camera_texture is the
# Sprite2D showing what the camera saw, here a fixed 36 x 36 test image (tests/test_gdscript_snippets.py).

@export var render_image_resolution := Vector2i(36, 36)
var camera_texture := Sprite2D.new()


func _ready():
	var image = Image.create(36, 36, false, Image.FORMAT_RGB8)
	for y in range(36):
		for x in range(36):
			image.set_pixel(x, y, Color8((x * 7) % 256, (y * 11) % 256, ((x + y) * 13) % 256))
	camera_texture.texture = ImageTexture.create_from_image(image)
	add_child(camera_texture)


func get_camera_pixel_encoding():
	return camera_texture.get_texture().get_image().get_data().hex_encode()


func get_camera_shape() -> Array:
	return [3, render_image_resolution.y, render_image_resolution.x]
"""
RAYS = """extends Node3D
class_name RayCastSensor3D
# A stand-in for the plugin's RayCastSensor3D (plugin commit {commit}), from its API: one value per ray,
# n_rays_width x n_rays_height of them; here no ray hits anything (0.0).

@export var n_rays_width := 6.0
@export var n_rays_height := 6.0
@export var ray_length := 10.0


func get_observation() -> Array:
	var out = []
	for _ray in range(int(n_rays_width * n_rays_height)):
		out.append(0.0)
	return out
"""
STANDINS = {  # class: (base, file, text)
    "AIController3D": ("Node3D", "controller/ai_controller_3d.gd",
                       CONTROLLER.format(D="3D", d="3d", commit=PLUGIN_COMMIT)),
    "AIController2D": ("Node2D", "controller/ai_controller_2d.gd",
                       CONTROLLER.format(D="2D", d="2d", commit=PLUGIN_COMMIT)),
    "RGBCameraSensor2D": ("Node2D", "sensors/rgb_camera_sensor_2d.gd", CAMERA.format(D="2D", commit=PLUGIN_COMMIT)),
    "RGBCameraSensor3D": ("Node3D", "sensors/rgb_camera_sensor_3d.gd", CAMERA.format(D="3D", commit=PLUGIN_COMMIT)),
    "RayCastSensor3D": ("Node3D", "sensors/raycast_sensor_3d.gd", RAYS.format(commit=PLUGIN_COMMIT)),
}
IMAGE = bytes(v for y in range(36) for x in range(36) for v in ((x * 7) % 256, (y * 11) % 256, ((x + y) * 13) % 256))
OBSERVATIONS = [{"obs": [0.3, -0.2, 0.5, 0.4]}, {"obs": [-0.9, 0.1, 1.2, -0.3]}, {"obs": [0.0, 0.8, -0.6, -1.1]}]
GAME_SIDE = ('extends "SNIPPET"\n# the game\'s side: what it observes, what an action does (recorded)\n'
             "var observations = " + json.dumps(OBSERVATIONS) + "\nvar asked = 0\nvar recorded = []\n\n\n"
             "func get_obs() -> Dictionary:\n"
             "\tasked += 1\n\treturn observations[(asked - 1) % len(observations)]\n\n\n"
             "func set_action(action) -> void:\n\trecorded.append(action)\n")
GAME_THAT_ENDS = ("\n# the game's side: it observes its player (the parent); a time-out after 20 physics ticks\n"
                  "func _init():\n    reset_after = 20\n\n\n"
                  "func get_obs() -> Dictionary:\n"
                  "    return {\"obs\": [float(get_parent().x), float(get_parent().episode)]}\n\n\n"
                  "func get_reward() -> float:\n    return reward\n\n\n")
# How each snippet runs, by its page and first line: "host", the file around a fragment or the game's side of a
# whole controller ("SNIPPET" is the snippet's own file); the nodes it finds as children; what the run does
HOSTS = {
    ("shipping-your-agent.md", "# Plays the policy exported by ppo_godot.py --gdsc"): {
        "host": GAME_SIDE, "children": [], "check": "plays"},
    ("shipping-your-agent.md", "# Plays a recurrent policy (ppo_godot_lstm.py --gd"): {
        "host": GAME_SIDE, "children": [], "check": "plays with a reset"},
    ("using-the-scripts.md", "func get_obs() -> Dictionary:"): {
        "host": "extends AIController3D\n@onready var camera = $RGBCameraSensor2D\n\n\nSNIPPET_TEXT",
        "children": ["RGBCameraSensor2D"], "check": "camera modes"},
    ("using-the-scripts.md", "extends AIController2D"): {"host": None, "children": [], "check": "actions"},
    ("your-own-godot-game.md", "# One camera, nothing else (the plugin's VirtualCa"): {
        "host": "extends AIController3D\n\n\nSNIPPET_TEXT", "children": ["RGBCameraSensor2D"], "check": "observes"},
    ("your-own-godot-game.md", "# Several keys: a vector, a 3D camera, and a secon"): {
        "host": "extends AIController3D\nvar velocity = Vector3(0.5, 0.0, -1.0)\n"
                "var to_target = Vector3(2.0, 0.0, 3.0)\n\n\nSNIPPET_TEXT",
        "children": ["RGBCameraSensor3D", "RayCastSensor3D"], "check": "observes"},
    ("your-own-godot-game.md", "# Ends episodes for the trainer, time-outs include"): {
        "host": "extends AIController3D\n" + GAME_THAT_ENDS + "SNIPPET_TEXT", "children": [], "check": "ends episodes",
        "plugin_only": "extends AIController3D\n" + GAME_THAT_ENDS},
}


def gdscript_snippets():
    return [(doc.name, snippet) for doc in DOCS
            for snippet in re.findall(r"^```gdscript\n(.*?)^```", doc.read_text(), flags=re.M | re.S)]


def key(doc, snippet):
    """A snippet's page and its first comment line (its first line if it has none), 50 characters of it."""
    lines = snippet.splitlines()
    return doc, next((line for line in lines if line.startswith("#")), lines[0])[:50]


def class_cache():
    entries = [f'{{"base": &"{base}", "class": &"{name}", "icon": "", "is_abstract": false, "is_tool": false, '
               f'"language": &"GDScript", "path": "res://plugin/{path}"}}'
               for name, (base, path, _) in STANDINS.items()]
    return "list=[" + ", ".join(entries) + "]\n"


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
    """Every snippet run in one Godot 4.6 run: {(page, first line): what its controller answered}, and the
    errors the engine printed."""
    godot4_web.needs_godot4()
    folder = tmp_path_factory.mktemp("snippets")
    torch.manual_seed(0)
    layout, heads = [("obs", (4,))], [("move", "discrete", 5)]
    agent = ppo_godot.Agent(layout, heads)
    ppo_godot.export_gdscript(agent, layout, heads, str(folder / "npc_policy.gd"), "the tests")
    torch.manual_seed(3)  # a seed whose memory changes the third decision (the last test checks it)
    recurrent = ppo_godot_lstm.Agent(layout, heads, 16)
    with torch.no_grad():
        recurrent.actor.weight.normal_(std=2.0)  # far from uniform: the state's effect shows in the actions
    ppo_godot_lstm.export_gdscript(recurrent, layout, heads, str(folder / "npc_memory_policy.gd"), "the tests")
    files = {"main.gd": (REPO / "tests" / "godot4_run_snippets.gd").read_text(),
             ".godot/global_script_class_cache.cfg": class_cache(),
             "npc_policy.gd": (folder / "npc_policy.gd").read_text(),
             "npc_memory_policy.gd": (folder / "npc_memory_policy.gd").read_text()}
    files.update({f"plugin/{path}": text for _, path, text in STANDINS.values()})
    cases, keys = [], []
    for i, (doc, snippet) in enumerate(gdscript_snippets()):
        if key(doc, snippet) not in HOSTS:
            continue  # test_every_snippet_has_a_way_to_run says so
        how = HOSTS[key(doc, snippet)]
        files[f"snippet{i}.gd"] = snippet
        script = f"snippet{i}.gd"
        if how["host"]:
            host = how["host"].replace("SNIPPET_TEXT", snippet)
            files[f"host{i}.gd"] = host.replace("SNIPPET", f"res://snippet{i}.gd")
            script = f"host{i}.gd"
        cases.append({"script": f"res://{script}", "check": how["check"],
                      "children": [[name, f"res://plugin/{STANDINS[name][1]}"] for name in how["children"]]})
        if "plugin_only" in how:  # the same game on the plugin's controller alone
            files[f"plugin_only{i}.gd"] = how["plugin_only"]
            cases[-1]["plugin_only"] = f"res://plugin_only{i}.gd"
        keys.append(key(doc, snippet))
    files["cases.json"] = json.dumps(cases)
    out = godot4_web.play(files)
    printed = [json.loads(line) for line in out["print"] if line.startswith("{")]
    assert out["done"] and len(printed) == len(keys), out
    return dict(zip(keys, printed)), out["error"], agent, recurrent


def test_every_snippet_has_a_way_to_run():
    snippets = gdscript_snippets()
    assert {doc for doc, _ in snippets} >= {"shipping-your-agent.md", "your-own-godot-game.md"}
    assert [key(doc, snippet) for doc, snippet in snippets if key(doc, snippet) not in HOSTS] == []
    assert len({key(doc, snippet) for doc, snippet in snippets}) == len(snippets) == len(HOSTS)


def test_the_snippets_run_without_an_error(answers):
    assert answers[1] == []


def test_the_shipping_controller_plays_the_exported_policy_every_8_ticks(answers):
    """About 20 physics ticks (the driver waits 20 physics frames): decisions at ticks 0, 8 and 16, each the torch
    policy's greedy action; the controller is in the AGENT group, in model mode, counts its ticks as the plugin
    does (n_steps) and clears done."""
    answer = answers[0][("shipping-your-agent.md", "# Plays the policy exported by ppo_godot.py --gdsc")]
    with torch.no_grad():
        greedy = answers[2].get_action(torch.tensor([o["obs"] for o in OBSERVATIONS]), greedy=True).numpy()
    assert answer["ticks"] >= 17 and len(answer["actions"]) == -(-answer["ticks"] // 8) == 3
    assert answer["actions"] == [{"move": int(a[0])} for a in greedy]
    assert answer["heuristic"] == "model" and answer["in_agent_group"] and answer["n_steps"] == answer["ticks"]
    assert answer["done"] is False


def test_the_camera_controller_sends_hex_in_training_and_floats_in_inference(answers):
    answer = answers[0][("using-the-scripts.md", "func get_obs() -> Dictionary:")]
    assert answer["training"] == {"camera_2d": IMAGE.hex()}
    assert answer["inference"] == {"camera_2d": [float(b) for b in IMAGE]}
    assert all(isinstance(v, float) for v in answer["inference"]["camera_2d"])  # floats, as the model reads


def test_the_recording_controller_takes_the_policys_move_or_the_players_key(answers):
    answer = answers[0][("using-the-scripts.md", "extends AIController2D")]
    assert answer["space"] == {"move": {"size": 5, "action_type": "discrete"}}
    assert (answer["policy"], answer["key down"], answer["no key"]) == ([3], [2], [0])


@pytest.mark.parametrize("first_line", [k[1] for k, how in HOSTS.items() if how["check"] == "observes"],
                         ids=["one camera", "several keys"])
def test_each_observation_key_holds_as_many_values_as_its_space_declares(first_line, answers):
    answer = answers[0][("your-own-godot-game.md", first_line)]
    assert list(answer["obs"]) == list(answer["space"])
    for name, value in answer["obs"].items():
        count = len(value) // 2 if isinstance(value, str) else len(value)  # a camera's hex: 2 characters a byte
        assert count == np.prod(answer["space"][name]["size"]), name
        if isinstance(value, str):
            assert value == IMAGE.hex() and answer["space"][name]["size"] == [3, 36, 36]
    if "obs" in answer["obs"]:
        assert answer["obs"]["obs"] == [0.5, -1.0, 2.0, 3.0] and answer["obs"]["rays"] == [0.0] * 36


def test_the_recurrent_controller_plays_the_policy_with_memory_and_forgets_at_reset(answers):
    """About 12 ticks, reset(), about 12 more: decisions at ticks 0 and 8, then at 16 from zero memory: each the
    torch LSTM's greedy action, its state carried from one decision to the next and zeroed by reset()."""
    answer = answers[0][("shipping-your-agent.md", "# Plays a recurrent policy (ppo_godot_lstm.py --gd")]
    recurrent = answers[3]
    assert answer["before_reset"] == 2 and len(answer["actions"]) == 3
    assert answer["n_steps"] < 16  # the plugin's reset() ran: n_steps counted from it
    expected, state = [], recurrent.initial_state(1)
    with torch.no_grad():
        for k, obs in enumerate(OBSERVATIONS):
            if k == answer["before_reset"]:
                state = recurrent.initial_state(1)
            action, _, _, state = recurrent.get_action(torch.tensor([obs["obs"]]), state, greedy=True)
            expected.append({"move": int(action[0, 0])})
    assert answer["actions"] == expected
    with torch.no_grad():  # the reset shows: carried on instead, the third decision would differ
        state = recurrent.initial_state(1)
        for obs in OBSERVATIONS:
            action, _, _, state = recurrent.get_action(torch.tensor([obs["obs"]]), state, greedy=True)
    assert int(action[0, 0]) != expected[2]["move"]


ENDS = ("your-own-godot-game.md", "# Ends episodes for the trainer, time-outs include")


def steps_with_done(run):
    """The step messages the Sync node would send (its first read answers the reset): those with done, the others."""
    steps = run["messages"][1:]
    assert all(len(m["done"]) == 1 for m in steps)
    return [m for m in steps if m["done"][0]], [run["messages"][0], *(m for m in steps if not m["done"][0])]


@pytest.mark.parametrize("order", ["sync last", "sync first"])
def test_the_end_of_an_episode_goes_out_with_done_and_its_final_observation(order, answers):
    """60 physics ticks of a game on the page's controller, read every 8 as sync.gd reads: episode 0 reaches its
    goal at its 13th step, episode 1 times out (reset_after 20), episode 2 reaches its goal at its 9th. The info
    read with each done holds that episode's last observation (what the game saw just before it reset), the
    time-out's alone TimeLimit.truncated; every other message's info is {}. The Sync node before the game in the
    tree or after it: the same."""
    run = answers[0][ENDS]["snippet"][order]
    finals = run["finals"]
    assert finals[:3] == [{"obs": [13, 0]}, {"obs": [20, 1]}, {"obs": [9, 2]}]
    ended, others = steps_with_done(run)
    assert [m["info"] for m in ended] == [[{"terminal_observation": finals[0]}],
                                          [{"terminal_observation": finals[1], "TimeLimit.truncated": True}],
                                          [{"terminal_observation": finals[2]}]]
    assert [m["obs"][0]["obs"][1] for m in ended] == [1, 2, 3]  # the obs sent with done: already the next episode's
    assert others and all(m["info"] == [{}] for m in others)
    runs = answers[0][ENDS]["snippet"]  # the two orders did differ: placed first, the Sync node reads before the move
    first_steps = [runs[order]["messages"][1]["obs"][0]["obs"][0] for order in ["sync first", "sync last"]]
    assert first_steps == [8, 9]


def test_the_plugins_time_out_alone_ends_nothing_for_the_trainer(answers):
    """The same game on the plugin's controller alone (its game_over() sets done and needs_reset at the goals): the
    game resets at the time-out too, but done goes out at the two goals only, and info is always {}."""
    for order in ["sync last", "sync first"]:
        run = answers[0][ENDS]["plugin only"][order]
        assert run["finals"][:3] == [{"obs": [13, 0]}, {"obs": [20, 1]}, {"obs": [9, 2]}]
        ended, others = steps_with_done(run)
        assert [m["obs"][0]["obs"][1] for m in ended] == [1, 3]  # episode 0's end, then episode 2's: none for 1
        assert all(m["info"] == [{}] for m in ended + others)
