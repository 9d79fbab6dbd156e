extends Node2D
# Chase in a browser: the Godot 4 build of the demo game (godot/play_in_browser.py packs it with the
# policies and serves it with Godot 4.6's web template). The rules are the Godot 3 game's own files,
# rules.gd and tag.gd, run unchanged; this file plays them with exported GDScript policies and draws
# every arena: the agents (blue; in tag the chaser red, the runner blue), their targets and their trails.
#
# Command line (the page's engine args): --game=chase|tag, --action_type=discrete|multidiscrete|continuous
# (Chase), --env_seed=N, --n_agents=N, --action_repeat=N, --policy=res://PATH (tag: --policy_chaser=
# --policy_runner=), as main.gd --policy reads them. Each agent's first ceil(--episodes / agents) episodes
# are printed with their return as main.gd prints them, then each policy's mean and DONE; it plays on.
# --speedup=N: game ticks per physics tick (60 a second). --screenshot=N: after N drawn frames, print
# "SCREENSHOT " and the PNG of the game's drawn area, base64.

const ARENA = 180  # pixels a side of one arena on screen
const COLUMNS = 4  # arenas a row
const GAP = 12
const TOP = 64  # pixels above the arenas: the title and the mean returns
const TRAIL = 40  # positions kept per body, one per action
const FOREVER = 1000000000  # --episodes when not given: the counting never ends

var args = {}
var rules = null
var tag = false
var action_repeat = 1
var speedup = 1
var tick_in_action = 0
var acting = false
var reported = false  # the means printed
var trails = []
var frames_to_screenshot = -1


func _ready():
	for arg in OS.get_cmdline_args():
		if arg.begins_with("--") and "=" in arg:
			var parts = arg.substr(2).split("=", true, 1)
			args[parts[0]] = parts[1]
	tag = args.get("game", "chase") == "tag"
	rules = load("res://tag.gd" if tag else "res://rules.gd").new()
	rules.start(args)
	action_repeat = max(1, int(args.get("action_repeat", "1")))
	speedup = max(1, int(args.get("speedup", "1")))
	frames_to_screenshot = int(args.get("screenshot", "-1"))
	var problem = rules.load_policies()
	if problem != "":
		printerr(problem)
		print("DONE")
		set_physics_process(false)
		rules = null  # nothing to draw
		return
	rules.start_counting(int(args.get("episodes", str(FOREVER))))
	rules.reset_all()
	for body in range(rules.bodies_drawn().size()):
		trails.append([])
	get_tree().root.content_scale_size = drawn_size()  # drawn at this size, scaled to the page


func drawn_size():
	var columns = min(COLUMNS, rules.arena_count())
	var rows = int(ceil(float(rules.arena_count()) / columns))
	return Vector2i(GAP + columns * (ARENA + GAP), TOP + rows * (ARENA + GAP))


func _physics_process(_delta):
	for _k in range(speedup):
		if tick_in_action == 0:
			act()
		rules.tick_all()
		tick_in_action = (tick_in_action + 1) % action_repeat
	queue_redraw()


func act():
	if acting and rules.end_action_alone() and not reported:
		rules.print_means()
		print("DONE")
		reported = true
	rules.start_action(rules.policy_actions())
	acting = true
	var now = rules.bodies_drawn()
	for body in range(now.size()):
		if rules.started_anew(body):  # reset by this action: a new episode, a new trail
			trails[body].clear()
		trails[body].append(now[body])
		if trails[body].size() > TRAIL:
			trails[body].pop_front()


func arena_corner(arena):
	var columns = min(COLUMNS, rules.arena_count())
	return Vector2(GAP + (arena % columns) * (ARENA + GAP), TOP + (arena / columns) * (ARENA + GAP))


func to_screen(arena, point):
	return arena_corner(arena) + (point + Vector2(1, 1)) / 2.0 * ARENA


func _draw():
	if rules == null:
		return
	var font = ThemeDB.fallback_font
	var title = "Chase, tag: each chaser (red) after its runner (blue)" if tag else \
		"Chase (%s): each agent (blue) after its target (red)" % rules.action_type
	draw_string(font, Vector2(GAP, 26), title, HORIZONTAL_ALIGNMENT_LEFT, -1, 18, Color(0.9, 0.9, 0.9))
	var means = []
	for name in rules.totals:
		means.append("%s %.2f" % [name, rules.totals[name][1] / rules.totals[name][0]])
	if not means.is_empty():
		var text = "mean return per episode so far: " + ", ".join(means)
		draw_string(font, Vector2(GAP, 50), text, HORIZONTAL_ALIGNMENT_LEFT, -1, 16, Color(0.8, 0.8, 0.8))
	for arena in range(rules.arena_count()):
		draw_rect(Rect2(arena_corner(arena), Vector2(ARENA, ARENA)), Color(0.08, 0.08, 0.1))
		draw_rect(Rect2(arena_corner(arena), Vector2(ARENA, ARENA)), Color(0.5, 0.5, 0.5), false, 2.0)
	var now = rules.bodies_drawn()
	for body in range(now.size()):
		var arena = body / 2 if tag else body
		var color = Color(0.9, 0.25, 0.2) if tag and body % 2 == 0 else Color(0.3, 0.55, 1.0)
		var trail = trails[body]
		for k in range(1, trail.size()):
			draw_line(to_screen(arena, trail[k - 1]), to_screen(arena, trail[k]), Color(color, 0.35), 2.0)
		if not tag:
			draw_circle(to_screen(arena, rules.targets[body]), rules.REACH * ARENA / 2.0, Color(0.9, 0.25, 0.2))
		draw_circle(to_screen(arena, now[body]), 6.0, color)
	if frames_to_screenshot > 0:
		frames_to_screenshot -= 1
		if frames_to_screenshot == 0:
			RenderingServer.frame_post_draw.connect(screenshot, CONNECT_ONE_SHOT)


# The window's viewport is the game's drawn area, scaled: Godot draws the bars that keep its aspect beside it
func screenshot():
	var png = get_viewport().get_texture().get_image().save_png_to_buffer()
	print("SCREENSHOT " + Marshalls.raw_to_base64(png))
