extends Node
# Runs the docs' Godot 4 GDScript snippets on Godot 4.6 (tests/test_gdscript_snippets.py packs it as main.gd,
# beside stand-ins of the plugin's classes). res://cases.json: a list of {"script": the res:// path of the
# controller (a snippet, or a host file around it), "children": [[node name, res:// script]], "check": what
# to do with it}. For each case one printed line, the JSON of what the controller answered; then DONE.


func _ready():
	var cases = JSON.parse_string(FileAccess.get_file_as_string("res://cases.json"))
	for case in cases:
		var controller = load(case["script"]).new()
		for child in case["children"]:
			var node = load(child[1]).new()
			node.name = child[0]
			controller.add_child(node)
		add_child(controller)  # _ready runs: its @onready children are found
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
				answer = {"obs": controller.get_obs(), "space": controller.get_obs_space()}
			"ends episodes":  # a game around the controller, and what the Sync node reads, in both orders
				remove_child(controller)
				controller.free()
				for controller_script in [case["script"], case["plugin_only"]]:
					var runs = {}
					for sync_first in [false, true]:
						runs["sync first" if sync_first else "sync last"] = await ends_episodes(
							load(controller_script).new(), sync_first)
					answer["snippet" if controller_script == case["script"] else "plugin only"] = runs
		print(JSON.stringify(answer, "", false, true))
	print("DONE")



class Player extends Node3D:
	# The game: its state moves one step a tick; episode 0 reaches its goal at step 13, episode 2 at step 9,
	# the others never (a time-out). It resets as CUSTOM_ENV.md's player does: at the start of its
	# _physics_process when it sees needs_reset (it is the controller's parent: its _physics_process runs first).
	var x := 0
	var episode := 0
	var goals = {0: 13, 2: 9}
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


class SyncReads extends Node:
	# What sync.gd (bf5d6a2) reads from its training agents, when and in which order: _physics_process runs
	# _training_process every action_repeat ticks, which reads _get_obs_from_agents, _get_info_from_agents,
	# then (for a step) _get_reward_from_agents and _get_done_from_agents. Its first read answers Python's
	# reset here; the socket, the pause and the actions are left out.
	var action_repeat := 8
	var n_action_steps := 0
	var agents = []
	var messages = []

	func _physics_process(_delta):
		if n_action_steps % action_repeat != 0:
			n_action_steps += 1
			return
		n_action_steps += 1
		var obs = []
		var info = []
		for agent in agents:
			obs.append(agent.get_obs())
		for agent in agents:
			info.append(agent.get_info())
		var message = {"tick": Engine.get_physics_frames(), "obs": obs, "info": info}
		if n_action_steps > 1:
			var done = []
			for agent in agents:
				agent.get_reward()
				agent.zero_reward()
				done.append(agent.get_done())
				if agent.get_done():
					agent.set_done_false()
			message["done"] = done
		messages.append(message)


func ends_episodes(controller, sync_first):
	# 60 physics ticks of a game of one agent: the Sync node before or after the game in the tree
	var game = Node.new()
	var player = Player.new()
	var sync = SyncReads.new()
	player.controller = controller
	sync.agents = [controller]
	player.add_child(controller)
	if sync_first:
		game.add_child(sync)
	game.add_child(player)
	if not sync_first:
		game.add_child(sync)
	add_child(game)
	for _tick in range(60):
		await get_tree().physics_frame
	var out = {"messages": sync.messages, "finals": player.finals}
	remove_child(game)
	game.free()
	return out
