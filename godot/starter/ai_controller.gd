extends AIController2D
# What the trainer sees of the Player (this node's parent): observations, the action, rewards and
# episode ends. In train.tscn the Sync node reads it every action_repeat (8) physics ticks and
# hands it the actions Python chose.

const DIRECTIONS = [Vector2.ZERO, Vector2.UP, Vector2.DOWN, Vector2.LEFT, Vector2.RIGHT]
var move := Vector2.ZERO  # the last action's direction: the Player moves along it
var _last_distance := 0.0  # to the goal, after the last physics tick (for the shaping reward)
var _end_info := {}  # what the next message's info carries: {} until an episode ends (below)


# Four numbers, each in [-1, 1]: ppo_godot.py feeds observations to its network as they come (it
# does not normalise them), and godot-rl declares every "box" observation a Box(-1, 1). So each is
# divided by the largest it can be: the vector to the goal by the arena's size, the velocity by
# the speed.
func get_obs() -> Dictionary:
	var to_goal = _player.goal.position - _player.position
	var velocity = _player.velocity
	return {"obs": [to_goal.x / _player.ARENA_SIZE, to_goal.y / _player.ARENA_SIZE,
			velocity.x / _player.SPEED, velocity.y / _player.SPEED]}


func get_reward() -> float:
	return reward


# One discrete action, "move", of 5 choices: 0 stay, 1 up, 2 down, 3 left, 4 right (DIRECTIONS).
func get_action_space() -> Dictionary:
	return {"move": {"size": 5, "action_type": "discrete"}}


func set_action(action) -> void:
	move = DIRECTIONS[int(action["move"])]  # int(): numbers from Python arrive as floats (3.0)


# The reward: +1 at the goal, and each tick the progress toward it as a fraction of the arena's
# diagonal. Over an episode the progress adds up to at most 1 (the start's distance over the
# diagonal), so reaching the goal stays worth more than any path toward it. Nothing else is
# rewarded. The Player calls it every tick after it moved.
func reward_progress() -> void:
	var distance = _player.position.distance_to(_player.goal.position)
	reward += (_last_distance - distance) / (_player.ARENA_SIZE * sqrt(2.0))
	_last_distance = distance


func reached_goal() -> void:
	reward += 1.0
	end_episode()


# The plugin's reset (n_steps = 0, needs_reset = false), at each new episode's start (the Player
# calls it). The player rests until the next action, so the trainer's first observation of the
# episode is its start, and no reward comes before it.
func reset():
	super.reset()
	move = Vector2.ZERO
	_last_distance = _player.position.distance_to(_player.goal.position)


# Episode ends that reach the trainer, time-outs included, with the final observation: the lines
# of docs/your-own-godot-game.md ("Ending episodes"). They send the keys of the plugin's "Send
# Terminal Obs Info" option (its pull request 65, not in the plugin at bf5d6a2); that page says
# what to change once a plugin release has the option.


# Every end goes through here: the goal (reached_goal) and the time-out (below).
func end_episode(timed_out := false) -> void:
	_end_info = {"terminal_observation": get_obs()}  # now, before anything resets the game
	if timed_out:
		_end_info["TimeLimit.truncated"] = true
	done = true
	needs_reset = true


# Replaces the plugin's: the same count of physics ticks, but a time-out ends the episode. The
# time-out, reset_after, is set on the node in train.tscn: 480 ticks, 8 seconds of game time.
func _physics_process(_delta):
	n_steps += 1
	if n_steps > reset_after and not needs_reset:
		end_episode(true)


# sync.gd reads it once a message, just before done: hand the end over once, as done is.
func get_info() -> Dictionary:
	var info = _end_info
	_end_info = {}
	return info
