extends Node
# Runs the docs' Godot 4 GDScript snippets on Godot 4.6 (tests/test_gdscript_snippets.py packs it as main.gd,
# beside the plugin's addon from tests/godot4_plugin.py: its stand-ins, or the real plugin's controllers and
# sensors). res://cases.json: a list of {"script": the res:// path of the controller (a snippet, or a host file
# around it), "body": null or [the class of the node the controller sits under, its velocity, and
# optionally its turn about Y in degrees], "sensors": the
# res:// paths of the plugin's sensor scenes, each instanced as a child of the controller (it takes the scene's
# root name, as when a user adds the scene), "target": null or the position of a Node3D the controller's
# exported `target` is set to (the inspector's work), "check": what to do with it}. For each case one printed
# line, the JSON of what the controller answered; then DONE.

const SYNC = "res://addons/godot_rl_agents/sync.gd"


func _ready():
	var cases = JSON.parse_string(FileAccess.get_file_as_string("res://cases.json"))
	for case in cases:
		if case["check"] == "ends episodes":  # a game around the controller, read by the Sync node
			var answer = {}
			for controller_script in [case["script"], case["plugin_only"]]:
				var runs = {}
				for sync_first in [false, true]:
					runs["sync first" if sync_first else "sync last"] = await ends_episodes(
						load(controller_script).new(), sync_first, {1: 20, 3: 9})
				answer["snippet" if controller_script == case["script"] else "plugin only"] = runs
			answer["early end"] = await ends_episodes(load(case["script"]).new(), false, {1: 5})
			print(JSON.stringify(answer, "", false, true))
			continue
		var controller = load(case["script"]).new()
		for scene in case["sensors"]:
			controller.add_child(load(scene).instantiate())
		var top = controller
		if case["body"]:
			top = ClassDB.instantiate(case["body"][0])
			var v = case["body"][1]
			top.velocity = Vector3(v[0], v[1], v[2])
			if len(case["body"]) > 2:  # turned about Y, in degrees
				top.rotation_degrees.y = case["body"][2]
			top.add_child(controller)
		var target = null
		if case["target"]:
			var p = case["target"]
			target = Node3D.new()
			target.position = Vector3(p[0], p[1], p[2])
			add_child(target)
			controller.target = target
		add_child(top)  # _ready runs: its @onready children are found
		var answer = {}
		match case["check"]:
			"plays":  # the shipping controller: 20 physics ticks with its policy
				for _tick in range(20):
					await get_tree().physics_frame
				answer = {"actions": controller.recorded, "heuristic": controller.heuristic,
					"in_agent_group": controller.is_in_group("AGENT"), "n_steps": controller.n_steps,
					"ticks": controller.ticks,
					"done": controller.done}
			"plays with a reset":  # the recurrent controller: about 12 ticks, reset(), about 12 more
				for _tick in range(12):
					await get_tree().physics_frame
				answer["before_reset"] = len(controller.recorded)
				controller.reset()
				for _tick in range(12):
					await get_tree().physics_frame
				answer["actions"] = controller.recorded
				answer["n_steps"] = controller.n_steps
			"camera modes":  # get_obs() training and in ONNX inference
				controller.control_mode = controller.ControlModes.TRAINING
				answer["training"] = controller.get_obs()
				controller.control_mode = controller.ControlModes.ONNX_INFERENCE
				answer["inference"] = controller.get_obs()
			"actions":  # set_action() from the policy, then from the keys; get_action() after each
				answer["space"] = controller.get_action_space()
				controller.set_action({"move": 3})
				answer["policy"] = controller.get_action()
				Input.action_press("ui_down")
				controller.set_action()
				answer["key down"] = controller.get_action()
				Input.action_release("ui_down")
				controller.set_action()
				answer["no key"] = controller.get_action()
			"observes":
				answer = {"obs": controller.get_obs(), "space": controller.get_obs_space(),
					"sensors": controller.get_children().map(func(node): return node.name)}
		remove_child(top)  # the next case starts without it (a Sync node collects every agent in the tree)
		top.free()
		if target:
			remove_child(target)
			target.free()
		print(JSON.stringify(answer, "", false, true))
	print("DONE")



class Player extends Node3D:
	# The game: its state moves one step a tick; an episode in goals ({episode: step}) reaches its goal at that
	# step, the others never (a time-out). It resets as CUSTOM_ENV.md's player does: at the start of its
	# _physics_process when it sees needs_reset (it is the controller's parent: its _physics_process runs first).
	var x := 0
	var episode := 0
	var goals = {}
	var controller
	var finals = []  # each episode's last observation, taken just before the game resets

	func _physics_process(_delta):
		if controller.needs_reset:
			finals.append(controller.get_obs())
			controller.reset()
			x = 0
			episode += 1
			return
		x += 1
		if goals.get(episode, -1) == x:
			if controller.has_method("end_episode"):
				controller.end_episode()
			else:  # the plugin's way (CUSTOM_ENV.md's game_over())
				controller.done = true
				controller.needs_reset = true


func ends_episodes(controller, sync_first, goals):
	# 72 physics ticks of a game of one agent, with the plugin's Sync node (tests/godot4_plugin.py's stand-in:
	# Python's reset at its first read sets needs_reset, so episode 0 is cut short and episode 1 is the first
	# the trainer sees) before or after the game in the tree
	var game = Node.new()
	var player = Player.new()
	var sync = load(SYNC).new()
	player.controller = controller
	player.goals = goals
	player.add_child(controller)
	if sync_first:
		game.add_child(sync)
	game.add_child(player)
	if not sync_first:
		game.add_child(sync)
	add_child(game)  # the Sync node collects its agents once the game is ready
	for _tick in range(72):
		await get_tree().physics_frame
	var out = {"messages": sync.messages, "finals": player.finals, "agents": len(sync.agents)}
	remove_child(game)
	game.free()
	return out
