"""ppo_godot.py trains the Godot 4 starter project (godot/starter/, issue 59) for real, on Godot 4.6's official web
build in headless Chromium, and this measures whether and how fast it learns.

    python benchmarks/starter_learns.py --seeds 3 --total-timesteps 300000

There is no native Godot 4 here and the web build has no TCP, so the game cannot connect to ppo_godot.py as it
would from the editor. The bridge, all in this file:
- SYNC_GD, a stand-in for the plugin's sync.gd in TRAINING mode, written here from its behaviour (at bf5d6a2):
  the same reads and writes in the same order every action_repeat physics ticks (obs, info, then reward and done
  of every training agent; reset, action, call and close handled alike), but each exchange with Python is one
  synchronous XMLHttpRequest (JavaScriptBridge.eval) to the server that served the page: the messages the game
  would have written to its socket go in the request, the message it would have read comes back as the answer.
- The relay (Relay), that server's /sync endpoint: it connects to ppo_godot.py's --port as the game would, writes
  each message with the wire's framing (4-byte little-endian length, JSON) and answers with the next message
  ppo_godot.py sends. ppo_godot.py runs unchanged, without --env-path, as for a game started from the editor.
  The relay also reads every step message that passes, to count how episodes end (goal or time-out).
- The training scene: the starter's level (a Player with its AIController2D, and a Goal) instanced COPIES times
  side by side, each copy one agent, as the plugin's examples train, plus the stand-in Sync node. The Sync node
  takes speed_up from --speedup as the plugin does (physics_ticks_per_second = 60 x speed_up, time_scale =
  speed_up: each tick is still 1/60 s of game time), and also raises Engine.max_physics_steps_per_frame to
  speed_up, which the plugin does not: the web build runs physics from the browser's animation frames (about 60 a
  second), and at Godot's default of 8 steps a frame no more than ~480 ticks a second could run.
- The plugin's AIController2D, stood in: tests/godot4_plugin.py's addon_files() (the suite's stand-ins).
The random and scripted baselines play the same pack through the same relay, with Python's side of the protocol
played in this file instead of by ppo_godot.py.

What is measured: ppo_godot.py at its defaults (no flag that changes learning: the game needs none; its
--num-steps 64 holds a whole episode, at most 60 actions) on COPIES = 32 agents, as many as benchmarks/godot_chase.py
trains on (2 games x 16), seeds 1..N one at a time; charts/episodic_return from each run's TensorBoard log; the
share of episodes that reach the goal and that time out (the relay's count, from info "TimeLimit.truncated"); a
random policy (uniform over the 5 moves) and a scripted one (straight for the goal along the longer axis) played
through the same relay and pack, for scale; agent-steps/s (ppo_godot.py's SPS, and the relay's count over the
game's span), physics ticks/s, the time an exchange takes and the share spent waiting for ppo_godot.py.

Prediction, written before the first run (against the starter as drafted on 2026-12-07: +1 at the goal, progress
toward it worth at most 1 in all, a time-out after 480 physics ticks = 60 actions of 8 ticks, 5 discrete moves):
the mean return of the last 100 episodes rises from the random policy's (measured first) to at least 90% of the
scripted policy's by 200,000 agent-steps on every seed, and at the end of 300,000 at least 95% of the last 100
episodes end at the goal rather than at the time-out. Why: the Chase game's discrete mode, the same kind of task
(4 numbers observed, 5 moves, a reward for the distance closed and 1 at the target, which ends the episode), was
at 86% of its scripted policy by 50,000 agent-steps and 96% by 200,000 with 32 agents at these defaults
(benchmarks/README.md). Speed, a guess from the bridge's first trials on a toy level (exchanges of 4-12
ms on this loaded machine, one per action for all agents): 1,000 to 4,000 agent-steps/s, the exchanges, not the
physics, taking most of the time.
"""
import argparse
import http.server
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from common import REPO, episode_curve, read_run, running_mean, save_figure, write_table

sys.path.insert(0, str(REPO / "godot"))
sys.path.insert(0, str(REPO / "tests"))
import play_in_browser as web  # noqa: E402  the pack writer and the page runner
import godot4_plugin  # noqa: E402  the plugin's classes as the suite stands them in

STARTER = REPO / "godot" / "starter"
TEMPLATE = web.CACHE  # the engine's files, as godot/play_in_browser.py --fetch-template leaves them
DONE = "DONE"  # what the stand-in Sync node prints once Python closes (or is gone): the page runner stops there

# The plugin's Sync node in TRAINING mode, for the web build: the exchanges go through synchronous XMLHttpRequests
# to the page's own server (the relay) instead of a TCP socket. Modes other than training are not stood in.
SYNC_GD = r'''extends Node
class_name Sync
## A stand-in for Godot RL Agents' Sync node (sync.gd, TRAINING mode) on Godot's web build, which has no TCP:
## each exchange with Python is one synchronous XMLHttpRequest to the server that served the page
## (benchmarks/starter_learns.py's relay), which speaks the plugin's TCP protocol to the trainer.

enum ControlModes { HUMAN, TRAINING, ONNX_INFERENCE }
@export var control_mode: ControlModes = ControlModes.TRAINING
@export var action_repeat := 8
@export var speed_up := 1.0
@export var onnx_model_path := ""

const MAJOR_VERSION := "0"
const MINOR_VERSION := "7"
# One exchange: POST the messages for Python (one JSON text a line), return the answer, one message ("" once the
# trainer is gone). Synchronous, so the game waits for the trainer as it does on a socket.
const EXCHANGE_JS := "(function (body) { var request = new XMLHttpRequest(); request.open('POST', '/sync', false); try { request.send(body); } catch (error) { return ''; } return request.status == 200 ? request.responseText : ''; })(%s)"

var all_agents: Array = []  # the AGENT group, once, after the parent's ready
var agents: Array = []  # the training agents among them, in the group's order
var outbox := PackedStringArray()  # messages for Python, sent with the next exchange
var connected := false
var args := {}
var ticks := 0
var reply_reset := false  # a reset came: answer it with the observations on the next action tick
var reply_step := false  # actions came: answer them after action_repeat ticks
var exchanges := 0  # what _stop reports: exchanges made, the microseconds spent in them, since the first
var exchange_usec := 0
var first_usec := 0


func _ready():
	await get_parent().ready
	get_tree().paused = true  # as the plugin: the game waits a second before it starts
	_initialize()
	await get_tree().create_timer(1.0).timeout
	get_tree().paused = false


func _initialize():
	args = _read_args()
	var speed := float(args.get("speedup", str(speed_up)))
	Engine.physics_ticks_per_second = int(round(speed * 60))
	Engine.time_scale = speed
	# Not in the plugin: the browser runs frames about 60 times a second, and Godot runs at most this many
	# physics ticks a frame (8 by default): let one frame run the speed_up ticks it is owed. The page's
	# --max_physics_steps_per_frame=N (this benchmark's, not the plugin's) sets it instead.
	Engine.max_physics_steps_per_frame = int(args.get("max_physics_steps_per_frame", str(max(8, int(ceil(speed))))))
	action_repeat = int(args.get("action_repeat", str(action_repeat)))
	seed(int(args.get("env_seed", "1")))
	print("physics ticks a second ", Engine.physics_ticks_per_second, ", time scale ", Engine.time_scale,
		", at most ", Engine.max_physics_steps_per_frame, " a frame, action_repeat ", action_repeat)
	all_agents = get_tree().get_nodes_in_group("AGENT")
	for agent in all_agents:
		if agent.control_mode == agent.ControlModes.INHERIT_FROM_SYNC:
			agent.control_mode = agent.ControlModes.TRAINING
		agent.set_heuristic("human")
		if agent.control_mode == agent.ControlModes.TRAINING:
			agents.append(agent)
	if agents.is_empty():
		return
	var obs_space := []
	var action_space := []
	var policy_names := []
	for agent in agents:
		obs_space.append(agent.get_obs_space())
		action_space.append(agent.get_action_space())
		policy_names.append(agent.policy_name)
	var handshake = _exchange()  # the relay connects to the trainer; its first message is the handshake
	if handshake == null or handshake.get("type") != "handshake":
		push_warning("no trainer answered: the agents stay on human control")
		return
	connected = true
	for agent in agents:
		agent.set_heuristic("model")
	if handshake["major_version"] != MAJOR_VERSION or handshake["minor_version"] != MINOR_VERSION:
		print("WARNING: the trainer speaks version ", handshake["major_version"], ".", handshake["minor_version"])
	var request = _exchange()
	if request == null or request.get("type") != "env_info":
		_stop("the trainer did not ask for env_info")
		return
	_post({"type": "env_info", "observation_space": obs_space, "action_space": action_space,
		"n_agents": agents.size(), "agent_policy_names": policy_names})


func _physics_process(_delta):
	if not connected:
		return
	var action_tick := ticks % action_repeat == 0
	ticks += 1
	if not action_tick:
		return
	get_tree().paused = true
	var obs := []
	var info := []
	for agent in agents:
		obs.append(agent.get_obs())
	for agent in agents:
		info.append(agent.get_info())
	if reply_reset:
		reply_reset = false
		_post({"type": "reset", "obs": obs, "info": info})
		get_tree().paused = false
		return
	if reply_step:
		reply_step = false
		var reward := []
		var done := []
		for agent in agents:
			reward.append(agent.get_reward())
			agent.zero_reward()
		for agent in agents:
			var agent_done = agent.get_done()
			if agent_done:
				agent.set_done_false()
			done.append(agent_done)
		_post({"type": "step", "obs": obs, "reward": reward, "done": done, "info": info})
	_handle(_exchange())


func _handle(message):
	if message == null:
		_stop("the trainer is gone")
		return
	match message["type"]:
		"close":
			_stop("the trainer closed")
		"reset":
			for agent in all_agents:
				agent.needs_reset = true
			reply_reset = true
			get_tree().paused = false
		"action":
			var actions = message["action"]
			for i in range(actions.size()):
				agents[i].set_action(actions[i])
			reply_step = true
			get_tree().paused = false
		"call":
			var returns := []
			for agent in all_agents:
				returns.append(agent.call(message["method"]))
			_post({"type": "call", "returns": returns})
			_handle(_exchange())
		_:
			print("a message this Sync node does not handle: ", message["type"])


func _post(message: Dictionary):
	outbox.append(JSON.stringify(message, "", false))


func _exchange():
	var body := "\n".join(outbox)
	outbox.clear()
	var started := Time.get_ticks_usec()
	first_usec = first_usec if first_usec else started
	var answer = JavaScriptBridge.eval(EXCHANGE_JS % JSON.stringify(body), true)
	exchange_usec += Time.get_ticks_usec() - started
	exchanges += 1
	if typeof(answer) != TYPE_STRING or answer == "":
		return null
	return JSON.parse_string(answer)


func _stop(why: String):
	connected = false
	get_tree().paused = false
	print(why)
	print("SPEED ", JSON.stringify({"exchanges": exchanges, "exchange_s": exchange_usec / 1e6, "ticks": ticks,
		"s": (Time.get_ticks_usec() - first_usec) / 1e6}))
	print("DONE")


func _read_args() -> Dictionary:
	var found := {}
	for argument in OS.get_cmdline_args():
		var parts = argument.split("=", true, 1)
		found[parts[0].lstrip("-")] = parts[1] if parts.size() > 1 else ""
	return found
'''

SYNC_PATH = "addons/godot_rl_agents/sync.gd"
TRAIN_SCENE = "starter_learns_train.tscn"  # the benchmark's training scene, added to the pack
LEVEL_SCENE = "starter_learns_level.tscn"  # the starter's train.tscn without its Sync node, added to the pack
WINDOW = 100  # episodes in a running mean, and at the end of a run
CHECKPOINTS = (5_000, 10_000, 15_000, 20_000, 25_000, 50_000, 100_000, 200_000, 300_000, 500_000)  # in the tables
PREDICTED_SHARE, PREDICTED_BY, PREDICTED_GOAL = 0.9, 200_000, 0.95  # the docstring's prediction, in numbers
ZOOM = 40_000  # agent-steps in the figure's left panel
SPACING = 1000  # pixels between two copies of the level: the arena is 400 wide, so no two bodies ever touch


def controller_files():
    """{res path: text}: the plugin's addon as the suite stands it in (tests/godot4_plugin.py), with SYNC_GD at
    SYNC_PATH in place of its Sync node."""
    return {**godot4_plugin.addon_files(), SYNC_PATH: SYNC_GD}


def level_scene(train_scene):
    """The starter's train.tscn without its Sync node (the node whose script is sync.gd, and that script's
    ext_resource line): the level, one agent, to instance COPIES times; and whether Sync came before the level's
    nodes in train.tscn. The text is the starter's, line for line, but for those lines."""
    sections = re.split(r"\n+(?=\[)", train_scene.strip("\n"))
    sync_id = next(re.search(r'id="([^"]+)"', section)[1] for section in sections
                   if section.startswith("[ext_resource") and f'path="res://{SYNC_PATH}"' in section)
    nodes = [section for section in sections if section.startswith("[node ")]
    sync_node = next(section for section in nodes if f'script = ExtResource("{sync_id}")' in section)
    sync_first = nodes.index(sync_node) == 1  # right after the root
    kept = [section for section in sections if section is not sync_node
            and not (section.startswith("[ext_resource") and f'id="{sync_id}"' in section)]
    return "\n\n".join(kept) + "\n", sync_first


def training_scene(level, copies, spacing, sync_first):
    """COPIES instances of the level scene (res path) on a grid, spacing pixels apart, and the Sync node before
    them or after them."""
    columns = int(np.ceil(np.sqrt(copies)))
    nodes = [f'[node name="Level{i}" parent="." instance=ExtResource("level")]\n'
             f"position = Vector2({spacing * (i % columns)}, {spacing * (i // columns)})\n" for i in range(copies)]
    sync = '[node name="Sync" type="Node" parent="."]\nscript = ExtResource("sync")\n'
    nodes = [sync, *nodes] if sync_first else [*nodes, sync]
    return (f'[gd_scene load_steps=3 format=3]\n\n[ext_resource type="PackedScene" path="res://{level}" id="level"]\n'
            f'[ext_resource type="Script" path="res://{SYNC_PATH}" id="sync"]\n\n'
            '[node name="StarterLearns" type="Node2D"]\n\n' + "\n".join(nodes))


def game_files(project, copies, spacing=SPACING):
    """What the pack holds: the project's files as they are (an addons/ of its own left out: the stand-ins take
    its place), the stand-ins, the level (train.tscn without its Sync node), the training scene (COPIES levels
    and the stand-in Sync), and project.godot with run/main_scene pointing at that scene, the one line changed
    (the web template takes no scene on its command line)."""
    project = Path(project)
    files = {str(path.relative_to(project)): path.read_text() for path in sorted(project.rglob("*"))
             if path.is_file() and path.relative_to(project).parts[0] not in ("addons", ".godot")}
    files.update(controller_files())
    main_scene = re.search(r'^run/main_scene="res://(.*)"$', files["project.godot"], flags=re.M)
    files[LEVEL_SCENE], sync_first = level_scene(files[main_scene[1]])
    files["project.godot"] = files["project.godot"].replace(main_scene[0], f'run/main_scene="res://{TRAIN_SCENE}"')
    files[TRAIN_SCENE] = training_scene(LEVEL_SCENE, copies, spacing, sync_first)
    files[".godot/global_script_class_cache.cfg"] = godot4_plugin.class_cache(files)
    return files


class Tally:
    """What the relay reads in the game's messages: every episode's end (agent-steps so far, return, length in
    actions, whether info said TimeLimit.truncated), the agent-steps, and the time spent waiting for the trainer."""

    def __init__(self):
        self.n_agents, self.agent_steps, self.episodes = None, 0, []
        self.returns = self.lengths = None
        self.exchanges, self.trainer_s, self.first, self.last = 0, 0.0, None, None

    def read(self, message):
        kind = message.get("type")
        if kind == "env_info":
            self.n_agents = message["n_agents"]
            self.returns, self.lengths = np.zeros(self.n_agents), np.zeros(self.n_agents, dtype=int)
        elif kind == "step":
            self.agent_steps += self.n_agents
            self.returns += message["reward"]
            self.lengths += 1
            for i, done in enumerate(message["done"]):
                if done:
                    truncated = bool(message["info"][i].get("TimeLimit.truncated", False))
                    self.episodes.append((self.agent_steps, float(self.returns[i]), int(self.lengths[i]), truncated))
                    self.returns[i], self.lengths[i] = 0.0, 0


class TcpTrainer:
    """The trainer's side through its TCP port, as the plugin's game would connect to it."""

    def __init__(self, port, timeout=120):
        self.port, self.timeout, self.connection = port, timeout, None

    def exchange(self, messages):
        """Writes the game's messages (JSON texts), returns the trainer's next one (b"" once it has closed)."""
        if self.connection is None:
            self.connection = socket.create_connection(("127.0.0.1", self.port), timeout=self.timeout)
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for message in messages:
            self.connection.sendall(len(message).to_bytes(4, "little") + message)
        length = self.receive(4)
        return self.receive(int.from_bytes(length, "little")) if length else b""

    def receive(self, n):
        data = b""
        while len(data) < n:
            chunk = self.connection.recv(n - len(data))
            if not chunk:
                return b""
            data += chunk
        return data

    def close(self):
        if self.connection is not None:
            self.connection.close()


class PolicyTrainer:
    """Python's side of the protocol played here, for the baselines: handshake, env_info, reset, then the policy's
    actions until agent_steps have been played, then close. policy(obs of one agent, action space) -> action."""

    def __init__(self, policy, agent_steps, seed):
        self.policy, self.budget, self.rng = policy, agent_steps, np.random.default_rng(seed)
        self.said, self.action_space, self.steps = 0, None, 0

    def exchange(self, messages):
        for message in map(json.loads, messages):
            if message["type"] == "env_info":
                self.action_space = message["action_space"]
            elif message["type"] in ("reset", "step"):
                if message["type"] == "step":
                    self.steps += len(message["done"])
                if self.steps >= self.budget:
                    return json.dumps({"type": "close"}).encode()
                actions = [self.policy(obs, space, self.rng) for obs, space in zip(message["obs"], self.action_space)]
                return json.dumps({"type": "action", "action": actions}).encode()
        opening = [{"type": "handshake", "major_version": "0", "minor_version": "7"}, {"type": "env_info"},
                   {"type": "reset"}]
        self.said += 1
        return json.dumps(opening[self.said - 1]).encode()

    def close(self):
        pass


def random_policy(obs, space, rng):
    """Uniform over the declared actions: each discrete one's choices, each continuous one's [-1, 1]."""
    return {name: int(rng.integers(head["size"])) if head["action_type"] == "discrete"
            else rng.uniform(-1, 1, head["size"]).tolist() for name, head in space.items()}


# The starter's move action (ai_controller.gd's DIRECTIONS): 0 stay, 1 up (-y), 2 down (+y), 3 left (-x), 4 right
UP, DOWN, LEFT, RIGHT = 1, 2, 3, 4


def scripted_policy(obs, space, rng):
    """Straight for the goal along the longer axis of the vector to it (obs[0:2], the starter's first two numbers)."""
    dx, dy = obs["obs"][:2]
    return {"move": (RIGHT if dx > 0 else LEFT) if abs(dx) >= abs(dy) else (DOWN if dy > 0 else UP)}


class Relay:
    """The /sync endpoint: each request's body holds the game's messages (one JSON text a line, maybe none), the
    answer is the trainer's next message; b"" once the trainer is gone (the stand-in Sync node then stops)."""

    def __init__(self, trainer):
        self.trainer, self.tally, self.error = trainer, Tally(), None

    def exchange(self, body):
        messages = [line.encode() for line in body.decode().split("\n") if line]
        for message in messages:
            self.tally.read(json.loads(message))
        started = time.monotonic()
        self.tally.first = self.tally.first or started
        try:
            answer = self.trainer.exchange(messages)
        except OSError as error:
            self.error, answer = error, b""
        self.tally.last = time.monotonic()
        self.tally.trainer_s += self.tally.last - started
        self.tally.exchanges += 1
        return answer


class RelayHandler(web.Folder):
    """godot/play_in_browser.py's server (the folder, the page's console lines) with the relay at /sync."""

    def do_POST(self):
        if self.path != "/sync":
            return super().do_POST()
        answer = self.server.relay.exchange(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


def ends(kind, text):
    """The page runner stops at DONE or at the page's exit line: the engine's exit code, or "the engine did not
    start" (web.page keeps a headless canvas from resizing, which trapped some packs here: tests/godot4_web.py)."""
    return (kind == "print" and text == DONE) or kind == "exit"


def play(files, game_args, trainer, timeout, log=None, gone=lambda: False):
    """Runs the pack in headless Chromium with the relay to trainer until the Sync node prints DONE; returns
    (the relay, the page's lines). Also stops once gone() (asked every second) is true: a trainer that exited."""
    relay, servers = Relay(trainer), []

    def watch():
        while not servers or not servers[0].done.is_set():
            if servers and gone():
                servers[0].lines.append(("trainer", "gone"))
                servers[0].done.set()
            time.sleep(1)

    def start_server(folder, port=0, ends=lambda kind, text: False):  # web.start_server, with the relay
        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), lambda *a: RelayHandler(*a, directory=str(folder)))
        server.lines, server.done, server.ends, server.relay = [], threading.Event(), ends, relay
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server

    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        for name in web.ENGINE:
            os.symlink(TEMPLATE / name, folder / name)
        web.write_pack(files, folder / "game.pck")
        (folder / "index.html").write_text(web.page(["--headless", *game_args]))
        original, web.start_server = web.start_server, start_server  # the page runner, serving the relay too
        threading.Thread(target=watch, daemon=True).start()
        try:
            lines = web.run_page(folder, ends, timeout)
        finally:
            web.start_server = original
            trainer.close()
    if log:
        Path(log).write_text("".join(f"{kind}: {text}\n" for kind, text in lines))
    return relay, lines


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def train(files, seed, args, folder):
    """One ppo_godot.py run on the pack through the relay: ppo_godot.py without --env-path listens on a port, as
    for the editor, and the relay connects there. Returns the run's numbers."""
    folder.mkdir(parents=True)
    port = free_port()
    command = [sys.executable, str(REPO / "ppo_godot.py"), "--port", str(port), "--seed", str(seed),
               "--total-timesteps", str(args.total_timesteps), "--log-dir", str(folder / "runs"),
               "--connect-timeout", "180", *args.ppo_args.split()]
    with open(folder / "train.log", "w") as log:
        trainer = subprocess.Popen(command, cwd=folder, stdout=log, stderr=subprocess.STDOUT)
    try:
        while "waiting up to" not in (folder / "train.log").read_text():  # listening: the game may connect
            if trainer.poll() is not None:
                raise RuntimeError(f"ppo_godot.py exited {trainer.returncode}: {(folder / 'train.log').read_text()}")
            time.sleep(0.2)
        started = time.monotonic()
        relay, lines = play(files, [f"--speedup={args.speedup}", f"--env_seed={seed}"], TcpTrainer(port),
                            args.timeout, folder / "console.log", gone=lambda: trainer.poll() is not None)
        trainer.wait(timeout=120)
        wall = time.monotonic() - started
    finally:
        if trainer.poll() is None:
            trainer.kill()
            trainer.wait()
    if trainer.returncode != 0 or relay.error:
        raise RuntimeError(f"ppo_godot.py exited {trainer.returncode} (relay: {relay.error}); "
                           f"the game said {lines[-5:]}; see {folder}")
    run = read_run(next((folder / "runs").glob("*")))
    steps, returns = episode_curve(run)
    lengths = np.array([event.value for event in run.Scalars("charts/episodic_length")])
    numbers = relay_numbers(relay, lines)
    episodes, n_agents = numbers["episodes"], numbers["n_agents"]
    began, began_returns = by_start(steps, lengths, n_agents, returns)
    _, began_goal = by_start(episodes[:, 0], episodes[:, 2], n_agents, 1 - episodes[:, 3])
    return dict(steps=steps, returns=returns, began=began, began_returns=began_returns, began_goal=began_goal,
                sps=run.Scalars("charts/SPS")[-1].value, wall=wall, **numbers)


def by_start(ends, lengths, n_agents, *values):
    """Episodes put where they began (the agent-steps before their first action), in that order: [starts, *values].
    TensorBoard logs an episode where it ended, and the first to end are the short ones (here, those that reached the
    goal), so a curve by the end starts far above the policy's return. By the start, every episode that began
    before the run's last (longest episode) agent-steps has ended and counts; the later ones are left out."""
    began = ends - lengths * n_agents
    complete = began <= ends.max() - lengths.max() * n_agents
    order = np.argsort(began[complete], kind="stable")
    return [began[complete][order]] + [np.asarray(v)[complete][order] for v in values]


def relay_numbers(relay, lines):
    """What the relay and the Sync node measured: episodes (agent-steps at the end, return, length, timed out),
    agent-steps and exchanges a second over the game's span, the share of it spent waiting for the trainer."""
    tally = relay.tally
    span = tally.last - tally.first
    speed = next(json.loads(text.split(" ", 1)[1]) for kind, text in lines if text.startswith("SPEED "))
    return dict(episodes=np.array(tally.episodes, dtype=float).reshape(-1, 4), agent_steps=tally.agent_steps,
                n_agents=tally.n_agents, span=span, relay_sps=tally.agent_steps / span,
                trainer_share=tally.trainer_s / span, ticks_per_s=speed["ticks"] / speed["s"],
                exchange_ms=1000 * speed["exchange_s"] / speed["exchanges"],
                exchanges_per_s=speed["exchanges"] / speed["s"],
                exchange_share=speed["exchange_s"] / speed["s"])


def baseline(files, policy, args, setting=None, agent_steps=None):
    """A policy played here (PolicyTrainer) through the same relay and pack, for args.baseline_steps agent-steps;
    setting: (speed_up, physics ticks a frame at most), default (args.speedup, speed_up)."""
    speedup, per_frame = setting or (args.speedup, max(8, args.speedup))
    relay, lines = play(files, [f"--speedup={speedup}", f"--max_physics_steps_per_frame={per_frame}", "--env_seed=1"],
                        PolicyTrainer(policy, agent_steps or args.baseline_steps, seed=0), args.timeout)
    if relay.error or not any(text == DONE for _, text in lines):
        raise RuntimeError(f"the baseline did not finish (relay: {relay.error}): {lines[-5:]}")
    return relay_numbers(relay, lines)


def last(episodes, n=WINDOW):
    """(mean return, share that reached the goal, mean length in actions) of the last n episodes."""
    tail = episodes[-n:]
    return tail[:, 1].mean(), 1 - tail[:, 3].mean(), tail[:, 2].mean()


def mean_before(steps, returns, at, n=WINDOW):
    """The mean return of the last n episodes by `at` agent-steps (steps: where each began, or ended, in order)."""
    ended = returns[steps <= at]
    return float(ended[-n:].mean()) if len(ended) >= n else None


def first_reach(steps, returns, threshold, n=WINDOW):
    """The agent-steps (steps: where each episode began, or ended, in order) at which the mean of the last n
    episodes first reaches threshold, or None."""
    for i in range(n - 1, len(returns)):
        if returns[i - n + 1:i + 1].mean() >= threshold:
            return int(steps[i])
    return None


def fmt_steps(steps):
    return "never" if steps is None else f"{steps:,}"


def report(args, command, baselines, sweep, runs):
    scripted, randomly = (last(baselines[name]["episodes"], len(baselines[name]["episodes"]))
                          for name in ("scripted", "random"))
    target = PREDICTED_SHARE * scripted[0]
    lines = [f"Command: `{command}` ({time.strftime('%Y-%m-%d')}; ppo_godot.py's defaults, no flag changed but "
             f"--seed, --total-timesteps, --port, --log-dir and --connect-timeout; {args.copies} copies of the "
             f"starter's level, one agent each; the page's --speedup={args.speedup}; Godot 4.6's web template in "
             f"headless Chromium, 2 cores shared with other work)", "",
             "What is stood in, and what that may change: the game is godot/starter's files as they are, but for "
             "three things in the pack. (1) The Sync node is SYNC_GD (benchmarks/starter_learns.py), which does what "
             "the plugin's sync.gd does in training mode, in its order, but talks to ppo_godot.py through a "
             "synchronous HTTP request per exchange and a relay, instead of a TCP socket; the messages ppo_godot.py "
             "reads and writes are the plugin's. (2) The AIController2D is tests/godot4_plugin.py's stand-in, "
             "written from the plugin's API. (3) The engine is Godot 4.6's official web template in headless "
             "Chromium, not a native export; its physics is the same engine's, and it runs at most one frame per "
             "browser animation frame (about 60 a second), so the stand-in lets a frame hold speed_up physics "
             "ticks (Engine.max_physics_steps_per_frame), which the plugin leaves at 8. Each physics tick is 1/60 s "
             "of game time at any speed_up. These change the speed (agent-steps a second, set here by the exchanges' "
             "cost), not the messages, so not what is learned from them. The level, train.tscn without its Sync "
             f"node, runs {args.copies} times side by side, 1,000 px apart (the arena is 400): one agent each. The "
             "starter draws its episodes from Godot's global random numbers, which the Sync stand-in seeds with "
             "--env_seed, as the plugin's Sync node does.", "",
             "Baselines, played through the same relay and pack (every episode they finished):", "",
             "| policy | episodes | mean return | reached the goal | timed out | mean length (actions) | "
             "agent-steps/s (the bridge, no learning) |", "|---|---|---|---|---|---|---|"]
    for name, numbers in baselines.items():
        ret, goal, length = last(numbers["episodes"], len(numbers["episodes"]))
        lines.append(f"| {name} | {len(numbers['episodes']):,} | {ret:.3f} | {goal:.1%} | {1 - goal:.1%} | "
                     f"{length:.1f} | {numbers['relay_sps']:,.0f} |")
    lines += ["", f"The bridge's speed at each speed_up (the page's --speedup; the Sync stand-in sets physics_ticks_per_second "
              "to 60 x speed_up, as the plugin does, and Engine.max_physics_steps_per_frame to speed_up, at least "
              f"Godot's default 8, or as the row says), the random policy for {args.sweep_steps:,} agent-steps, no learning, "
              f"{args.sweep_repeats} times each, the settings interleaved; median (min to max):", "",
              "| speed_up | physics ticks a frame at most | physics ticks/s | exchanges/s | one exchange (ms) | "
              "agent-steps/s |", "|---|---|---|---|---|---|"]
    for (speedup, per_frame), measured in sweep.items():
        cells = []
        for key, digits in (("ticks_per_s", 0), ("exchanges_per_s", 0), ("exchange_ms", 1), ("relay_sps", 0)):
            values = [numbers[key] for numbers in measured]
            cells.append(f"{np.median(values):,.{digits}f} ({min(values):,.{digits}f} to {max(values):,.{digits}f})")
        lines.append(f"| {speedup} | {per_frame}{' (the plugin leaves it at 8)' if per_frame == 8 < speedup else ''} | "
                     + " | ".join(cells) + " |")
    lines += ["", f"Training, seed by seed (the last {WINDOW} episodes; \"of scripted\": their mean return over the "
              "scripted policy's):", "",
              "| seed | agent-steps | wall (min) | agent-steps/s (ppo_godot.py's SPS) | "
              f"last {WINDOW} episodes | of scripted | reached the goal | mean length (actions) | "
              f"first reaches {PREDICTED_SHARE:.0%} of scripted at: episodes by their start (by their end, as "
              "TensorBoard draws them) | episodes (relay = TensorBoard) |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for seed, run in runs.items():
        ret, goal, length = last(run["episodes"])
        reach = first_reach(run["began"], run["began_returns"], target)
        reach_end = first_reach(run["steps"], run["returns"], target)
        agree = len(run["episodes"]) == len(run["returns"]) and np.allclose(run["episodes"][:, 1], run["returns"],
                                                                             atol=1e-4)
        lines.append(f"| {seed} | {run['agent_steps']:,} | {run['wall'] / 60:.1f} | {run['sps']:,.0f} | "
                     f"{ret:.3f} | {ret / scripted[0]:.0%} | {goal:.1%} | "
                     f"{length:.1f} | {fmt_steps(reach)} ({fmt_steps(reach_end)}) | "
                     f"{len(run['returns']):,} ({'yes' if agree else 'NO'}) |")
    marks = [m for m in CHECKPOINTS if m <= args.total_timesteps]
    lines += ["", f"The mean return of the last {WINDOW} episodes that began by each count of agent-steps (mean over "
              "seeds, min to max), the share of them that reached the goal (mean over seeds), and, as TensorBoard "
              f"draws it, the mean return of the last {WINDOW} that ended by then (mean over seeds; -: fewer than "
              f"{WINDOW} had):", "",
              "| agent-steps | " + " | ".join(f"{m:,}" for m in marks) + " |", "|---|" + "---|" * len(marks)]
    cells, goals, ended = [], [], []
    for m in marks:
        values = [mean_before(run["began"], run["began_returns"], m) for run in runs.values()]
        shares = [mean_before(run["began"], run["began_goal"], m) for run in runs.values()]
        by_end = [mean_before(run["steps"], run["returns"], m) for run in runs.values()]
        cells.append("-" if None in values else f"{np.mean(values):.3f} ({min(values):.3f} to {max(values):.3f})")
        goals.append("-" if None in shares else f"{np.mean(shares):.0%}")
        ended.append("-" if None in by_end else f"{np.mean(by_end):.3f}")
    lines += ["| return (episodes by their start) | " + " | ".join(cells) + " |",
              "| reached the goal (by their start) | " + " | ".join(goals) + " |",
              "| return (by their end, TensorBoard's) | " + " | ".join(ended) + " |"]
    speed = {key: np.median([run[key] for run in runs.values()])
             for key in ("relay_sps", "ticks_per_s", "exchange_ms", "exchange_share", "trainer_share")}
    lines += ["", f"Speed in training (medians over seeds): {speed['relay_sps']:,.0f} agent-steps/s at the relay "
              f"(the game's span, first exchange to last), {speed['ticks_per_s']:,.0f} physics ticks/s; an exchange "
              f"(one synchronous request, its answer included) takes {speed['exchange_ms']:.1f} ms and the exchanges "
              f"{speed['exchange_share']:.0%} of the game's time; the relay waits for ppo_godot.py "
              f"{speed['trainer_share']:.0%} of it (its inference and updates).", "",
              f"The prediction, written before the first run (in the docstring of benchmarks/starter_learns.py): the "
              f"mean return of the last {WINDOW} episodes reaches {PREDICTED_SHARE:.0%} of the scripted policy's "
              f"({target:.3f}) by {PREDICTED_BY:,} agent-steps on every seed, and at the end of the budget at least "
              f"{PREDICTED_GOAL:.0%} of the last {WINDOW} episodes reach the goal:"]
    for seed, run in runs.items():
        reaches = [first_reach(run["began"], run["began_returns"], target), first_reach(run["steps"], run["returns"], target)]
        goal = last(run["episodes"])[1]
        met = all(reach is not None and reach <= PREDICTED_BY for reach in reaches)
        lines.append(f"- seed {seed}: at {fmt_steps(reaches[0])} agent-steps by the episodes' start, "
                     f"{fmt_steps(reaches[1])} by their end ({'met' if met else 'missed'}); the goal in "
                     f"{goal:.1%} of the last {WINDOW} ({'met' if goal >= PREDICTED_GOAL else 'missed'})")
    lines.append(f"\nRandom policy: {randomly[0]:.3f} per episode, the goal in {randomly[1]:.1%}; scripted "
                 f"{scripted[0]:.3f}, the goal in {scripted[1]:.1%}.")
    return lines


def draw_runs(ax, runs, end, label):
    """The mean over seeds of each seed's running mean of its last WINDOW episodes, by where they began, up to end
    agent-steps, and the min-max band over seeds."""
    grid = np.linspace(0, min(end, *(run["began"].max() for run in runs.values())), 300)
    values = np.stack([np.interp(grid, run["began"], running_mean(run["began_returns"], WINDOW))
                       for run in runs.values()])
    line, = ax.plot(grid, values.mean(axis=0), label=label)
    ax.fill_between(grid, values.min(axis=0), values.max(axis=0), color=line.get_color(), alpha=0.2)


def figure(args, command, baselines, runs):
    """Return against the agent-steps at which each episode began (by_start), the first ZOOM agent-steps and the
    whole run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9.6, 4.0), sharey=True)
    for ax, end, title in ((axes[0], ZOOM, f"the first {ZOOM:,} agent-steps"), (axes[1], np.inf, "the whole run")):
        draw_runs(ax, runs, end, f"ppo_godot.py, {args.copies} agents ({len(runs)} seeds)")
        for name, style in (("scripted", "--"), ("random", ":")):
            episodes = baselines[name]["episodes"]
            ax.axhline(episodes[:, 1].mean(), color="gray", linestyle=style, linewidth=1.2,
                       label=f"{name} policy ({episodes[:, 1].mean():.2f})")
        ax.set_xlabel("agent-steps, where each episode began")
        ax.ticklabel_format(axis="x", style="sci", scilimits=(3, 3))
        ax.grid(alpha=0.3)
        ax.set_title(title, fontsize=9)
    axes[0].set_ylabel(f"episodic return\n(mean of the last {WINDOW} episodes)")
    axes[1].legend(fontsize=8, loc="center right")
    fig.suptitle("The Godot 4 starter (godot/starter) trained by ppo_godot.py on Godot 4.6's web build\n"
                 "line: mean over seeds; band: min-max over seeds", fontsize=9)
    save_figure(fig, REPO / "docs" / "images" / "starter_learns.png", command)


def sweep_setting(text):
    """"64" -> (64, 64), "64:8" -> (64, 8), "1" -> (1, 8): (speed_up, physics ticks a frame at most)."""
    speedup, _, per_frame = text.partition(":")
    return int(speedup), int(per_frame or max(8, int(speedup)))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=3, help="ppo_godot.py runs, seeds 1..N, one at a time")
    p.add_argument("--total-timesteps", type=int, default=300_000, help="agent-steps per run")
    p.add_argument("--copies", type=int, default=32, help="copies of the level in the training scene: its agents")
    p.add_argument("--speedup", type=int, default=256,
                   help="the Sync node's speed_up (the page's --speedup): physics ticks per 1/60 s, and per frame")
    p.add_argument("--baseline-steps", type=int, default=64_000, help="agent-steps each baseline plays")
    p.add_argument("--sweep", type=sweep_setting, nargs="*", default=[(1, 8), (8, 8), (64, 8), (64, 64), (256, 256)],
                   help="settings at which the random policy's speed is measured first: speed_up, or speed_up:N with "
                        "at most N physics ticks a frame (else speed_up, at least 8)")
    p.add_argument("--sweep-steps", type=int, default=8192, help="agent-steps at each of them")
    p.add_argument("--sweep-repeats", type=int, default=3, help="measurements at each of them, interleaved")
    p.add_argument("--ppo-args", default="", help="more flags for ppo_godot.py")
    p.add_argument("--timeout", type=float, default=3600, help="seconds one run may take")
    p.add_argument("--workdir", default=None, help="where the runs go (default: a new folder in /tmp)")
    p.add_argument("--out", default="starter_learns", help="results/<out>.md")
    p.add_argument("--figure", default=True, type=lambda v: v.lower() != "false", help="false: no figure")
    args = p.parse_args()
    if args.seeds < 1:
        p.error("--seeds must be at least 1")
    lacking = [name for name in web.ENGINE if not (TEMPLATE / name).is_file()]
    if lacking or not os.access(web.CHROMIUM, os.X_OK):
        sys.exit(f"needs Debian's Chromium and the Godot 4.6 web template ({', '.join(lacking) or 'there'}): "
                 "python godot/play_in_browser.py --fetch-template")
    command = "python benchmarks/starter_learns.py " + " ".join(sys.argv[1:])
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="starter_learns-"))
    files = game_files(STARTER, args.copies)
    baselines = {}
    for name, policy in (("random", random_policy), ("scripted", scripted_policy)):
        baselines[name] = baseline(files, policy, args)
        ret, goal, length = last(baselines[name]["episodes"], len(baselines[name]["episodes"]))
        print(f"{name}: {ret:.3f} per episode, the goal in {goal:.1%}, {length:.1f} actions, "
              f"{baselines[name]['relay_sps']:,.0f} agent-steps/s", flush=True)
    sweep = {setting: [] for setting in args.sweep}
    for _ in range(args.sweep_repeats):  # the random policy's speed at each setting, the settings interleaved
        for setting in args.sweep:
            sweep[setting].append(baseline(files, random_policy, args, setting, agent_steps=args.sweep_steps))
            print(f"speed_up {setting[0]}, at most {setting[1]} ticks a frame: "
                  f"{sweep[setting][-1]['ticks_per_s']:,.0f} ticks/s, {sweep[setting][-1]['relay_sps']:,.0f} "
                  "agent-steps/s", flush=True)
    runs = {}
    for seed in range(1, args.seeds + 1):
        runs[seed] = train(files, seed, args, workdir / f"seed{seed}")
        ret, goal, length = last(runs[seed]["episodes"])
        print(f"seed {seed}: the last {WINDOW} episodes {ret:.3f}, the goal in {goal:.1%}; "
              f"{runs[seed]['sps']:,.0f} agent-steps/s, {runs[seed]['wall'] / 60:.1f} min", flush=True)
    write_table(args.out, report(args, command, baselines, sweep, runs))
    if args.figure:
        figure(args, command, baselines, runs)


if __name__ == "__main__":
    main()
