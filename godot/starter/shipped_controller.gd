extends "res://ai_controller.gd"
# Plays the trained policy in the shipped game (ship.tscn), with no Python and no Sync node. It is
# a subclass of the training controller: the same observations and actions. Its actions come from
# the GDScript file that ppo_godot.py writes (--gdscript-export-path), one decision every
# ACTION_REPEAT physics ticks, as in training, at training's 60 ticks a game second (below).
# It stays out of training: it leaves the AGENT group, so a Sync node never collects it, and it
# acts only on itself. Before the first export, with no policy file yet, it says so once and the
# player stands still.

const ACTION_REPEAT := 8  # the Sync node's action_repeat in train.tscn
@export var policy_path := "res://npc_policy.gd"  # where you saved the exported policy
var policy = null  # policy.act(get_obs()) returns an action, as {"move": 3}
var ticks := 0


func _ready():
	super._ready()  # the plugin's: joins the AGENT group...
	remove_from_group("AGENT")  # ...where a Sync node finds the agents it trains: leave it
	heuristic = "model"  # the Player takes the actions, not the arrow keys ("human" by default)
	# Training ran 60 ticks a game second (Sync: 60 x speed_up at time scale speed_up), and the game moves, decides
	# and times out by the tick: so the shipped game runs at that rate too, whatever the project's.
	var rate := roundi(60 * Engine.time_scale)
	if Engine.physics_ticks_per_second != rate:
		push_warning("ShippedController: physics ticks per second set from %d to %d, as the policy trained (60 a "
				% [Engine.physics_ticks_per_second, rate] + "game second; physics/common/physics_ticks_per_second)")
		Engine.physics_ticks_per_second = rate
	# load(), not preload(): the game must run before the first export, when there is no file
	if ResourceLoader.exists(policy_path):
		policy = load(policy_path).new()
	else:
		push_error("ShippedController: no policy at %s: export one with ppo_godot.py " % policy_path
				+ "--gdscript-export-path; until then the player stands still")


func _physics_process(delta):
	if policy == null:
		return
	super._physics_process(delta)  # the training controller's time-out: the same episodes
	if ticks % ACTION_REPEAT == 0:
		var action = policy.act(get_obs())
		if not action.is_empty():  # {} if an observation does not fit the policy (it says why)
			set_action(action)
	ticks += 1
