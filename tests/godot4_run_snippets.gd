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
		print(JSON.stringify(answer, "", false, true))
	print("DONE")
