extends CharacterBody2D
# The agent's body, in a square arena with one goal. The game's rules live here: it moves where
# its controller's last action points, the arena's edges stop it, and each episode starts at a
# random place with the goal at another. What the trainer sees of it (observations, actions,
# rewards, episode ends) is ai_controller.gd's.
# The random places come from Godot's global random numbers (randf_range), which the Sync node
# seeds with the trainer's --env_seed (1 without it) before Python's first reset: one seed, the
# same episodes. Without a Sync node (ship.tscn), Godot seeds them at random.

const ARENA_SIZE := 400.0  # the arena: (0, 0) to (ARENA_SIZE, ARENA_SIZE) in the parent's space
const SPEED := 200.0  # pixels per second
const REACH := 20.0  # the goal is reached closer than this
const MIN_START_DISTANCE := 100.0  # a new episode's goal is at least this far from the player

# The child that trains (AIController2D in train.tscn) or plays (ShippedController in ship.tscn)
@export var ai_controller: AIController2D
@export var goal: Node2D


func _ready():
	ai_controller.init(self)  # the plugin's: the controller reaches this node as _player
	new_episode()


func _physics_process(_delta):
	if ai_controller.needs_reset:  # after an end (ai_controller.end_episode) or the trainer's reset
		new_episode()
		return
	var direction = ai_controller.move
	if ai_controller.heuristic == "human":  # no trainer connected, no policy: the arrow keys drive
		direction = Input.get_vector("ui_left", "ui_right", "ui_up", "ui_down")
	velocity = direction * SPEED
	move_and_slide()
	position = position.clamp(Vector2.ZERO, Vector2(ARENA_SIZE, ARENA_SIZE))  # the arena's edges
	ai_controller.reward_progress()
	if position.distance_to(goal.position) < REACH:
		ai_controller.reached_goal()


func new_episode():
	position = random_point()
	goal.position = random_point()
	while goal.position.distance_to(position) < MIN_START_DISTANCE:
		goal.position = random_point()
	velocity = Vector2.ZERO
	ai_controller.reset()


func random_point() -> Vector2:
	return Vector2(randf_range(0.0, ARENA_SIZE), randf_range(0.0, ARENA_SIZE))
