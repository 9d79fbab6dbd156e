"""The starter a game maker copies (godot/starter/) runs on Godot 4.6 (the official web build in headless Chromium,
tests/godot4_web.py) with the Godot RL Agents plugin stood in (tests/godot4_plugin.py): its files as the repository
holds them, the addon beside them at the plugin's paths, and a driver scene (DRIVER below) that instances the
starter's scenes and writes down what happened. One run holds every case (a second one, under another --env_seed,
the shipping scene before the first export, when there is no policy file yet, and a training case; a third, the
shipping scene on the project set to another physics rate, at that rate). With
GODOT_RL_PLUGIN set to a real checkout's addons/godot_rl_agents, the same runs take the plugin's own controller
(sync.gd stays the stand-in: the web build has no TCP)."""
import copy
import json
import math
import os
import re

import pytest
import torch

import godot4_plugin
import godot4_web
import ppo_godot
from conftest import REPO

pytestmark = pytest.mark.xdist_group("starter")  # one worker runs the module: its two Godot runs happen once
STARTER = REPO / "godot" / "starter"
LAYOUT, HEADS = [("obs", (4,))], [("move", "discrete", 5)]  # what ai_controller.gd declares
DIRECTIONS = [[0, 0], [0, -1], [0, 1], [-1, 0], [1, 0]]  # the action "move": stay, up, down, left, right


def starter_number(file, pattern):
    return float(re.search(pattern, (STARTER / file).read_text(), re.M).group(1))


ARENA_SIZE = starter_number("player.gd", r"^const ARENA_SIZE := ([\d.]+)")
MIN_START_DISTANCE = starter_number("player.gd", r"^const MIN_START_DISTANCE := ([\d.]+)")
ACTION_REPEAT = int(starter_number("train.tscn", r"^action_repeat = (\d+)"))  # the Sync node's
RESET_AFTER = int(starter_number("train.tscn", r"^reset_after = (\d+)"))
SPEEDUP = 32  # --speedup: up to 1920 physics ticks a second (each still 1/60 of a game second), 32 a frame
TICKS = 2000  # per training case: 250 reads of the Sync node, four time-outs of a player that stands still
ENV_SEEDS = (3, 4)  # the two runs' --env_seed (ppo_godot.py gives the game its --seed so), none a case's seed
EDGE_TICKS = 160  # the "edges" policy pushes each way this long: more than the 120 ticks the arena takes to cross
# The driver: the main scene of the test runs (override.cfg sets it; project.godot stays the starter's). For each
# case of res://starter_cases.json it instances a scene of the starter (and another inside it), plays it for some
# physics ticks and prints one line of JSON; then DONE. At the start of every tick, before any node of the level
# runs, it writes down each player's state and its goal's position, and for a scripted policy hands the Sync node
# this tick's action. It seeds Godot's global random numbers with the case's seed before the level's _ready: the
# first episodes and a level without a Sync node draw from there (a Sync node seeds them again with --env_seed).
DRIVER = r"""extends Node


class Recorder:
	# Stands between a ShippedController and its policy: what it asked and what it got.
	var policy
	var decisions = []

	func _init(wrapped):
		policy = wrapped

	func act(obs: Dictionary) -> Dictionary:
		var action = policy.act(obs)
		decisions.append({"tick": Engine.get_physics_frames(), "obs": obs, "action": action})
		return action


func _ready():
	if SPEEDUP > 1:  # 1: the project's own rate and time scale, as a shipped game runs
		Engine.physics_ticks_per_second = SPEEDUP * 60  # as the Sync node does with --speedup (the same numbers)
		Engine.time_scale = SPEEDUP
		Engine.max_physics_steps_per_frame = SPEEDUP  # the engine's 8 a frame would hold it to 480 ticks a second
	for case in JSON.parse_string(FileAccess.get_file_as_string("res://starter_cases.json")):
		print(JSON.stringify(await play(case), "", false, true))
	print("DONE")


func play(case):
	await get_tree().process_frame  # between two frames' ticks: the level's first tick is one the driver sees
	var level = load(case["scene"]).instantiate()
	var players = [level.get_node("Player")]
	if case["inside"]:
		var inner = load(case["inside"]).instantiate()
		level.add_child(inner)
		players.append(inner.get_node("Player"))
	seed(case["seed"])
	add_child(level)  # every _ready runs: the players' first episodes, the controllers', the Sync node's
	var sync = level.get_node_or_null("Sync")
	var recorders = []
	for player in players:
		recorders.append(null)
		if "policy" in player.ai_controller and player.ai_controller.policy != null:
			recorders[-1] = Recorder.new(player.ai_controller.policy)
			player.ai_controller.policy = recorders[-1]
	var logs = []
	var deltas = []  # each tick's game time, in seconds
	for player in players:
		logs.append({"ends": [], "moves": [], "positions": [], "goals": [], "first_tick": -1,
				"ready": [[player.position.x, player.position.y], [player.goal.position.x, player.goal.position.y]],
				"heuristic": player.ai_controller.heuristic,
				"in_agent_group": player.ai_controller.is_in_group("AGENT"),
				"obs_space": player.ai_controller.get_obs_space(),
				"action_space": player.ai_controller.get_action_space()})
	for tick in range(case["ticks"]):
		await get_tree().physics_frame  # the start of a tick: nothing of the level has run yet
		deltas.append(get_physics_process_delta_time())
		for i in range(len(players)):
			var controller = players[i].ai_controller
			if logs[i]["first_tick"] == -1:
				logs[i]["first_tick"] = Engine.get_physics_frames()
			if controller.done and controller.needs_reset:  # an end: the player resets in this tick
				logs[i]["ends"].append({"tick": Engine.get_physics_frames(), "obs": controller.get_obs(),
						"n_steps": controller.n_steps})
			logs[i]["moves"].append([controller.move.x, controller.move.y])
			logs[i]["positions"].append([players[i].position.x, players[i].position.y])
			logs[i]["goals"].append([players[i].goal.position.x, players[i].goal.position.y])
		if sync and case["policy"]:
			sync.actions = [[{"move": float(scripted(players[0].ai_controller, case["policy"], tick))}]]
	for i in range(len(players)):
		if recorders[i]:
			logs[i]["decisions"] = recorders[i].decisions
	var out = {"name": case["name"], "players": logs, "deltas": deltas}
	if sync:
		out["messages"] = sync.messages
		out["training_agents"] = []
		for agent in sync.agents_training:
			out["training_agents"].append(str(level.get_path_to(agent)))
	remove_child(level)
	level.free()
	return out


# A policy that heads for the goal along the longer axis, one that stays, or one that pushes left, up, right and
# down in turn, EDGE_TICKS ticks each.
func scripted(controller, policy, tick):
	if policy == "still":
		return 0
	if policy == "edges":
		return [3, 1, 4, 2][(tick / EDGE_TICKS) % 4]
	var to_goal = controller.get_obs()["obs"]
	if abs(to_goal[0]) >= abs(to_goal[1]):
		return 4 if to_goal[0] > 0 else 3
	return 2 if to_goal[1] > 0 else 1
""".replace("EDGE_TICKS", str(EDGE_TICKS))  # SPEEDUP: run()'s
DRIVER_SCENE = """[gd_scene load_steps=2 format=3]

[ext_resource type="Script" path="res://starter_test.gd" id="1"]

[node name="StarterTest" type="Node"]
script = ExtResource("1")
"""
OVERRIDE = '[application]\n\nrun/main_scene="res://starter_test.tscn"\n'  # res://override.cfg: the driver runs
CASES = [
    {"name": "heading", "scene": "res://train.tscn", "inside": None, "policy": "heading", "ticks": TICKS, "seed": 7},
    {"name": "still", "scene": "res://train.tscn", "inside": None, "policy": "still", "ticks": TICKS, "seed": 2},
    {"name": "ship", "scene": "res://ship.tscn", "inside": None, "policy": None, "ticks": 200, "seed": 3},
    {"name": "both", "scene": "res://train.tscn", "inside": "res://ship.tscn", "policy": "heading", "ticks": TICKS,
     "seed": 5},
]
BEFORE_EXPORT = [{"name": "ship before export", "scene": "res://ship.tscn", "inside": None, "policy": None,
                  "ticks": RESET_AFTER + 100, "seed": 5},
                 {"name": "edges", "scene": "res://train.tscn", "inside": None, "policy": "edges", "ticks": TICKS,
                  "seed": 2}]
NO_POLICY = ("ShippedController: no policy at res://npc_policy.gd: export one with ppo_godot.py "
             "--gdscript-export-path; until then the player stands still")


def starter_files():
    """The starter's files as the repository holds them: not the plugin (addons/), the editor's cache (.godot/) or
    an exported policy a game maker may have put there."""
    files = {}
    for path in sorted(STARTER.rglob("*")):
        name = path.relative_to(STARTER).as_posix()
        if path.is_file() and name.split("/")[0] not in ("addons", ".godot") and name != "npc_policy.gd":
            files[name] = path.read_text(encoding="utf-8")
    return files


def run(cases, env_seed, plugin=None, policy_text=None, speedup=SPEEDUP, physics_rate=None):
    """The cases in one Godot 4.6 run, the game started with --env_seed and --speedup as ppo_godot.py starts it (the
    driver sets the speed up too; at 1 it leaves the engine at the project's rate), the project's physics rate set
    to physics_rate if given: {case name: what the driver wrote}, and the engine's errors."""
    godot4_web.needs_godot4()
    files = {**starter_files(), **godot4_plugin.addon_files(plugin)}
    if physics_rate is not None:
        files["project.godot"] = re.sub(r"^common/physics_ticks_per_second=\d+$",
                                        f"common/physics_ticks_per_second={physics_rate}", files["project.godot"],
                                        flags=re.M)
        assert f"physics_ticks_per_second={physics_rate}" in files["project.godot"]
    files[".godot/global_script_class_cache.cfg"] = godot4_plugin.class_cache(files)
    files.update({"starter_test.gd": DRIVER.replace("SPEEDUP", str(speedup)), "starter_test.tscn": DRIVER_SCENE,
                  "override.cfg": OVERRIDE, "starter_cases.json": json.dumps(cases)})
    if policy_text is not None:
        files["npc_policy.gd"] = policy_text
    out = godot4_web.play(files, args=["--headless", f"--speedup={speedup}", f"--env_seed={env_seed}"], timeout=300)
    printed = [json.loads(line) for line in out["print"] if line.startswith("{")]
    assert out["done"] and [case["name"] for case in printed] == [case["name"] for case in cases], out
    return {case["name"]: case for case in printed}, out["error"]


REAL_PLUGIN = os.environ.get("GODOT_RL_PLUGIN")
PLUGINS = [pytest.param(None, id="stand-ins"), pytest.param(REAL_PLUGIN, id="real plugin", marks=pytest.mark.skipif(
    not REAL_PLUGIN, reason="set GODOT_RL_PLUGIN to a checkout's addons/godot_rl_agents (github.com/edbeeching/"
                            "godot_rl_agents_plugin) to run these on the plugin's own controller"))]


@pytest.fixture(scope="module", params=PLUGINS)
def runs(request, tmp_path_factory):
    """Both runs: the cases with an exported policy (a small untrained ppo_godot.Agent's), and, under the other
    --env_seed, the shipping scene before the first export and a training case; the agent too."""
    torch.manual_seed(0)
    agent = ppo_godot.Agent(LAYOUT, HEADS)
    path = tmp_path_factory.mktemp("policy") / "npc_policy.gd"
    ppo_godot.export_gdscript(agent, LAYOUT, HEADS, str(path), "the tests")
    with_policy = run(CASES, ENV_SEEDS[0], request.param, path.read_text())
    before_export = run(BEFORE_EXPORT, ENV_SEEDS[1], request.param)
    return {"cases": with_policy[0], "errors": with_policy[1], "before export": before_export[0],
            "errors before export": before_export[1], "agent": agent, "plugin": request.param,
            "policy": path.read_text()}


OTHER_RATE = 120  # the project's physics ticks a second in the rate test; training's are 60 a game second
RATE_MESSAGE = (f"WARNING: ShippedController: physics ticks per second set from {OTHER_RATE} to 60, as the policy "
                "trained (60 a game second; physics/common/physics_ticks_per_second)")


@pytest.fixture(scope="module")
def at_another_rate(runs):
    """ship.tscn with the same policy and seed as the ship case, on the starter set to OTHER_RATE physics ticks a
    second, at the project's own rate and time scale 1, as a shipped game runs: what the driver wrote, the errors."""
    ship = next(case for case in CASES if case["name"] == "ship")
    played, errors = run([ship], ENV_SEEDS[0], runs["plugin"], runs["policy"], speedup=1, physics_rate=OTHER_RATE)
    return played["ship"], errors


def steps(case):
    """The Sync node's step messages (its first message answers Python's reset)."""
    messages = case["messages"]
    assert messages[0]["type"] == "reset" and all(m["type"] == "step" for m in messages[1:])
    return messages[1:]


def ends_read(case, player=0):
    """The ends of a player's episodes that a read of the Sync node followed (the run stops after its last read):
    each {"tick": the tick its player reset in, "obs": its last observation, "n_steps": its length in ticks}."""
    return [end for end in case["players"][player]["ends"] if end["tick"] <= case["messages"][-1]["tick"]]


def test_the_starter_is_a_godot_4_project_with_the_plugin_enabled():
    project = (STARTER / "project.godot").read_text()
    for line in ['config_version=5', 'run/main_scene="res://train.tscn"',
                 'enabled=PackedStringArray("res://addons/godot_rl_agents/plugin.cfg")',
                 'renderer/rendering_method="gl_compatibility"', 'common/physics_ticks_per_second=60']:
        assert line in project.splitlines()
    ignored = [line for line in (STARTER / ".gitignore").read_text().splitlines() if not line.startswith("#")]
    assert ignored == [".godot/", "addons/"]
    # the shipped controller decides as often as the Sync node does in training, and times out alike
    assert starter_number("shipped_controller.gd", r"^const ACTION_REPEAT := (\d+)") == ACTION_REPEAT == 8
    assert starter_number("ship.tscn", r"^reset_after = (\d+)") == RESET_AFTER
    assert "sync.gd" not in (STARTER / "ship.tscn").read_text()


def test_each_scene_draws_the_arena_the_rules_use():
    """player.gd's arena, (0, 0) to (ARENA_SIZE, ARENA_SIZE), is what each scene shows (its Arena, from (0, 0)) and
    what the window holds."""
    for scene in ("train.tscn", "ship.tscn"):
        text = (STARTER / scene).read_text()
        arena = re.search(r'^\[node name="Arena" type="ColorRect" parent="\."\]\n(.*?)\n\n', text, re.M | re.S)
        arena = arena.group(1).splitlines()
        assert arena[:2] == [f"offset_right = {ARENA_SIZE}", f"offset_bottom = {ARENA_SIZE}"], scene
        assert not [line for line in arena if line.startswith(("offset_left", "offset_top", "position"))], scene
    for side in ("width", "height"):
        assert starter_number("project.godot", rf"^window/size/viewport_{side}=(\d+)") == ARENA_SIZE


def test_the_runs_have_no_script_error(runs):
    """No parse or load error, no push_error (the stand-ins' for a method the game must write). The engine is a
    release build: an error while a script runs (a missing method, a bad index) is not reported and the function
    goes on, so the tests below check what the game does."""
    assert runs["errors"] == []


@pytest.mark.parametrize("name", ["heading", "still"])
def test_the_sync_node_collects_one_agent_whose_observations_fit_the_space_it_declares(runs, name):
    case = runs["cases"][name]
    player = case["players"][0]
    assert case["training_agents"] == ["Player/AIController2D"]
    assert player["heuristic"] == "model" and player["in_agent_group"]
    assert player["obs_space"] == {"obs": {"size": [4], "space": "box"}}
    assert player["action_space"] == {"move": {"size": 5, "action_type": "discrete"}}
    messages = case["messages"]
    assert len(messages) >= TICKS // ACTION_REPEAT - 4
    observations = [m["obs"][0]["obs"] for m in messages]
    observations += [m["info"][0]["terminal_observation"]["obs"] for m in messages if m["info"][0]]
    assert all(len(obs) == 4 and all(-1 <= v <= 1 for v in obs) for obs in observations)


def test_an_observation_is_the_vector_to_the_goal_over_the_arena_then_the_velocity_over_the_speed(runs):
    """Each observation the Sync node read at a tick: the goal minus the player's position there, over ARENA_SIZE,
    then the velocity over SPEED, which is the direction of the last tick's move (none in a reset's tick)."""
    case = runs["cases"]["heading"]
    player = case["players"][0]
    for message in case["messages"]:
        k = message["tick"] - player["first_tick"]
        (x, y), (goal_x, goal_y) = player["positions"][k], player["goals"][k]
        assert message["obs"][0]["obs"] == pytest.approx(
            [(goal_x - x) / ARENA_SIZE, (goal_y - y) / ARENA_SIZE, *player["moves"][k]], abs=1e-6), message["tick"]
    assert len({tuple(m["obs"][0]["obs"][2:]) for m in case["messages"]}) == 5  # each way, and still


def test_a_player_that_heads_for_the_goal_reaches_it_and_each_end_goes_out_with_done(runs):
    """Every episode end the game had (the driver saw done and needs_reset together) reaches the Sync node as one
    message with done, in order, whose info holds that episode's last observation; a goal's has no
    TimeLimit.truncated and its reward holds the +1."""
    case = runs["cases"]["heading"]
    ends, ended = ends_read(case), [m for m in steps(case) if m["done"][0]]
    assert len(ends) >= 5 and len(ended) == len(ends)
    for end, message in zip(ends, ended):
        assert message["tick"] >= end["tick"]
        assert message["info"][0]["terminal_observation"] == end["obs"]
        assert "TimeLimit.truncated" not in message["info"][0] and end["n_steps"] <= RESET_AFTER
        assert 1 - 0.1 < message["reward"][0] <= 1 + 0.1
    assert all(m["info"] == [{}] for m in steps(case) if not m["done"][0])


def distance(obs):
    return math.hypot(obs["obs"][0], obs["obs"][1]) * ARENA_SIZE


@pytest.mark.parametrize("name", ["heading", "both"])
def test_an_episodes_rewards_are_the_goal_and_the_progress_from_its_first_observation_to_its_last(runs, name):
    """The rewards the trainer gets for an episode, from its first observation to the message with done, add up to
    1 (the goal) plus the progress from there to the end over the arena's diagonal (at most 1): nothing of the
    episode before, nothing else. The first observation is the one sent with the last done, or, when the Sync
    node read that one before the player's reset (then it is the ended episode's last), the next message's."""
    messages = runs["cases"][name]["messages"]
    first, rewards, checked, read_before_reset = messages[0]["obs"][0], [], 0, 0
    for previous, message in zip(messages, messages[1:]):
        if previous["info"][0] and previous["obs"][0] == previous["info"][0]["terminal_observation"]:
            first, rewards = message["obs"][0], []  # the read before the reset: this one starts the episode
            assert message["reward"] == [0.0]
            read_before_reset += 1
        rewards.append(message["reward"][0])
        if message["done"][0]:
            progress = (distance(first) - distance(message["info"][0]["terminal_observation"])) / (
                ARENA_SIZE * math.sqrt(2))
            assert sum(rewards) == pytest.approx(1 + progress, abs=1e-5) and 0 < progress <= 1
            first, rewards, checked = message["obs"][0], [], checked + 1
    assert checked >= 5 and read_before_reset >= 1  # the seeds give both kinds of episode start
    assert all(m["reward"] == [0.0] for m in steps(runs["cases"]["still"]))


def test_a_player_that_stands_still_times_out_every_episode_with_a_truncation_the_trainer_can_bootstrap(runs):
    case = runs["cases"]["still"]
    ends, ended = ends_read(case), [m for m in steps(case) if m["done"][0]]
    # an episode lasts RESET_AFTER + 1 ticks (the time-out) and the reset's; the first starts at Python's reset
    assert len(ends) == len(ended) == (TICKS - ACTION_REPEAT) // (RESET_AFTER + 1) == 4
    for end, message in zip(ends, ended):
        assert end["n_steps"] == RESET_AFTER + 1
        assert message["info"] == [{"terminal_observation": end["obs"], "TimeLimit.truncated": True}]
    assert all(m["info"] == [{}] for m in steps(case) if not m["done"][0])
    positions = case["players"][0]["positions"]  # it moves only at its resets: Python's and one after each end
    assert sum(a != b for a, b in zip(positions, positions[1:])) == len(ends) + 1


def episodes(player):
    """Each episode's start, [the player's position, its goal's]: the scene's own (as it became ready), then one at
    each tick where the goal had moved (a reset)."""
    starts = [player["ready"]]
    for position, goal in zip(player["positions"], player["goals"]):
        if goal != starts[-1][1]:
            starts.append([position, goal])
    return starts


def training_players(runs):
    return [case["players"][0] for case in [*runs["cases"].values(), *runs["before export"].values()]
            if case.get("messages")]


def test_the_arenas_edges_stop_the_player_on_every_side(runs):
    """A player pushed left, up, right and down in turn (edges) stops at each edge of the arena; no player of any
    run ever leaves it."""
    xs, ys = zip(*runs["before export"]["edges"]["players"][0]["positions"])
    assert (min(xs), min(ys), max(xs), max(ys)) == (0, 0, ARENA_SIZE, ARENA_SIZE)
    for case in [*runs["cases"].values(), *runs["before export"].values()]:
        for player in case["players"]:
            assert all(0 <= x <= ARENA_SIZE and 0 <= y <= ARENA_SIZE for x, y in player["positions"]), case["name"]


def test_each_episode_starts_with_its_goal_at_least_100_pixels_away(runs):
    """Every episode of every training case, the scene's own first ones included; the README says so."""
    starts = [start for player in training_players(runs) for start in episodes(player)]
    assert len(starts) >= 30
    assert min(math.dist(position, goal) for position, goal in starts) >= MIN_START_DISTANCE
    readme = " ".join((STARTER / "README.md").read_text().split())
    assert f"with the goal at least {MIN_START_DISTANCE:g} pixels away" in readme


def test_one_env_seed_repeats_the_episodes_and_another_changes_them(runs):
    """The Sync node seeds Godot's random numbers with --env_seed, and player.gd draws each episode's start from
    them: from Python's reset on (the first episode is the scene's own, before it), heading and still, two cases
    under one seed, start the same episodes in the same order, whatever their moves; edges, under the other seed,
    starts others."""
    heading, still, edges = (episodes(case["players"][0])[1:] for case in [
        runs["cases"]["heading"], runs["cases"]["still"], runs["before export"]["edges"]])
    assert len(still) == 5 and heading[:5] == still and edges[:5] != still
    assert not set(map(str, edges)) & set(map(str, still))


def greedy(agent, observations):
    """The torch policy's greedy actions, in float64 as GDScript computes (the exported weights are float32's)."""
    with torch.no_grad():
        observations = torch.tensor(observations, dtype=torch.float64)
        actions = copy.deepcopy(agent).double().get_action(observations, greedy=True)
    return [{"move": int(a[0])} for a in actions]


def plays_its_decisions(player, ticks):
    """A ShippedController's decisions: every 8 ticks from the first, each the policy's greedy action on the
    observation sent (checked by the caller), and between two of them the player moves by the last one (or stands,
    from a new episode's start to the next decision). Within a tick the player resets before its controller acts."""
    decisions = player["decisions"]
    assert [d["tick"] - decisions[0]["tick"] for d in decisions] == list(range(0, ticks - 1, ACTION_REPEAT))[
        :len(decisions)]
    assert ticks // ACTION_REPEAT - 1 <= len(decisions) <= ticks // ACTION_REPEAT + 1
    resets = [end["tick"] for end in player["ends"]]
    for tick, move in enumerate(player["moves"], start=player["first_tick"]):  # at the start of each tick
        last = [d for d in decisions if d["tick"] < tick]
        reset_since = last and any(last[-1]["tick"] < reset < tick for reset in resets)
        assert move == (DIRECTIONS[last[-1]["action"]["move"]] if last and not reset_since else [0, 0]), tick


def test_the_shipping_scene_plays_the_exported_policy_every_8_ticks(runs):
    """Decisions every 8 physics ticks, each the torch policy's greedy action on the observation the controller
    sent, and the player moves by it until the next; out of the AGENT group, in model mode."""
    player = runs["cases"]["ship"]["players"][0]
    decisions = player["decisions"]
    assert "messages" not in runs["cases"]["ship"]  # no Sync node in ship.tscn
    assert player["heuristic"] == "model" and not player["in_agent_group"]
    plays_its_decisions(player, 200)
    assert [d["action"] for d in decisions] == greedy(runs["agent"], [d["obs"]["obs"] for d in decisions])
    assert len({d["action"]["move"] for d in decisions}) > 1  # the policy's choices vary: the comparison says much


def test_the_shipping_scene_runs_before_the_first_export_and_stands_still(runs):
    """No npc_policy.gd in the game yet: the scene parses and runs, its one error says what to do, and the player
    stays where its first episode put it for longer than a time-out."""
    player = runs["before export"]["ship before export"]["players"][0]
    errors = runs["errors before export"]
    assert errors and [line for line in errors if not line.strip().startswith("at: ")] == [f"ERROR: {NO_POLICY}"]
    assert player["heuristic"] == "model" and not player["in_agent_group"]
    assert len({tuple(p) for p in player["positions"]}) == 1 and player["moves"][-1] == [0, 0]


def test_the_shipped_controller_times_out_as_the_training_one_does(runs):
    """A shipped player's episode that reaches no goal ends after RESET_AFTER + 1 ticks, as a training player's does
    (still): in the training scene, where its policy plays 2000 ticks."""
    assert {end["n_steps"] for end in ends_read(runs["cases"]["still"])} == {RESET_AFTER + 1}
    lengths = [end["n_steps"] for end in runs["cases"]["both"]["players"][1]["ends"]]
    assert RESET_AFTER + 1 in lengths and max(lengths) == RESET_AFTER + 1


def test_a_shipped_controller_in_a_training_scene_does_not_fight_the_sync_node(runs):
    """A training scene that also holds ship.tscn's player: the Sync node collects the training agent alone; every
    end of the training agent's episodes still goes out with done; the shipped one's actions are its policy's."""
    case = runs["cases"]["both"]
    shipped = case["players"][1]
    assert case["training_agents"] == ["Player/AIController2D"]
    assert shipped["heuristic"] == "model" and not shipped["in_agent_group"]
    assert all(len(m["obs"]) == len(m["done"]) == 1 for m in steps(case))
    ended = [m for m in steps(case) if m["done"][0]]
    assert len(ended) >= 5 and [m["info"][0]["terminal_observation"] for m in ended] == [
        end["obs"] for end in ends_read(case)]
    decisions = shipped["decisions"]
    plays_its_decisions(shipped, TICKS)
    assert [d["action"] for d in decisions] == greedy(runs["agent"], [d["obs"]["obs"] for d in decisions])


def test_the_shipped_controller_decides_at_the_training_rate_on_a_project_at_another_rate(runs, at_another_rate):
    """On a project at 120 physics ticks a second, the shipped controller sets the engine to training's 60 ticks a
    game second and says so in one line; each tick is then 1/60 s of game time, a decision comes every 8/60 s, and
    the game plays as ship.tscn at 60 with the same seed and policy: the same decisions, tick by tick the same
    moves and positions."""
    case, errors = at_another_rate
    assert [line for line in errors if not line.strip().startswith("at: ")] == [RATE_MESSAGE]
    player, at_60 = case["players"][0], runs["cases"]["ship"]["players"][0]
    assert case["deltas"] == pytest.approx([1 / 60] * 200, rel=1e-9)
    game_time = [sum(case["deltas"][:k]) for k in range(len(case["deltas"]) + 1)]  # at the start of each tick
    times = [game_time[d["tick"] - player["first_tick"]] for d in player["decisions"]]
    assert len(times) >= 200 // ACTION_REPEAT - 1
    assert [b - a for a, b in zip(times, times[1:])] == pytest.approx([ACTION_REPEAT / 60] * (len(times) - 1))
    assert [d["action"] for d in player["decisions"]] == [d["action"] for d in at_60["decisions"]]
    assert flat(d["obs"]["obs"] for d in player["decisions"]) == pytest.approx(
        flat(d["obs"]["obs"] for d in at_60["decisions"]), abs=1e-5)
    assert player["moves"] == at_60["moves"] and len({tuple(m) for m in player["moves"]}) > 2
    assert flat(player["positions"]) == pytest.approx(flat(at_60["positions"]), abs=1e-3)


def flat(rows):
    return [x for row in rows for x in row]


def scene_nodes(file):
    """A .tscn's nodes as (parent path, name): the root's parent is "", its children's "."."""
    headers = re.findall(r"^\[node .*\]$", (STARTER / file).read_text(), re.M)
    return [(re.search(r' parent="([^"]*)"', h).group(1) if " parent=" in h else "", re.search(r'name="([^"]+)"', h).group(1))
            for h in headers]


def test_the_walkthrough_describes_the_starter_as_it_is():
    """docs/godot4-walkthrough.md names the starter's nodes, files, time-out and build name: each as the files hold it."""
    page = " ".join((REPO / "docs" / "godot4-walkthrough.md").read_text().split())  # its words, wrapped anyhow
    train, ship = scene_nodes("train.tscn"), scene_nodes("ship.tscn")
    assert train[0] == ("", "Train") and [n for p, n in train if p == "."] == ["Sync", "Arena", "Goal", "Player"]
    assert "root `Train` has the children `Sync`, `Arena` (the background), `Goal` and `Player`" in page
    assert ("Player", "AIController2D") in train and ("Player", "ShippedController") in ship
    assert "Sync" not in [n for _, n in ship]
    assert f"the starter's is {RESET_AFTER} ticks, {RESET_AFTER // ACTION_REPEAT} decisions" in page
    assert 'config/name="Starter"' in (STARTER / "project.godot").read_text()  # the editor names the build after it
    assert "`Starter.x86_64`" in page and "build/Starter.app/Contents/MacOS/Starter" in page
    assert '@export var policy_path := "res://npc_policy.gd"' in (STARTER / "shipped_controller.gd").read_text()
    assert "`policy_path` (`res://npc_policy.gd`)" in page
    for file in re.findall(r"\(\.\./godot/starter/([\w.]+)\)", page):
        assert (STARTER / file).is_file(), file
