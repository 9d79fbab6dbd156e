# Chase's rules: n_agents agents, each chasing its own target in the square [-1, 1] x [-1, 1].
# The rules use no engine API beyond RandomNumberGenerator and Vector2 (playing alone adds load(), has_method
# and print: the policies' files, the returns), in GDScript that Godot 3 and Godot 4 both read: the Godot 3
# game (main.gd: the trainer's protocol, cameras, --policy, --record_demos) and its Godot 4 web build
# (web/main.gd: drawn in a browser) run this same file, so both compute the same game.
#
# Reward per action: SHAPING x (distance closed) - 0.01, plus 1 on reaching the target.
# An episode ends by reaching the target (terminated) or after max_steps actions (a time-out:
# truncated; --max_steps=N, MAX_STEPS by default). Like gymnasium 1.0, a finished agent keeps its final
# position until the next action, which only resets it (reward 0, autoreset). With plugin
# (--action_type=plugin) it is reset on the spot instead, as the official plugin's games are; its final
# observation (final_observations) and whether it timed out (truncated, read with done) are kept, but reach
# the trainer only with main.gd's --terminal_obs=true (playing alone, the printed episodes say time-out).
#
# --target_every=K makes it a memory task: an agent sees its target (to_target) in every K-th observation of
# its episode only (the first, then after K actions, ...), zeros between; where it lies must be remembered.
#
# Each action: start_action(actions), then tick_all() every physics tick of the action, then
# end_action(); playing without a trainer, end_action_alone() instead, which counts returns as
# --eval-checkpoint does.

const MAX_STEPS = 100  # actions per episode before a time-out, unless --max_steps says otherwise
const DT = 1.0 / 60.0  # game seconds per physics tick
const SPEED = 1.5  # units per game second at full speed
const REACH = 0.1  # distance that counts as reaching the target
const SHAPING = 10.0  # reward per unit of distance closed

var args = {}  # the command line's --key=value arguments
var rng = RandomNumberGenerator.new()
var n_agents = 16
var action_type = "discrete"  # discrete, multidiscrete, continuous or plugin
var plugin = false
var target_every = 1  # --target_every: the target is seen in every target_every-th observation
var max_steps = MAX_STEPS  # --max_steps: actions per episode before a time-out
var positions = []
var targets = []
var velocities = []  # the current action, as a velocity applied every tick
var steps = []
var rewards = []
var dones = []
var truncated = []
var frozen = []  # done, or reset by this action: does not move
var autoreset = []
var final_observations = []  # plugin: each agent's observation as its last episode ended, before the reset
var policies = []  # playing alone: each agent's own instance of its policy's exported file
var agent_names = []  # playing alone: each agent's policy name
var rounds = 0  # playing alone: the episodes each agent plays
var returns = []  # playing alone: each agent's return so far in its episode, its length, its episodes ended
var lengths = []
var ended = []
var totals = {}  # playing alone: each policy's counted episodes, [their number, the sum of their returns]


func start(command_line):
	args = command_line
	rng.seed = int(args.get("env_seed", "0"))
	n_agents = int(args.get("n_agents", "16"))
	action_type = args.get("action_type", "discrete")
	plugin = action_type == "plugin"
	target_every = max(1, int(args.get("target_every", "1")))
	max_steps = max(1, int(args.get("max_steps", str(MAX_STEPS))))
	make_agents()


func make_agents():
	for i in range(n_agents):
		positions.append(Vector2())
		targets.append(Vector2())
		velocities.append(Vector2())
		steps.append(0)
		rewards.append(0.0)
		dones.append(false)
		truncated.append(false)
		frozen.append(false)
		autoreset.append(false)
		final_observations.append({})
		reset_agent(i)


func observation_space():
	if plugin:  # one entry per agent, keys in the game's order
		var space = {"to_target": {"size": [2], "space": "box"}, "position": {"size": [2], "space": "box"}}
		var out = []
		for i in range(n_agents):
			out.append(space)
		return out
	return {"obs": {"space": "box", "size": [4]}}


func action_space():
	match action_type:
		"plugin":  # one entry per agent; sprint: 0 half speed, 1 full speed
			var space = {"sprint": {"action_type": "discrete", "size": 2},
				"direction": {"action_type": "continuous", "size": 2}}
			var out = []
			for i in range(n_agents):
				out.append(space)
			return out
		"multidiscrete":
			return {"move_x": {"action_type": "discrete", "size": 3},
				"move_y": {"action_type": "discrete", "size": 3}}
		"continuous":
			return {"move": {"action_type": "continuous", "size": 2}}
	return {"move": {"action_type": "discrete", "size": 5}}


func names():
	var out = []
	for i in range(n_agents):
		out.append("shared_policy")
	return out


func observation(i):
	var to_target = targets[i] - positions[i]
	if steps[i] % target_every != 0:  # the memory task: hidden between two sightings
		to_target = Vector2()
	if plugin:
		return {"to_target": [to_target.x, to_target.y], "position": [positions[i].x, positions[i].y]}
	return {"obs": [positions[i].x, positions[i].y, to_target.x, to_target.y]}


func velocity(action):
	match action_type:
		"plugin":
			var direction = Vector2(clamp(action["direction"][0], -1.0, 1.0), clamp(action["direction"][1], -1.0, 1.0))
			return direction * (1.0 if int(action["sprint"]) == 1 else 0.5)
		"multidiscrete":  # each axis: 0 back, 1 stay, 2 forward
			return Vector2(int(action["move_x"]) - 1, int(action["move_y"]) - 1)
		"continuous":
			return Vector2(clamp(action["move"][0], -1.0, 1.0), clamp(action["move"][1], -1.0, 1.0))
	# discrete: stay, up, down, left, right
	return [Vector2(0, 0), Vector2(0, -1), Vector2(0, 1), Vector2(-1, 0), Vector2(1, 0)][int(action["move"])]


func scripted_action(i):
	# straight for the target: in the discrete game along the axis with the larger distance
	var to_target = targets[i] - positions[i]
	match action_type:
		"continuous":
			var direction = to_target.normalized()
			return {"move": [direction.x, direction.y]}
		"multidiscrete":  # each axis: 0 back, 1 stay, 2 forward
			return {"move_x": int(sign(to_target.x)) + 1, "move_y": int(sign(to_target.y)) + 1}
	if abs(to_target.x) > abs(to_target.y):
		return {"move": 3 if to_target.x < 0 else 4}
	return {"move": 1 if to_target.y < 0 else 2}


func reset_all():
	for i in range(n_agents):
		reset_agent(i)


func reset_agent(i):
	positions[i] = Vector2(rng.randf_range(-1, 1), rng.randf_range(-1, 1))
	targets[i] = Vector2(rng.randf_range(-1, 1), rng.randf_range(-1, 1))
	while positions[i].distance_to(targets[i]) < 2 * REACH:
		targets[i] = Vector2(rng.randf_range(-1, 1), rng.randf_range(-1, 1))
	steps[i] = 0
	dones[i] = false
	truncated[i] = false


func start_action(actions):
	for i in range(n_agents):
		rewards[i] = 0.0
		autoreset[i] = dones[i] and not plugin
		frozen[i] = dones[i]
		if dones[i]:  # finished on the last action: reset now, ignore this action
			reset_agent(i)
			velocities[i] = Vector2()
		else:
			velocities[i] = velocity(actions[i])
			steps[i] += 1
			rewards[i] -= 0.01


func tick_all():
	for i in range(n_agents):
		tick(i)


func tick(i):
	if frozen[i]:
		return
	var before = positions[i].distance_to(targets[i])
	positions[i] += velocities[i] * SPEED * DT
	positions[i].x = clamp(positions[i].x, -1.0, 1.0)
	positions[i].y = clamp(positions[i].y, -1.0, 1.0)
	var after = positions[i].distance_to(targets[i])
	rewards[i] += SHAPING * (before - after)
	if after < REACH:
		rewards[i] += 1.0
		end_episode(i)


func end_episode(i):
	if plugin:  # reset on the spot: the next observation is the new episode's; the final one is kept
		final_observations[i] = observation(i)
		reset_agent(i)
	else:  # wait for the next action, which only resets
		frozen[i] = true
	dones[i] = true


func end_action():
	for i in range(n_agents):
		if not dones[i] and not autoreset[i] and steps[i] >= max_steps:
			end_episode(i)
			truncated[i] = true  # after end_episode, whose reset on the spot (plugin) clears it


# Playing without a trainer: each agent acts by its policy's exported file (--policy=PATH, or per policy name
# --policy_<name>=PATH), its own instance, since a recurrent policy (ppo_godot_lstm.py) holds its agent's
# memory. Returns "", or the line that says which policy has no file.
func load_policies():
	var loaded = {}
	for name in names():
		var path = args.get("policy_" + name, args.get("policy", ""))
		if not loaded.has(path):
			loaded[path] = load(path) if path != "" else null
		if loaded[path] == null:
			return "chase: no policy for %s: give --policy=PATH or --policy_%s=PATH (a .gd file)" % [name, name]
		policies.append(loaded[path].new())
	return ""


func policy_actions():
	var actions = []
	for i in range(n_agents):
		actions.append(policies[i].act(observation(i)))
	return actions


# Playing alone, each action's end. True once all counted episodes are played.
func end_action_alone():
	end_action()
	forget_ended_episodes()  # before count_episodes, which clears the plugin's dones
	return count_episodes()


# A recurrent policy starts from zero memory where its agent's episode starts anew: after the action that only
# reset it, or at once where the plugin's way resets on the spot.
func forget_ended_episodes():
	for i in range(n_agents):
		if (autoreset[i] or (plugin and dones[i])) and policies[i].has_method("reset"):
			policies[i].reset()


# Each agent plays its first ceil(episodes / the agents of the policy that has fewest) episodes, as
# --eval-checkpoint counts them.
func start_counting(episodes):
	agent_names = names()
	var agents_of = {}
	for name in agent_names:
		agents_of[name] = agents_of.get(name, 0) + 1
	rounds = int(ceil(float(episodes) / agents_of.values().min()))
	for i in range(n_agents):
		returns.append(0.0)
		lengths.append(0)
		ended.append(0)


# Adds the action's rewards; prints each counted episode that ended. True once all are played.
func count_episodes():
	for i in range(n_agents):
		returns[i] += rewards[i]
		if not autoreset[i]:  # a step that only resets belongs to no episode
			lengths[i] += 1
		if dones[i]:
			if ended[i] < rounds:
				var total = totals.get(agent_names[i], [0, 0.0])
				totals[agent_names[i]] = [total[0] + 1, total[1] + returns[i]]
				print("policy=%s agent=%d episodic_return=%.6f episodic_length=%d (%s)" % [agent_names[i], i,
					returns[i], lengths[i], "time-out" if truncated[i] else "terminated"])
			ended[i] += 1
			returns[i] = 0.0
			lengths[i] = 0
			if plugin:  # sync.gd clears an agent's done once it has sent it
				dones[i] = false
	return ended.min() >= rounds


func print_means():
	for name in totals:
		print("policy=%s mean_return=%.6f over %d episodes" % [name, totals[name][1] / totals[name][0], totals[name][0]])


# What the web build draws: every body, in arena order, each agent of Chase in an arena of its own.
func bodies_drawn():
	return positions


func arena_count():
	return n_agents


# After start_action: the body was reset by it, a new episode under way.
func started_anew(body):
	return frozen[body]
