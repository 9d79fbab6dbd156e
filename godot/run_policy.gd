extends SceneTree
# Plays an exported policy (ppo_godot.py --gdscript-export-path) on recorded observations, in the
# engine, and writes what it chose and how long a decision took: the tests' check that the file acts
# as the torch policy does, and the speed benchmark's clock. Godot 3 (the engine here):
#   godot3-server -s godot/run_policy.gd --policy=/abs/policy.gd --observations=obs.json --actions=out.json
# obs.json: a list of get_obs() dictionaries, null where a recurrent policy (ppo_godot_lstm.py) is reset.
# out.json: {"usec_per_decision": t, "actions": [...]}, each action dictionary as act() returned it,
# continuous values with 12 decimals (JSON.print keeps 6).
# --repeat=N plays the list N times (for timing); --sample plays act(obs, true), seeded by --seed=N.


func _init():
	var args = {}
	for arg in OS.get_cmdline_args():
		if arg.begins_with("--"):
			var parts = arg.substr(2, arg.length() - 2).split("=", true, 1)
			args[parts[0]] = parts[1] if parts.size() > 1 else ""
	var policy = load(args["policy"]).new()
	var file = File.new()
	file.open(args["observations"], File.READ)
	var observations = parse_json(file.get_as_text())
	file.close()
	var sample = args.has("sample")
	seed(int(args.get("seed", "0")))
	var actions = []
	var start = OS.get_ticks_usec()
	for _round in range(int(args.get("repeat", "1"))):
		actions = []
		for obs in observations:
			if obs == null:  # a recurrent policy's episode starts anew: its memory is zeroed
				policy.reset()
			else:
				actions.append(policy.act(obs, sample))
	var usec = float(OS.get_ticks_usec() - start) / (int(args.get("repeat", "1")) * max(1, observations.size()))
	var lines = []
	for action in actions:
		var items = []
		for key in action:
			items.append(JSON.print(key) + ": " + as_json(action[key]))
		lines.append("{" + PoolStringArray(items).join(", ") + "}")
	file.open(args["actions"], File.WRITE)
	file.store_string("{\"usec_per_decision\": %f, \"actions\": [\n%s\n]}\n" % [usec, PoolStringArray(lines).join(",\n")])
	file.close()
	quit()


func as_json(value):
	if typeof(value) == TYPE_ARRAY:
		var parts = []
		for v in value:
			parts.append("%.12f" % v)
		return "[" + PoolStringArray(parts).join(", ") + "]"
	return str(value)
