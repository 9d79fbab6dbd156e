extends Node
# Chase, the Godot 3 game: its rules are rules.gd (tag.gd in tag mode, set by tag.tscn), which the
# Godot 4 web build (web/main.gd) runs too; this file is the engine's side of them.
#
# The game is its own sync node: it connects to the trainer (ppo_godot.py, through godot-rl's
# GodotEnv, is the TCP server) and answers Godot RL Agents' messages, each a 4-byte little-endian
# length and UTF-8 JSON: handshake, env_info, reset, action, call, close. Like gymnasium 1.0, a
# finished agent sends its final observation with done, then is reset by the next action message,
# which it ignores (reward 0, info.autoreset); a time-out is sent as info.truncated.
#
# --autoreset_mode=same_step resets a finished agent at once instead, as gymnasium 1.0's SAME_STEP
# mode does: the step message carries the next episode's first observation in obs and the final one
# in info.final_obs (for trainers that reset one agent at a time, like RLlib's vector env); info
# has no autoreset key then, so ppo_godot.py reads such a game like a plugin one (ends terminal).
#
# --action_type=plugin plays like a game made with the official Godot RL Agents plugin (Godot 4,
# addons/godot_rl_agents/sync.gd and its AIController): spaces sent per agent, two observation keys
# and a discrete and a continuous action, each declared out of alphabetical order; info is {}; a
# finished agent (target reached, or a time-out, which the plugin cannot tell apart) is reset on the
# spot, so the observation sent with done is the next episode's first; done is cleared once sent.
# --terminal_obs=true (plugin only) sends what the plugin's open pull request #65 sends with its Sync
# node's "Send Terminal Obs Info" on: each done agent's info holds "terminal_observation", its final
# observation (taken before the reset on the spot) as a dict per key, like obs; at a time-out also
# "TimeLimit.truncated": true, a key absent at a reached target. Others' info stays {}. E.g. a
# time-out, then a reached target:
#   {"terminal_observation": {"to_target": [...], "position": [...]}, "TimeLimit.truncated": true}
#   {"terminal_observation": {"to_target": [...], "position": [...]}}
#
# Command line (from GodotEnv): --port=N --env_seed=N --speedup=N --action_repeat=N, and
# --action_type=discrete|multidiscrete|continuous|plugin --n_agents=N from the launchers, and
# --autoreset_mode=next_step|same_step (discrete, multidiscrete and continuous only), --max_steps=N
# (rules.gd: the time-out, 100 actions by default; not in tag mode), --terminal_obs=true (plugin only).
#
# --tick_cost_ms=N makes a slow game: every physics tick first spends N ms of real CPU time in a busy loop
# (not a sleep, which would leave the core to others), as a game with heavy physics or AI would. Nothing
# it sends changes: rules, rewards, observations and the random draws are the same with and without it.
#
# --observation=camera (discrete, multidiscrete and continuous only): each agent sees its arena from
# above through a CAMERA x CAMERA viewport, as the plugin's RGBCameraSensor2D sends it: the key
# camera_2d declared [3, H, W], the value the hex of the image's H x W x 3 bytes (row by row, RGB),
# and no positions. Walls grey, the target red, the agent blue, the floor black. Each step's info
# adds the positions drawn ("position", "target"), for tests, and what drawing them cost
# ("camera_usec": drawing and reading back, then hex-encoding), for benchmarks. Rendering needs the windowed
# engine (godot3-runner) on a display; a headless one has no image and sends black frames.
# --screenshot=PATH saves the window (agent 0's arena, larger) as PNG when it first draws.
#
# --policy=PATH plays without a trainer (no Python at all): every agent acts by an exported GDScript
# policy (ppo_godot.py --gdscript-export-path), PATH absolute or res://; in tag mode
# --policy_chaser=PATH --policy_runner=PATH give each side its own. Each agent's first
# ceil(--episodes / the agents of the policy that has fewest) episodes (--episodes 100 by default) are
# printed with their return, then each policy's mean, as --eval-checkpoint counts them; then it quits.
#
# --record_demos=PATH records demonstrations as the plugin's RECORD_EXPERT_DEMOS mode does (sync.gd,
# _demo_record_process): no trainer; the game's own script plays every agent (scripted_action: in Chase,
# straight for the target; in tag mode, each side's script), and agent 0 is the one recording
# controller. At every action (every --action_repeat ticks) its obs["obs"] is stored, then the action it
# takes, as a flat array in the action space's order; at an episode's end, its final observation and no
# action, so an episode has one more observation than actions. The file, one JSON array of
# [observations, actions] per episode, is written when the game quits: after --episodes of them (100 by
# default). Vector observations only: the plugin records the obs key alone.

const CONNECT_TIMEOUT_MS = 30000
const CAMERA = 36  # pixels a side of an agent's camera image: the plugin's minimum
const WALL = 2  # pixels of wall on each side; the arena fills the rest
const MARK = 4  # pixels a side of the agent's and the target's squares
const WINDOW_SCALE = 8  # the window shows agent 0's arena this many times larger

export var rules_path = "res://rules.gd"  # tag.tscn: res://tag.gd

var rules = null  # the game's state and rules (rules.gd)
var peer = StreamPeerTCP.new()
var connected = false
var port = 11008
var n_agents = 16
var plugin = false  # --action_type=plugin
var same_step = false  # --autoreset_mode=same_step
var terminal_obs = false  # --terminal_obs=true: plugin's info tells each end (PR #65's Send Terminal Obs Info)
var action_repeat = 1
var tick_in_action = 0
var waiting_for_reply = false
var tick_cost_usec = 0  # --tick_cost_ms: microseconds of busy CPU each physics tick spends

var args = {}  # the command line's --key=value arguments
var camera = false  # --observation=camera
var viewport = null  # camera: every agent's arena, in a grid
var cells = []  # camera: each agent's place in the viewport
var drawn = null  # camera: the viewport's last image
var screenshot = ""  # camera: where to save the window's first drawing
var camera_usec = [0, 0]  # camera: microseconds the last observations took to draw and read back, and to hex-encode
var marks = []  # camera: [agent square, target square] of each arena drawn, the window's last
var playing = false  # --policy: the game plays alone (rules.policies act)
var acting = false  # --policy: an action is under way
var recording = ""  # --record_demos: the file
var rounds = 0  # --record_demos: the episodes to record
var demos = []  # --record_demos: agent 0's finished episodes, each [observations, actions]
var demo = [[], []]  # --record_demos: its episode under way


func _ready():
	for arg in OS.get_cmdline_args():
		if arg.begins_with("--") and "=" in arg:
			var parts = arg.substr(2, arg.length() - 2).split("=", true, 1)
			args[parts[0]] = parts[1]
	port = int(args.get("port", "11008"))
	action_repeat = max(1, int(args.get("action_repeat", "1")))
	tick_cost_usec = max(0, int(float(args.get("tick_cost_ms", "0")) * 1000))
	rules = load(rules_path).new()
	rules.start(args)
	n_agents = rules.n_agents
	plugin = rules.plugin
	same_step = args.get("autoreset_mode", "next_step") == "same_step" and not plugin
	terminal_obs = args.get("terminal_obs", "false") == "true" and plugin
	camera = args.get("observation", "position") == "camera" and not plugin
	screenshot = args.get("screenshot", "")
	Engine.iterations_per_second = 60 * max(1, int(args.get("speedup", "1")))
	if camera:
		make_cameras()
	if args.has("record_demos"):
		record_alone()
		return
	var given = false  # --policy or --policy_<name>
	for key in args:
		given = given or key == "policy" or key.begins_with("policy_")
	if given:
		play_alone()
		return
	connected = connect_to_trainer()
	if not connected:
		printerr("chase: no trainer listening on 127.0.0.1:%d" % port)
		get_tree().quit(1)


func connect_to_trainer():
	# The trainer may start listening after the game starts: retry until it does.
	var start = OS.get_ticks_msec()
	while OS.get_ticks_msec() - start < CONNECT_TIMEOUT_MS:
		peer = StreamPeerTCP.new()
		peer.set_big_endian(false)
		peer.connect_to_host("127.0.0.1", port)
		while peer.get_status() == StreamPeerTCP.STATUS_CONNECTING:
			OS.delay_msec(5)
		if peer.get_status() == StreamPeerTCP.STATUS_CONNECTED:
			peer.set_no_delay(true)
			return true
		OS.delay_msec(100)
	return false


func play_alone():
	if camera:
		printerr("chase: --policy plays vector observations only (camera policies ship as ONNX)")
		get_tree().quit(2)
		return
	var problem = rules.load_policies()
	if problem != "":
		printerr(problem)
		get_tree().quit(2)
		return
	playing = true
	rules.start_counting(int(args.get("episodes", "100")))
	rules.reset_all()  # as the trainer's first reset message does


func record_alone():
	if camera or plugin:
		printerr("chase: --record_demos records the obs key alone, as the plugin does: vector observations only")
		get_tree().quit(2)
		return
	recording = args["record_demos"]
	rounds = int(args.get("episodes", "100"))
	rules.reset_all()  # as the trainer's first reset message does


func act_recording():
	if acting:
		rules.end_action()
	var actions = []
	for i in range(n_agents):
		actions.append(rules.scripted_action(i))
	demo[0].append(observation(0)["obs"])
	if rules.dones[0]:  # its episode ended on the last action: the final observation, and no action
		demos.append(demo)
		demo = [[], []]
		if demos.size() >= rounds:
			write_demos()
			return
	else:
		demo[1].append(action_array(actions[0], 0))
	rules.start_action(actions)
	acting = true


func write_demos():
	var file = File.new()
	if file.open(recording, File.WRITE) != OK:
		printerr("chase: --record_demos: cannot write %s" % recording)
		get_tree().quit(1)
		return
	file.store_string(JSON.print(demos))
	file.close()
	print("recorded %d episodes of agent 0 to %s" % [demos.size(), recording])
	recording = ""  # done: no more actions
	get_tree().quit()


func action_array(action, i):
	# an action dict as the plugin's get_action() returns it: its values, flat, in the action space's order
	var space = rules.action_space()
	if space is Array:  # one entry per agent
		space = space[i]
	var out = []
	for key in space:
		if action[key] is Array:
			for value in action[key]:
				out.append(value)
		else:
			out.append(action[key])
	return out


func act_alone():
	if acting and rules.end_action_alone():
		rules.print_means()
		playing = false  # done: no more actions
		get_tree().quit()
		return
	rules.start_action(rules.policy_actions())
	acting = true


func _physics_process(_delta):
	if tick_cost_usec > 0:
		spend_tick_cost()
	if recording != "":
		if tick_in_action == 0:
			act_recording()
		if recording != "":
			rules.tick_all()
		tick_in_action = (tick_in_action + 1) % action_repeat
		return
	if playing:
		if tick_in_action == 0:
			act_alone()
		rules.tick_all()
		tick_in_action = (tick_in_action + 1) % action_repeat
		return
	if not connected:
		return
	if camera and Engine.get_idle_frames() < 2:  # the squares are recorded for drawing on idle frames
		return
	if tick_in_action == 0:
		if waiting_for_reply:
			rules.end_action()
			send(step_message())
			waiting_for_reply = false
			if plugin:  # sync.gd clears an agent's done once it has sent it
				for i in range(n_agents):
					rules.dones[i] = false
		if not handle_messages_until_action():
			connected = false
			get_tree().quit()
			return
	rules.tick_all()
	tick_in_action = (tick_in_action + 1) % action_repeat


func spend_tick_cost():
	# busy until tick_cost_usec have passed on the clock: a busy core, as a slow game's own work keeps it
	var until = OS.get_ticks_usec() + tick_cost_usec
	while OS.get_ticks_usec() < until:
		pass


func handle_messages_until_action():
	while true:
		var message = receive()
		if message == null or message["type"] == "close":
			return false
		match message["type"]:
			"handshake":
				pass
			"env_info":
				send({"type": "env_info", "n_agents": n_agents,
					"observation_space": observation_space(),
					"action_space": rules.action_space(), "agent_policy_names": rules.names()})
			"reset":
				if message.has("seed"):  # ppo_godot.py's reset(seed); Godot RL Agents' protocol has none
					rules.rng.seed = int(message["seed"])
				rules.reset_all()
				if plugin:
					send({"type": "reset", "obs": observations(), "info": infos()})
				else:
					send({"type": "reset", "obs": observations()})
			"call":
				send({"type": "call", "returns": []})
			"action":
				rules.start_action(message["action"])
				waiting_for_reply = true
				return true
	return false


func observation_space():
	if camera:  # the plugin's RGBCameraSensor2D declares [C, H, W] and sends H x W x C bytes
		return {"camera_2d": {"space": "box", "size": [3, CAMERA, CAMERA]}}
	return rules.observation_space()


func step_message():
	var message = {"type": "step", "obs": observations(), "reward": rules.rewards, "done": rules.dones.duplicate(),
		"info": infos()}
	if same_step:  # reset a finished agent now; its final observation goes in info.final_obs
		for i in range(n_agents):
			if rules.dones[i]:
				message["info"][i]["final_obs"] = message["obs"][i]
				rules.reset_agent(i)
				message["obs"][i] = observation(i)
	return message


func observation(i):
	if camera:
		draw_arenas()
		return {"camera_2d": camera_image(i)}
	return rules.observation(i)


func observations():
	var out = []
	if camera:  # one drawing for all agents
		var start = OS.get_ticks_usec()
		draw_arenas()
		var drawn_at = OS.get_ticks_usec()
		for i in range(n_agents):
			out.append({"camera_2d": camera_image(i)})
		camera_usec = [drawn_at - start, OS.get_ticks_usec() - drawn_at]
		return out
	for i in range(n_agents):
		out.append(observation(i))
	return out


func make_cameras():
	# One viewport holds every agent's arena, side by side in a grid, CAMERA pixels apart: one drawing
	# and one read-back a step (a viewport per agent ran 1.5x slower: 103 against 150 steps/s with 16).
	# The window shows agent 0's arena, larger. Drawn on demand only (draw_arenas), so that each
	# observation shows the positions it is sent with.
	VisualServer.render_loop_enabled = false
	OS.window_size = Vector2(CAMERA, CAMERA) * WINDOW_SCALE
	var columns = int(ceil(sqrt(n_agents)))
	viewport = Viewport.new()
	viewport.size = Vector2(columns, ceil(float(n_agents) / columns)) * CAMERA
	viewport.usage = Viewport.USAGE_2D
	viewport.render_target_update_mode = Viewport.UPDATE_ALWAYS
	viewport.render_target_v_flip = true  # Godot 3 reads a viewport's image upside down
	add_child(viewport)
	for i in range(n_agents + 1):
		var canvas = Node2D.new()
		if i < n_agents:
			canvas.position = Vector2(i % columns, i / columns) * CAMERA
			viewport.add_child(canvas)
			cells.append(Rect2(canvas.position, Vector2(CAMERA, CAMERA)))
		else:
			canvas.scale = Vector2(WINDOW_SCALE, WINDOW_SCALE)
			add_child(canvas)
		square(canvas, Vector2(0, 0), CAMERA, Color(0.5, 0.5, 0.5))
		square(canvas, Vector2(WALL, WALL), CAMERA - 2 * WALL, Color(0, 0, 0))
		marks.append([square(canvas, Vector2(), MARK, Color(0, 0, 1)), square(canvas, Vector2(), MARK, Color(1, 0, 0))])
		canvas.move_child(marks[i][1], 2)  # the target under the agent


func square(parent, corner, size, color):
	var rect = ColorRect.new()
	rect.rect_position = corner
	rect.rect_size = Vector2(size, size)
	rect.color = color
	parent.add_child(rect)
	return rect


func to_pixels(point):
	# [-1, 1] x [-1, 1] onto the floor: x to the right, y down, as in the image's rows
	return Vector2(WALL, WALL) + (point + Vector2(1, 1)) / 2.0 * (CAMERA - 2 * WALL) - Vector2(MARK, MARK) / 2.0


func draw_arenas():
	for i in range(n_agents + 1):
		var agent = i if i < n_agents else 0
		marks[i][0].rect_position = to_pixels(rules.positions[agent])
		marks[i][1].rect_position = to_pixels(rules.targets[agent])
	VisualServer.force_draw(false)
	if screenshot != "":
		var window = get_viewport().get_texture().get_data()
		window.flip_y()  # Godot 3 reads a viewport's image upside down
		window.save_png(screenshot)
		screenshot = ""
	drawn = viewport.get_texture().get_data()
	if drawn == null or drawn.is_empty():  # a headless engine renders nothing: black
		drawn = Image.new()
		drawn.create(int(viewport.size.x), int(viewport.size.y), false, Image.FORMAT_RGB8)
	drawn.convert(Image.FORMAT_RGB8)


func camera_image(i):
	return drawn.get_rect(cells[i]).get_data().hex_encode()


func infos():
	var out = []
	for i in range(n_agents):
		if plugin:
			out.append({})
			if terminal_obs and rules.dones[i]:  # the episode that ended: its last observation, and a time-out
				out[i]["terminal_observation"] = rules.final_observations[i]
				if rules.truncated[i]:
					out[i]["TimeLimit.truncated"] = true
		elif same_step:  # no autoreset key: no step only resets an agent
			out.append({"truncated": rules.truncated[i]})
		else:
			out.append({"truncated": rules.truncated[i], "autoreset": rules.autoreset[i]})
		if camera:  # what the image shows, for tests; what the last one cost, for benchmarks
			out[i]["position"] = [rules.positions[i].x, rules.positions[i].y]
			out[i]["target"] = [rules.targets[i].x, rules.targets[i].y]
			out[i]["camera_usec"] = camera_usec
	return out


func send(message):
	var data = JSON.print(message).to_utf8()  # in the order written: to_json sorts the keys
	peer.put_u32(data.size())
	peer.put_data(data)


func receive():
	var size = peer.get_u32()
	if peer.get_status() != StreamPeerTCP.STATUS_CONNECTED or size == 0:
		return null
	var result = peer.get_data(size)
	if result[0] != OK:
		return null
	return parse_json(result[1].get_string_from_utf8())
