extends "res://rules.gd"
# Chase's tag mode, its rules (main.gd plays them through tag.tscn; the web build too): two policies
# with different spaces in one game. The n_agents bodies are pairs in arenas of their own: body 2p
# chases (policy "chaser"), body 2p + 1 runs from it (policy "runner").
#   chaser: observes [x, y, runner x - x, runner y - y]; moves like chase_discrete (5 moves, SPEED).
#   runner: observes [x, y, x - chaser x, y - chaser y, share of the episode left]; moves like
#           chase_continuous (a 2-D velocity, clamped to [-1, 1]) at RUNNER_SPEED, slower.
# Rewards are opposed, the runner's the chaser's negated: the chaser gets SHAPING x (distance closed)
# - 0.01 per action and +1 for a catch (closer than REACH). A catch ends the pair's episode
# (terminated); MAX_STEPS actions end it as a time-out (truncated). Both agents of a pair end
# together and are reset on the next action, like the other modes (info autoreset).
# --scripted=chaser|runner: the game plays that side itself (chaser: along the axis with the larger
# distance to the runner; runner: straight away from the chaser, sliding along a wall it meets), and
# the trainer gets only the other side's agents: learning measured against a fixed opponent.
# --record_demos=PATH (main.gd): both sides play their script, and agent 0, the first chaser, is recorded.
# --reward=sparse: the chaser gets 1 for a catch and nothing else (no shaping, no cost per action), the
# runner -1: a reward that random play rarely finds, for learning from demonstrations (ppo_godot_bc.py).
# Launcher: chase_tag.x86_64 (godot3-server, tag.tscn).

const RUNNER_SPEED = 1.0  # units per game second; the chaser's is SPEED
const NAMES = ["chaser", "runner"]

var scripted = ""  # --scripted: the side the game plays itself
var sparse = false  # --reward=sparse
var bodies = []  # every body's position: chasers at even indices, each followed by its runner
var body_velocities = []
var learners = []  # the body of each agent the trainer plays, in the protocol's order
var learner_of = []  # each body's agent index, or -1 for a scripted body
var pair_steps = []
var pair_done = []
var pair_truncated = []
var pair_frozen = []
var pair_autoreset = []


func make_agents():
	scripted = args.get("scripted", "")
	sparse = args.get("reward", "shaped") == "sparse"
	for p in range(n_agents / 2):
		for side in range(2):
			bodies.append(Vector2())
			body_velocities.append(Vector2())
			learner_of.append(-1 if NAMES[side] == scripted else learners.size())
			if NAMES[side] != scripted:
				learners.append(2 * p + side)
		pair_steps.append(0)
		pair_done.append(false)
		pair_truncated.append(false)
		pair_frozen.append(false)
		pair_autoreset.append(false)
		reset_pair(p)
	n_agents = learners.size()
	for i in range(n_agents):
		rewards.append(0.0)
		dones.append(false)
		truncated.append(false)
		autoreset.append(false)


func reset_all():
	for p in range(pair_steps.size()):
		reset_pair(p)
	for i in range(n_agents):
		dones[i] = false
		truncated[i] = false


func reset_pair(p):
	bodies[2 * p] = Vector2(rng.randf_range(-1, 1), rng.randf_range(-1, 1))
	bodies[2 * p + 1] = Vector2(rng.randf_range(-1, 1), rng.randf_range(-1, 1))
	while bodies[2 * p].distance_to(bodies[2 * p + 1]) < 0.5:
		bodies[2 * p + 1] = Vector2(rng.randf_range(-1, 1), rng.randf_range(-1, 1))
	pair_steps[p] = 0
	pair_done[p] = false
	pair_truncated[p] = false


func side(body):
	return body % 2  # 0 chaser, 1 runner


func names():
	var out = []
	for body in learners:
		out.append(NAMES[side(body)])
	return out


func observation_space():
	var out = []
	for body in learners:
		out.append({"obs": {"space": "box", "size": [4 if side(body) == 0 else 5]}})
	return out


func action_space():
	var out = []
	for body in learners:
		if side(body) == 0:
			out.append({"move": {"action_type": "discrete", "size": 5}})
		else:
			out.append({"move": {"action_type": "continuous", "size": 2}})
	return out


func observation(i):
	var body = learners[i]
	var me = bodies[body]
	if side(body) == 0:
		var to_runner = bodies[body + 1] - me
		return {"obs": [me.x, me.y, to_runner.x, to_runner.y]}
	var from_chaser = me - bodies[body - 1]
	var left = 1.0 - float(pair_steps[body / 2]) / MAX_STEPS
	return {"obs": [me.x, me.y, from_chaser.x, from_chaser.y, left]}


func start_action(actions):
	for p in range(pair_steps.size()):
		pair_autoreset[p] = pair_done[p]
		pair_frozen[p] = pair_done[p]
		if pair_done[p]:  # ended on the last action: reset now, ignore this action
			reset_pair(p)
		else:
			pair_steps[p] += 1
	for body in range(bodies.size()):
		var p = body / 2
		var i = learner_of[body]
		if pair_frozen[p]:
			body_velocities[body] = Vector2()
		elif i == -1:
			body_velocities[body] = scripted_velocity(body)
		elif side(body) == 0:  # stay, up, down, left, right
			body_velocities[body] = [Vector2(0, 0), Vector2(0, -1), Vector2(0, 1), Vector2(-1, 0),
				Vector2(1, 0)][int(actions[i]["move"])] * SPEED
		else:
			var move = actions[i]["move"]
			body_velocities[body] = Vector2(clamp(move[0], -1.0, 1.0), clamp(move[1], -1.0, 1.0)) * RUNNER_SPEED
		if i != -1:
			rewards[i] = 0.0 if pair_frozen[p] or sparse else (-0.01 if side(body) == 0 else 0.01)
			autoreset[i] = pair_autoreset[p]


func scripted_velocity(body):
	var me = bodies[body]
	if side(body) == 0:  # toward the runner, along the axis with the larger distance
		var to_runner = bodies[body + 1] - me
		if abs(to_runner.x) > abs(to_runner.y):
			return Vector2(sign(to_runner.x), 0) * SPEED
		return Vector2(0, sign(to_runner.y)) * SPEED
	var away = (me - bodies[body - 1]).normalized()
	for axis in range(2):  # at a wall, slide along it instead of pushing into it
		if abs(me[axis]) > 0.95 and sign(away[axis]) == sign(me[axis]):
			away[axis] = 0.0
	if away.length() < 0.01:  # cornered, or the chaser straight behind along a wall: run along it
		away = Vector2(-sign(me.y), sign(me.x))
	return away.normalized() * RUNNER_SPEED


func scripted_action(i):
	# --record_demos: each side's script (scripted_velocity), as the action its agent would send
	var body = learners[i]
	var velocity = scripted_velocity(body)
	if side(body) == 1:
		return {"move": [velocity.x / RUNNER_SPEED, velocity.y / RUNNER_SPEED]}
	if velocity.x != 0:  # stay, up, down, left, right
		return {"move": 3 if velocity.x < 0 else 4}
	if velocity.y != 0:
		return {"move": 1 if velocity.y < 0 else 2}
	return {"move": 0}


func tick_all():
	for p in range(pair_steps.size()):
		if pair_frozen[p]:
			continue
		var before = bodies[2 * p].distance_to(bodies[2 * p + 1])
		for body in [2 * p, 2 * p + 1]:
			bodies[body] += body_velocities[body] * DT
			bodies[body].x = clamp(bodies[body].x, -1.0, 1.0)
			bodies[body].y = clamp(bodies[body].y, -1.0, 1.0)
		var after = bodies[2 * p].distance_to(bodies[2 * p + 1])
		var chaser_reward = 0.0 if sparse else SHAPING * (before - after)
		if after < REACH:  # caught
			chaser_reward += 1.0
			pair_done[p] = true
			pair_frozen[p] = true
		add_reward(2 * p, chaser_reward)
		add_reward(2 * p + 1, -chaser_reward)


func add_reward(body, reward):
	if learner_of[body] != -1:
		rewards[learner_of[body]] += reward


func end_action():
	for p in range(pair_steps.size()):
		if not pair_done[p] and not pair_autoreset[p] and pair_steps[p] >= MAX_STEPS:
			pair_done[p] = true
			pair_truncated[p] = true
			pair_frozen[p] = true
	for i in range(n_agents):
		var p = learners[i] / 2
		dones[i] = pair_done[p]
		truncated[i] = pair_truncated[p]


func bodies_drawn():  # each pair's chaser, then its runner
	return bodies


func arena_count():
	return pair_steps.size()


func started_anew(body):
	return pair_frozen[body / 2]
