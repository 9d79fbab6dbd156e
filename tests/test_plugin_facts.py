"""The pages' facts about the Godot RL Agents plugin (Godot 4), pinned. Every line number a page cites in one of
the plugin's files, and every plugin function it names, is in a table below with words those lines hold at the
plugin's commit bf5d6a2 (checked by hand in a clone; CUSTOM_ENV.md is godot_rl_agents' at a314cc4): a page
that cites anything else fails here, and so does a table entry no page cites any more. With GODOT_RL_PLUGIN set
to a checkout's addons/godot_rl_agents folder, the table is checked against the real files. Also pinned: the
plugin's scene root names and class names, in tests/godot4_plugin.py's stand-ins (with the defaults the table
holds) and in the snippets' `$` paths; the pages' `--policy=` paths (absolute or res://: a relative path is read
inside the game's project, res://); `--speedup` taken as a float, as the plugin's sync.gd reads it. And facts a page
once had wrong (WRONG), the flags a game gets named as sync.gd's or the engine's, the first editor run's agent-steps
from ppo_godot.py's own arithmetic, 127.0.0.1 at both ends, and what the Sync node does in a shipped game."""
import inspect
import os
import re
from pathlib import Path

import pytest

import godot4_plugin
import ppo_godot
from conftest import REPO, assert_one_line_error, run_script

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# The plugin's files the pages cite, by the name a page uses, and where each lies from the addon folder
# (None: outside the plugin, godot_rl_agents' docs/CUSTOM_ENV.md at a314cc4)
FILES = {
    "sync.gd": "sync.gd",
    "ai_controller_2d.gd": "controller/ai_controller_2d.gd",
    "ai_controller_3d.gd": "controller/ai_controller_3d.gd",
    "ONNX_wrapper.gd": "onnx/wrapper/ONNX_wrapper.gd",
    "ONNXInference.cs": "onnx/csharp/ONNXInference.cs",
    "RGBCameraSensor2D.gd": "sensors/sensors_2d/RGBCameraSensor2D.gd",
    "RGBCameraSensor3D.gd": "sensors/sensors_3d/RGBCameraSensor3D.gd",
    "RaycastSensor3D.gd": "sensors/sensors_3d/RaycastSensor3D.gd",
    "RaycastSensor3D.tscn": "sensors/sensors_3d/RaycastSensor3D.tscn",
    "Godot RL Agents.csproj": "../../Godot RL Agents.csproj",  # the plugin repository's root
    "CUSTOM_ENV.md": None,
}
# (file, lines): words those lines hold
CITED = {
    ("sync.gd", "6-10"): ["enum ControlModes", "ONNX_INFERENCE"],
    ("sync.gd", "13"): ["var action_repeat := 8"],
    ("sync.gd", "15"): ["var speed_up := 1.0"],
    ("sync.gd", "17"): ['var onnx_model_path := ""'],
    ("sync.gd", "29"): ['const DEFAULT_SEED := "1"'],
    ("sync.gd", "64-69"): ["set_pause(true)", "create_timer(1.0)", "set_pause(false)"],
    ("sync.gd", "75"): ["physics_ticks_per_second = _get_speedup() * 60"],
    ("sync.gd", "75-76"): ["physics_ticks_per_second", "time_scale = _get_speedup()"],
    ("sync.gd", "103-112"): ["connect_to_server()", '_set_heuristic("model", agents_training)', "push_warning"],
    ("sync.gd", "105"): ['_set_heuristic("model", agents_training)'],
    ("sync.gd", "117-121"): ["control_mode == ControlModes.ONNX_INFERENCE", "FileAccess.file_exists(onnx_model_path)"],
    ("sync.gd", "118-121"): ["assert(", "FileAccess.file_exists(onnx_model_path)"],
    ("sync.gd", "129-145"): ["agent.onnx_model_path.is_empty()", "onnx_models[onnx_model_path]"],
    ("sync.gd", "130-139"): ["assert(", "onnx_models.has(onnx_model_path)"],
    ("sync.gd", "146-156"): ["onnx_models.has(agent.onnx_model_path)", "ONNXModel.new(agent.onnx_model_path, 1)"],
    ("sync.gd", "148-154"): ["assert(", "FileAccess.file_exists(agent.onnx_model_path)"],
    ("sync.gd", "162"): ['_set_heuristic("model", agents_inference)'],
    ("sync.gd", "189-197"): ["n_action_steps % action_repeat != 0", "_training_process()", "_inference_process()"],
    ("sync.gd", "241"): ["_set_agent_actions(actions, agents_inference)"],
    ("sync.gd", "299"): ["largest_logit: float = -INF"],
    ("sync.gd", "363"): ['get_nodes_in_group("AGENT")'],
    ("sync.gd", "449"): ['var ip = "127.0.0.1"'],
    ("sync.gd", "460-491"): ["func _get_args", "OS.get_cmdline_args()", 'args.get("speedup"', 'args.get("port"',
                             'args.get("env_seed"', 'args.get("action_repeat"'],
    ("sync.gd", "485-487"): ["DEFAULT_SEED", "seed(_seed)"],
    ("sync.gd", "507-510"): ['message["type"] == "reset"', "_reset_agents()"],
    ("sync.gd", "550-553"): ["func _reset_agents_if_done", "agent.set_done_false()"],
    ("sync.gd", "556-558"): ["func _reset_agents(agents = all_agents)", "agent.needs_reset = true"],
    ("sync.gd", "594-596"): ["func _set_agent_actions", "set_action(actions[i])"],
    ("ai_controller_3d.gd", "13"): ['var onnx_model_path := ""'],
    ("ai_controller_3d.gd", "15"): ["var reset_after := 1000"],
    ("ai_controller_3d.gd", "35"): ['var heuristic := "human"'],
    ("ai_controller_3d.gd", "45"): ['add_to_group("AGENT")'],
    ("ai_controller_3d.gd", "98-101"): ["func _physics_process", "n_steps > reset_after", "needs_reset = true"],
    ("ai_controller_2d.gd", "104-109"): ["func get_obs_space", '"obs": {"size": [len(obs["obs"])], "space": "box"}'],
    ("ONNX_wrapper.gd", "3"): ['load("res://addons/godot_rl_agents/onnx/csharp/ONNXInference.cs")'],
    ("ONNXInference.cs", "104"): ["FileAccess.Open(Path"],
    ("ONNXInference.cs", "105"): ["file.GetBuffer"],
    ("RGBCameraSensor2D.gd", "42"): ["preview_size = displayed_image_scale_factor * resized_image_resolution"],
    ("RGBCameraSensor3D.gd", "53-63"): ["func get_camera_shape", "[4, size.y, size.x]", "[3, size.y, size.x]"],
    ("RaycastSensor3D.gd", "3"): ["class_name RayCastSensor3D"],
    ("RaycastSensor3D.gd", "4"): ["@export_flags_3d_physics var collision_mask = 1"],
    ("RaycastSensor3D.gd", "17"): ["var n_rays_width := 6.0"],
    ("RaycastSensor3D.gd", "24"): ["var n_rays_height := 6.0"],
    ("RaycastSensor3D.gd", "31"): ["var ray_length := 10.0"],
    ("RaycastSensor3D.gd", "52"): ["var collide_with_areas := false"],
    ("RaycastSensor3D.gd", "59"): ["var collide_with_bodies := true"],
    ("RaycastSensor3D.gd", "72-75"): ["func _update():", "if Engine.is_editor_hint():", "_spawn_nodes()"],
    ("RaycastSensor3D.gd", "78-83"): ["func _ready()", "else:", "_spawn_nodes()"],
    ("RaycastSensor3D.gd", "118"): ["ray.collision_mask = collision_mask"],
    ("RaycastSensor3D.gd", "148-153"): ["func to_spherical_coords(r, inc, azimuth)",
                                        "r * cos(deg_to_rad(inc)) * cos(deg_to_rad(azimuth))"],
    ("RaycastSensor3D.gd", "156-176"): ["func get_observation() -> Array:", "calculate_raycasts()", "for ray in rays:",
                                        "force_raycast_update()", "if class_sensor:", "boolean_class_mask"],
    ("RaycastSensor3D.gd", "179-185"): ["func _get_raycast_distance", "if !ray.is_colliding():", "return 0.0",
                                        "clamp(distance, 0.0, ray_length)",
                                        "return (ray_length - distance) / ray_length"],
    ("RaycastSensor3D.tscn", "5-9"): ['[node name="RaycastSensor3D" type="Node3D"]', "n_rays_width = 4.0",
                                      "n_rays_height = 2.0", "ray_length = 11.0"],
    ("Godot RL Agents.csproj", "3"): ["<TargetFramework>net6.0</TargetFramework>"],
    ("Godot RL Agents.csproj", "8"): ['"Microsoft.ML.OnnxRuntime" Version="1.15.1"'],
    ("CUSTOM_ENV.md", "95-96"): ["func _ready():", "pass"],
    ("CUSTOM_ENV.md", "103"): ["delete this code"],
    ("CUSTOM_ENV.md", "148-156"): ["func game_over():", "ai_controller.needs_reset = true", "ai_controller.reset()"],
    ("CUSTOM_ENV.md", "159"): ['ai_controller.heuristic == "human"'],
    ("CUSTOM_ENV.md", "188"): ["add an `AGENT` group"],
}
# The plugin functions the pages name (in backticks), and the file that defines each
FUNCTIONS = {
    "_initialize": "sync.gd", "_initialize_training_agents": "sync.gd", "_initialize_inference_agents": "sync.gd",
    "_get_agents": "sync.gd", "_set_agent_mode": "sync.gd", "_training_process": "sync.gd",
    "_inference_process": "sync.gd", "_heuristic_process": "sync.gd", "_reset_agents_if_done": "sync.gd",
    "_get_obs_from_agents": "sync.gd", "_get_info_from_agents": "sync.gd", "_get_reward_from_agents": "sync.gd",
    "_get_done_from_agents": "sync.gd", "_get_speedup": "sync.gd", "_set_action_repeat": "sync.gd",
    "_get_args": "sync.gd", "handle_message": "sync.gd", "_reset_agents": "sync.gd",
    "RunInference": "ONNXInference.cs",
    "get_observation": "RaycastSensor3D.gd", "to_spherical_coords": "RaycastSensor3D.gd",
    "_get_raycast_distance": "RaycastSensor3D.gd", "_update": "RaycastSensor3D.gd",
    "_player": "ai_controller_2d.gd",  # a member, not a function: the body init(player) hands the controller
}
GODOT_CALLBACKS = {"_ready", "_physics_process", "_process", "_init", "_notification"}  # any node's, not cited
# The plugin's sensor scenes: root node name and type, its script and the script's class (at bf5d6a2)
SCENES = {
    "sensors/sensors_2d/RGBCameraSensor2D.tscn": ("RGBCameraSensor2D", "Node2D", "RGBCameraSensor2D"),
    "sensors/sensors_3d/RGBCameraSensor3D.tscn": ("RGBCameraSensor3D", "Node3D", "RGBCameraSensor3D"),
    "sensors/sensors_3d/RaycastSensor3D.tscn": ("RaycastSensor3D", "Node3D", "RayCastSensor3D"),
}
# The plugin's scripts the stand-ins take the place of: class_name and what it extends
CLASSES = {
    "sync.gd": ("Sync", "Node"),
    "controller/ai_controller_2d.gd": ("AIController2D", "Node2D"),
    "controller/ai_controller_3d.gd": ("AIController3D", "Node3D"),
    "onnx/wrapper/ONNX_wrapper.gd": ("ONNXModel", "Resource"),
    "sensors/sensors_2d/RGBCameraSensor2D.gd": ("RGBCameraSensor2D", "Node2D"),
    "sensors/sensors_3d/RGBCameraSensor3D.gd": ("RGBCameraSensor3D", "Node3D"),
    "sensors/sensors_3d/ISensor3D.gd": ("ISensor3D", "Node3D"),
    "sensors/sensors_3d/RaycastSensor3D.gd": ("RayCastSensor3D", "ISensor3D"),
}
REAL_PLUGIN = "GODOT_RL_PLUGIN"
FILE_NAME = r"Godot RL Agents\.csproj|[\w./-]+\.(?:py|gd|md|cs|tscn)\b"  # a file a page names (its path's last part)
LINES = r"\blines?\s+(\d+(?:-\d+)?(?:(?:,\s+|\s+and\s+)\d+(?:-\d+)?)*)"


def cited_lines(pages=PAGES):
    """{(file, lines): [(page, line on the page)]}: each "line N" / "lines N-M, K and L" on a page, taken with
    the nearest file named before it in its section, when that file is the plugin's."""
    found = {}
    for page in pages:
        text = page.read_text()
        for match in re.finditer(LINES, text):
            section = text[:match.start()].rsplit("\n#", 1)[-1]
            named = re.findall(FILE_NAME, section)
            name = named[-1].rsplit("/", 1)[-1] if named else None
            if name not in FILES:
                continue  # the script's own files, or no file
            for lines in re.split(r",\s+|\s+and\s+", match.group(1)):
                found.setdefault((name, lines), []).append((page.name, text[:match.start()].count("\n") + 1))
    return found


def named_functions():
    """{function: [page]}: each backticked plugin-like function name (a leading underscore, or one of FUNCTIONS)
    on a page, outside its code blocks."""
    found = {}
    for page in PAGES:
        text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.M | re.S)
        for name in re.findall(r"`(_\w+|{})(?:\(\))?`".format("|".join(FUNCTIONS)), text):
            found.setdefault(name, []).append(page.name)
    return found


def test_every_plugin_line_a_page_cites_is_in_the_table():
    cited = cited_lines()
    assert {k: v for k, v in cited.items() if k not in CITED} == {}, "cited, not in CITED: check it, then add it"
    assert [k for k in CITED if k not in cited] == [], "in CITED, cited by no page any more"


def test_every_plugin_function_a_page_names_is_in_the_table():
    named = named_functions()
    assert {k: v for k, v in named.items() if k not in FUNCTIONS and k not in GODOT_CALLBACKS} == {}
    assert [k for k in FUNCTIONS if k not in named] == [], "in FUNCTIONS, named by no page any more"


def test_a_citation_to_an_unknown_range_is_found(tmp_path):
    """The check itself: a page citing sync.gd's lines 96-114 (a range the pages once gave) is caught."""
    page = tmp_path / "page.md"
    page.write_text("## A section\n\nIt connects (`sync.gd`'s `_initialize_training_agents`, lines 96-114), and "
                    "`ppo_godot.py` line 12 is not the plugin's.\n")
    assert cited_lines([page]) == {("sync.gd", "96-114"): [("page.md", 3)]}


def scene_root(text):
    """A .tscn's root node: (name, type), and the path of its script."""
    node = re.search(r'^\[node name="([^"]+)" type="(\w+)"\]', text, re.M)
    script = re.search(r'^\[ext_resource type="Script" path="res://([^"]+)"', text, re.M)
    return node.group(1), node.group(2), script.group(1)


def script_class(text):
    return re.search(r"^class_name (\w+)", text, re.M).group(1), re.search(r"^extends (\w+)", text, re.M).group(1)


def check_addon(files, folder=godot4_plugin.ADDON):
    """The scenes' root names and types, their scripts' paths and classes, the scripts' class names and bases."""
    for path, (name, node_type, class_name) in SCENES.items():
        root, root_type, script = scene_root(files[f"{folder}/{path}"])
        assert (root, root_type) == (name, node_type), path
        assert script == f"{godot4_plugin.ADDON}/{path.removesuffix('.tscn')}.gd", path
        assert script_class(files[script])[0] == class_name, path
    for path, expected in CLASSES.items():
        assert script_class(files[f"{folder}/{path}"]) == expected, path


def test_the_stand_ins_have_the_plugins_paths_scene_roots_and_class_names():
    check_addon(godot4_plugin.addon_files())


def test_the_stand_ins_keep_the_plugins_defaults():
    """Each default the table pins (a `var name := value` line: reset_after 1000, action_repeat 8, ...) is the
    stand-ins' too, ai_controller_3d.gd's in both controllers (the plugin's two share them): a game that leaves a
    setting at its default (a scene with no reset_after) runs in the tests as on the plugin."""
    stand_ins = godot4_plugin.addon_files()
    declared = [(name, word) for (name, _), words in CITED.items() for word in words
                if re.fullmatch(r"var \w+ := .+", word)]
    assert ("ai_controller_3d.gd", "var reset_after := 1000") in declared
    for name, declaration in declared:
        for file in [FILES[name]] + (["controller/ai_controller_2d.gd"] if name == "ai_controller_3d.gd" else []):
            assert re.search(rf"^(@export\w*(\(.*\))? )?{re.escape(declaration)}$",
                             stand_ins[f"{godot4_plugin.ADDON}/{file}"], re.M), (file, declaration)


def test_the_snippets_name_each_sensor_node_as_its_scene_root():
    """A `$` path names a node: a sensor added from its scene has the scene's root name (RaycastSensor3D for the
    class RayCastSensor3D)."""
    roots = {name for name, _, _ in SCENES.values()}
    named = {name for page in PAGES for snippet in re.findall(r"^```gdscript\n(.*?)^```", page.read_text(),
                                                              flags=re.M | re.S)
             for name in re.findall(r"\$(\w*Sensor\w*)", snippet)}
    assert named and named <= roots, named - roots


def test_policy_paths_on_the_pages_are_absolute_or_res():
    """The demo game load()s --policy's file: a relative path is read inside the game's project (res://), so the
    pages give an absolute path ($PWD/... in a shell) or res://."""
    given = [(page.name, path) for page in PAGES
             for path in re.findall(r"--policy(?:_\w+)?=([^\s`)]+)", page.read_text())]
    assert given
    assert [(page, path) for page, path in given
            if not path.startswith(("/", "$PWD/", "res://")) and path != "PATH"] == []


WALKTHROUGH = REPO / "docs" / "godot4-walkthrough.md"
SHIPPING = REPO / "docs" / "shipping-your-agent.md"
# The command-line keys sync.gd reads (args.get in _get_args's lines, in CITED), and the engine's own flags
PLUGIN_ARGS = set(re.findall(r'args\.get\("(\w+)"', " ".join(CITED[("sync.gd", "460-491")])))
ENGINE_FLAGS = {"--fixed-fps", "--disable-render-loop", "--headless", "--no-window"}
# What the plugin's code contradicts, said on a page once: each pattern, with the fact it ran against
WRONG = {
    r"(?:Speed Up|speed_up)\b.{0,60}?only in the editor": "sync.gd applies speed_up in every mode (lines 75-76)",
    r"sync\.gd`? never resets": "_reset_agents sets needs_reset on every agent at Python's reset (lines 556-558)",
    r"rows? (?:are|is|comes?) from[^.]*godot-rl's launcher": "ppo_godot.py starts the file itself, not godot-rl",
    r"set_action\(\s*[\w.]*act\(": "act() returns {} after a bad key: set_action() must not get it unchecked",
}


def section(text, heading):
    """A page's section: from the line that starts with heading to the next heading of its level or above (a
    "# comment" in a code block is no heading)."""
    level, lines, fenced, found = len(heading) - len(heading.lstrip("#")), [], False, False
    for line in text.splitlines():
        if found and not fenced and re.match(rf"#{{1,{level}}} ", line):
            break
        found = found or (not fenced and line.startswith(heading))
        fenced = fenced != line.startswith("```")
        if found:
            lines.append(line)
    assert lines, heading
    return "\n".join(lines)


def sentences(text):
    return re.split(r"(?<=[.!?])\s+(?=[A-Z`(\[])", " ".join(text.split()))


@pytest.mark.parametrize("wrong", WRONG)
def test_no_page_says_what_the_plugins_code_contradicts(wrong):
    pages = [*PAGES, REPO / "godot" / "starter" / "README.md"]
    said = [(page.name, m.group(0)) for page in pages for m in re.finditer(wrong, " ".join(page.read_text().split()))]
    assert said == [], WRONG[wrong]


def test_the_first_editor_run_does_the_agent_steps_ppo_godot_computes(capsys):
    """Step 4's run: --total-timesteps N with the game's agents makes whole rollouts of agents x --num-steps, the
    most that fit in N (ppo_godot.py's num_iterations and its note), and the page says that many agent-steps."""
    step = section(WALKTHROUGH.read_text(), "## 4. ")
    total = int(re.search(r"python ppo_godot\.py --total-timesteps (\d+)", step).group(1))
    agents = int(re.search(r"agents in it: (\d+)", step).group(1))
    said = re.search(r"whole rollouts of (\d+) steps.*?([\d,]+) agent-steps here", " ".join(step.split()))
    rollout, said = said.groups()
    args = ppo_godot.parse_args(["--total-timesteps", str(total)])
    batch = agents * args.num_steps
    ppo_godot.budget_note(total, batch, "the batch")
    steps = int(re.search(r"(\d+) steps$", capsys.readouterr().out.strip()).group(1))
    assert steps == max(1, total // batch) * batch  # the note says what train() runs
    assert (int(rollout), int(said.replace(",", ""))) == (batch, steps)


def test_the_flags_a_game_gets_are_named_as_the_plugins_or_the_engines():
    """Every flag ppo_godot.py gives a game is one sync.gd reads or one of the engine's own; no page says the
    plugin reads an engine flag, or the engine a plugin flag, and the walkthrough names each as whose it is."""
    given = set(re.findall(r'"(--[\w-]+)', inspect.getsource(ppo_godot.connect)))
    assert given - ENGINE_FLAGS == {f"--{key}" for key in PLUGIN_ARGS}
    plugin_says = r"\b(?:plugin|plugin's `?sync\.gd`?|`?sync\.gd`?|Sync node)\s+reads\b"
    mixed = []
    for page in PAGES:
        for sentence in sentences(page.read_text()):
            flags = set(re.findall(r"--[a-z][\w-]*", sentence)) & (given | ENGINE_FLAGS)
            if re.search(plugin_says, sentence) and flags & ENGINE_FLAGS:
                mixed.append((page.name, sentence))
            if re.search(r"engine's own", sentence) and flags - ENGINE_FLAGS:
                mixed.append((page.name, sentence))
    assert mixed == []
    said = sentences(section(WALKTHROUGH.read_text(), "## 5. "))
    named = lambda claim: {f for s in said if re.search(claim, s) for f in re.findall(r"--[a-z][\w-]*", s)}
    assert named(plugin_says) == given - ENGINE_FLAGS
    assert named(r"engine's own") == given & ENGINE_FLAGS - {"--no-window"}  # --no-window: Godot 3's


def test_both_ends_of_the_connection_are_127_0_0_1():
    """The trainers listen on 127.0.0.1 and sync.gd connects there (line 449, in CITED): step 4, where a game maker
    first connects, says so, and that a firewall's prompt may be denied."""
    for script in sorted(REPO.glob("ppo_godot*.py")):
        assert 'listener.bind(("127.0.0.1", port or 0))' in script.read_text(), script.name
    step = " ".join(section(WALKTHROUGH.read_text(), "## 4. ").split())
    assert re.search(r"ppo_godot\.py listens on 127\.0\.0\.1.*Sync node connects to 127\.0\.0\.1", step)
    assert re.search(r"firewall[^.]*deny", step)


def test_the_shipping_routes_say_what_the_sync_node_does():
    """The ONNX route keeps the Sync node: its step sets Speed Up back to 1, and names the seed(1) and the second's
    pause that stay. The GDScript route has none: the physics rate would then be the project's own, so its controller
    (the page's and the starter's) sets training's 60 ticks a game second itself."""
    onnx_step = " ".join(section(WALKTHROUGH.read_text(), "### 8b. ").split())
    onnx_page = " ".join(section(SHIPPING.read_text(), "## The ONNX route").split())
    for text in (onnx_step, onnx_page):
        assert re.search(r"Speed Up (?:back )?to 1", text) and "`seed(1)`" in text and "first second" in text
    rate = " ".join(section(SHIPPING.read_text(), "### The physics rate").split())
    assert "60 x `speed_up` physics ticks a second" in rate and "`physics/common/physics_ticks_per_second`" in rate
    assert "sets the engine back to 60 ticks a game second" in rate  # what the page's controller and the starter's do
    for controller in (SHIPPING.read_text(), (REPO / "godot/starter/shipped_controller.gd").read_text()):
        assert "\tvar rate := roundi(60 * Engine.time_scale)" in controller
        assert "\t\tEngine.physics_ticks_per_second = rate\n" in controller
    step = " ".join(section(WALKTHROUGH.read_text(), "### 8a. ").split())
    assert "project's own rate" in step and "`ShippedController` sets 60 when it is not" in step
    assert re.search(r"^common/physics_ticks_per_second=60$", (REPO / "godot/starter/project.godot").read_text(), re.M)


OWN_GAME = REPO / "docs" / "your-own-godot-game.md"
RAY_SENSOR = "## The plugin's 3D ray sensor"
# The ray sensor's facts in its one section: words the section must hold (a regex), and the plugin's lines (in
# CITED) the section cites for them
RAY_FACTS = {
    r"root node named `RaycastSensor3D`": [("RaycastSensor3D.tscn", "5-9")],
    r"class is `RayCastSensor3D`.*Add Child Node, the node is named `RayCastSensor3D`": [("RaycastSensor3D.gd", "3")],
    r"`\$RaycastSensor3D` is null": [("RaycastSensor3D.tscn", "5-9"), ("RaycastSensor3D.gd", "3")],
    r"`n_rays_width` x `n_rays_height` values": [("RaycastSensor3D.gd", "156-176")],
    r"already in \[0, 1\].*1 for a hit at the sensor, falling to 0 at `ray_length`, and 0 when the ray hits "
    r"nothing.*no scaling": [("RaycastSensor3D.gd", "179-185")],
    r"around the sensor node's \+Z axis.*forward in Godot is -Z.*180 degrees about Y": [("RaycastSensor3D.gd",
                                                                                         "148-153")],
    r"`collision_mask` is layer 1 by default.*set the sensor's mask": [("RaycastSensor3D.gd", "4"),
                                                                       ("RaycastSensor3D.gd", "118")],
    r"bodies, not areas": [("RaycastSensor3D.gd", "52"), ("RaycastSensor3D.gd", "59")],
    r"Set them in the inspector": [("RaycastSensor3D.gd", "78-83"), ("RaycastSensor3D.gd", "72-75")],
    r"own frame.*`player\.to_local\(.*`player\.global_transform\.basis\.inverse\(\) \*.*\[-1, 1\]": [],
}


def test_the_ray_sensors_facts_are_in_one_section_with_the_plugins_lines(tmp_path):
    """Direction, values, mask, name and the agent's frame, in your-own-godot-game.md's ray sensor section, each
    with the plugin lines it rests on; the rays' counts and lengths the section gives are the table's (the scene's
    4 x 2 of length 11, the script's 6 x 6 of length 10), and so is the value's formula. The pages link the section
    where a game maker meets the sensor: the walkthrough's step 2 and the snippet that uses it."""
    text = section(OWN_GAME.read_text(), RAY_SENSOR)
    flat = " ".join(text.split())
    page = tmp_path / OWN_GAME.name
    page.write_text(text)
    cited = cited_lines([page])
    for fact, lines in RAY_FACTS.items():
        assert re.search(fact, flat), fact
        assert [key for key in lines if key not in cited] == [], fact
    number = lambda file, lines: re.search(r"[\d.]+$", " ".join(CITED[(file, lines)])).group(0).removesuffix(".0")
    scene = re.findall(r"= ([\d.]+)", " ".join(CITED[("RaycastSensor3D.tscn", "5-9")]))
    assert f"{scene[0][0]} x {scene[1][0]} rays of length {scene[2].removesuffix('.0')}" in flat
    assert (f"{number('RaycastSensor3D.gd', '17')} x {number('RaycastSensor3D.gd', '24')} rays of length "
            f"{number('RaycastSensor3D.gd', '31')}") in flat
    formula = re.search(r"`(\(ray_length - distance\) / ray_length)`", flat).group(1)
    assert f"return {formula}" in CITED[("RaycastSensor3D.gd", "179-185")]
    link = "(your-own-godot-game.md#the-plugins-3d-ray-sensor)"
    assert link in section(WALKTHROUGH.read_text(), "## 2. ")
    assert "(#the-plugins-3d-ray-sensor)" in section(OWN_GAME.read_text(), "## Declaring the observations")


@pytest.fixture
def plugin():
    if not os.environ.get(REAL_PLUGIN):
        pytest.skip(f"checks the table against the real plugin: set {REAL_PLUGIN} to a checkout's "
                    f"addons/godot_rl_agents folder (godot_rl_agents_plugin at {godot4_plugin.PLUGIN_COMMIT})")
    return Path(os.environ[REAL_PLUGIN])


def test_the_table_holds_on_the_real_plugin(plugin):
    """Each cited range holds its words and starts and ends on a line that is not blank; each named function is
    defined in its file; the scenes and classes are the plugin's. The csproj, at the repository's root, is
    checked when the checkout has it; CUSTOM_ENV.md is another repository's."""
    checked = 0
    for (name, lines), words in CITED.items():
        if FILES[name] is None or not (plugin / FILES[name]).exists():
            assert name in ("CUSTOM_ENV.md", "Godot RL Agents.csproj"), name
            continue
        text = (plugin / FILES[name]).read_text(encoding="utf-8").splitlines()
        first, last = (int(n) for n in (lines.split("-") if "-" in lines else (lines, lines)))
        cited = "\n".join(text[first - 1:last])
        assert all(word in cited for word in words), (name, lines, cited)
        assert text[first - 1].strip() and text[last - 1].strip(), (name, lines)
        checked += 1
    assert checked >= len(CITED) - 7
    for function, name in FUNCTIONS.items():
        definition = rf"^(func {function}\(|var {function}\b)" if name.endswith(".gd") else rf"\b{function}\("
        assert re.search(definition, (plugin / FILES[name]).read_text(encoding="utf-8"), re.M), function
    real = {f"{godot4_plugin.ADDON}/{path}": (plugin / path).read_text(encoding="utf-8")
            for path in [*SCENES, *(p.removesuffix(".tscn") + ".gd" for p in SCENES), *CLASSES]}
    check_addon(real)


def test_the_ray_sensors_scene_casts_along_plus_z(plugin):
    """The scene's rays, as saved, point along the sensor's +Z (z above |x| and |y|), as to_spherical_coords makes
    them; the page says to turn the sensor 180 degrees about Y (test_the_ray_sensors_facts_are_in_one_section_...).
    At bf5d6a2 the scene holds 6 saved rays, not its 4 x 2: _ready() replaces them with rays of its settings."""
    scene = (plugin / FILES["RaycastSensor3D.tscn"]).read_text(encoding="utf-8")
    targets = [[float(v) for v in m.split(",")] for m in re.findall(r"target_position = Vector3\(([^)]*)\)", scene)]
    assert targets and all(z > max(abs(x), abs(y)) for x, y, z in targets), targets


@pytest.mark.parametrize("script", ["ppo_godot.py", "ppo_godot_bc.py", "ppo_godot_camera.py", "ppo_godot_lstm.py",
                                    "ppo_godot_multi_policy.py", "ppo_godot_self_play.py"])
def test_speedup_goes_to_the_game_as_a_float_as_the_plugin_reads_it(script, tmp_path, port):
    """sync.gd reads --speedup with to_float() (_get_speedup) and its speed_up is a float: 1.5 goes to the game
    as 1.5; a whole number as before (8, not 8.0); nan is refused in one line."""
    argv_file, game = tmp_path / "argv", tmp_path / "game.x86_64"
    game.write_text(f'#!/bin/sh\necho "$@" >> "{argv_file}"\nexit 3\n')
    game.chmod(0o755)
    demos = ["--demos", str(REPO / "godot" / "chase" / "demos" / "chase_discrete_scripted.json")]
    for speedup in ["1.5", "8"]:
        run_script(script, "--env-path", str(game), "--port", str(port), "--speedup", speedup,
                   *(demos if script == "ppo_godot_bc.py" else []), cwd=tmp_path, check=False)
    sent = [arg for line in argv_file.read_text().splitlines() for arg in line.split() if arg.startswith("--speedup")]
    assert sent == ["--speedup=1.5", "--speedup=8"]
    assert_one_line_error(run_script(script, "--speedup", "nan", cwd=tmp_path, check=False),
                          "--speedup must be a positive number, got nan")
