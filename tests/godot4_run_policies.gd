extends Node
# Plays exported policies (ppo_godot.py --gdscript-export-path) on recorded observations in Godot 4: the tests'
# check that a file acts on Godot 4.6 as the torch policy does, and the speed benchmark's clock
# (tests/godot4_web.py packs it as main.gd). res://cases.json: a list of {"policy": its res:// path,
# "observations": [get_obs() dictionaries, or null where a recurrent policy is reset], "sample": act(obs,
# true) or not, "seed": the random generator's seed, "repeat": how many times the list is played (timing)}.
# For each case one printed line, the JSON of {"usec_per_decision": t, "actions": the action dictionaries
# act() returned, in order, at full precision}. Then DONE.


func _ready():
	var cases = JSON.parse_string(FileAccess.get_file_as_string("res://cases.json"))
	for case in cases:
		var policy = load(case["policy"]).new()
		seed(int(case["seed"]))
		var actions = []
		var start = Time.get_ticks_usec()
		for _round in range(int(case.get("repeat", 1))):
			actions = []
			for obs in case["observations"]:
				if obs == null:  # a recurrent policy's episode starts anew: its memory is zeroed
					policy.reset()
				else:
					actions.append(policy.act(obs, case["sample"]))
		var usec = float(Time.get_ticks_usec() - start) / (int(case.get("repeat", 1)) * max(1, len(case["observations"])))
		print(JSON.stringify({"usec_per_decision": usec, "actions": actions}, "", false, true))
	print("DONE")
