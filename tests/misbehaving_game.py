"""A game that misbehaves while it connects, or plays an edge case, for tests/test_ppo_godot.py.
Started like a game:

    python tests/misbehaving_game.py BEHAVIOUR --port=N [the rest of a game's command line]

BEHAVIOUR: never-connect; exit-at-once (code 3); freeze (connects, then never answers);
exit-after-request (connects, reads the handshake and the env_info request, exits 0);
unlike-agents (sends the spaces of two agents that observe differently, then waits); reset
(connects, then resets the connection: an abrupt exit, code 1); unknown-action-type (declares an
action of a type godot-rl does not know); undeclared-obs-key (observes a key its spaces do not
declare); obs-key-state-ins (observes a key named like an input the plugin gives an ONNX model
itself); done-every-step (two agents whose every action ends an episode, reset on the spot like
the official plugin: reward 1, info {}, the observation already the next episode's);
obs-wrong-length (declares 2 floats, sends 3); camera-wrong-size (declares the camera camera_2d
[3, 36, 36], sends 100 bytes); camera-not-hex (sends that camera as a list of floats, as a game in
the plugin's ONNX mode does); camera-blank (sends it, every pixel black); camera-flat (declares
camera_2d with the shape [3888]); camera-small (declares it [3, 24, 36]); dotted-policy-name (its
agents' policy name is "team.a"); obs-and-more (declares obs [4] beside speed [1], which the plugin's
demonstrations cannot hold). Two that play well: camera-and-vector (camera_2d [3, 36, 36] of
random pixels beside position [0.25, -0.5]); rgba-camera (camera_2d [4, 36, 36], RGBA, as the
plugin's camera sensor sends a viewport with a transparent background); terminal-obs (two agents, obs [2],
every action a time-out reset on the spot, each sending its final observation as the plugin's "Send Terminal
Obs Info" does: info terminal_observation and TimeLimit.truncated), and terminal-obs-missing-key,
terminal-obs-wrong-size, terminal-obs-not-numbers (the same, but from the 21st step on agent 1's
terminal_observation lacks obs, holds 3 numbers, or holds strings); duel (two policies, "left"
and "right", 2 agents each, agent i facing agent i + 2: each observes [its episode's share done, its
opponent's last action] and takes a discrete action of 2; left gets +1 when the two are equal, right
when they differ, -1 otherwise; every episode lasts 16 steps and is reset on the spot, as the
plugin does, so that with --num-steps 16 a resumed run's new episodes are those it would have played)."""
import json
import random
import socket
import struct
import sys
import time


def receive():
    """One message: a 4-byte little-endian length, then JSON."""
    length = int.from_bytes(connection.recv(4, socket.MSG_WAITALL), "little")
    return json.loads(connection.recv(length, socket.MSG_WAITALL))


def send(message):
    data = json.dumps(message).encode()
    connection.sendall(len(data).to_bytes(4, "little") + data)


def read_requests():
    """The handshake, then the env_info request."""
    for _ in range(2):
        receive()


def play(obs_key, declared_key="obs", n_agents=2, size=(2,), value=lambda: [random.uniform(-1, 1) for _ in range(2)],
         policy_name="shared"):
    """Sends the spaces of n_agents of policy_name that declare an observation [declared_key] of this size
    and one discrete action, then answers reset and action messages until close, observing [obs_key]
    (value()): every action ends an episode."""
    play_keys({declared_key: size}, lambda: {obs_key: value()}, n_agents, policy_name)


def play_keys(declared, observe, n_agents=2, policy_name="shared"):
    """play(), with the observation keys declared {key: size} and each agent observing observe()."""
    read_requests()
    send({"type": "env_info", "n_agents": n_agents, "agent_policy_names": [policy_name] * n_agents,
          "observation_space": {key: {"space": "box", "size": list(size)} for key, size in declared.items()},
          "action_space": {"move": {"action_type": "discrete", "size": 2}}})
    while (message := receive())["type"] != "close":
        obs = [observe() for _ in range(n_agents)]
        if message["type"] == "reset":
            send({"type": "reset", "obs": obs, "info": [{}] * n_agents})
        else:
            send({"type": "step", "obs": obs, "reward": [1.0] * n_agents, "done": [True] * n_agents,
                  "info": [{}] * n_agents})


def terminal_obs(bad=None):
    read_requests()
    send({"type": "env_info", "n_agents": 2, "agent_policy_names": ["shared"] * 2,
          "observation_space": {"obs": {"space": "box", "size": [2]}},
          "action_space": {"move": {"action_type": "discrete", "size": 2}}})
    step = 0
    while (message := receive())["type"] != "close":
        obs = [{"obs": [random.uniform(-1, 1), random.uniform(-1, 1)]} for _ in range(2)]
        if message["type"] == "reset":
            send({"type": "reset", "obs": obs, "info": [{}] * 2})
            continue
        step += 1
        final = [{"obs": [random.uniform(-1, 1), random.uniform(-1, 1)]} for _ in range(2)]
        if bad and step > 20:
            final[1] = {"missing-key": {}, "wrong-size": {"obs": [0.5, 0.5, 0.5]},
                        "not-numbers": {"obs": ["0.5", "0.5"]}}[bad]
        send({"type": "step", "obs": obs, "reward": [1.0] * 2, "done": [True] * 2,
              "info": [{"terminal_observation": final[i], "TimeLimit.truncated": True} for i in range(2)]})


def duel(length=16):
    read_requests()
    space = {"obs": {"space": "box", "size": [2]}}
    send({"type": "env_info", "n_agents": 4, "agent_policy_names": ["left", "left", "right", "right"],
          "observation_space": space, "action_space": {"move": {"action_type": "discrete", "size": 2}}})
    t, actions = 0, [0, 0, 0, 0]
    while (message := receive())["type"] != "close":
        if message["type"] == "reset":
            t, actions = 0, [0, 0, 0, 0]
            reward, done = None, None
        else:
            actions, t = [int(action["move"]) for action in message["action"]], t + 1
            same = [1.0 if actions[i] == actions[i + 2] else -1.0 for i in range(2)]
            reward, done = same + [-r for r in same], [t == length] * 4
            if t == length:  # on the spot: the observation sent with done is the next episode's first
                t, actions = 0, [0, 0, 0, 0]
        opponents = actions[2:] + actions[:2]
        obs = [{"obs": [t / length, float(opponent)]} for opponent in opponents]
        if reward is None:
            send({"type": "reset", "obs": obs, "info": [{}] * 4})
        else:
            send({"type": "step", "obs": obs, "reward": reward, "done": done, "info": [{}] * 4})


behaviour = sys.argv[1]
port = int(next(arg.split("=", 1)[1] for arg in sys.argv if arg.startswith("--port=")))
if behaviour == "never-connect":
    time.sleep(600)
elif behaviour == "exit-at-once":
    sys.exit(3)
connection = socket.create_connection(("127.0.0.1", port))
if behaviour == "freeze":
    time.sleep(600)
elif behaviour == "exit-after-request":
    read_requests()
    sys.exit(0)
elif behaviour == "unlike-agents":  # two agents whose observations differ in size
    read_requests()
    action = {"move": {"action_type": "discrete", "size": 5}}
    env_info = json.dumps({"type": "env_info", "n_agents": 2, "action_space": [action, action],
                           "observation_space": [{"obs": {"space": "box", "size": [4]}},
                                                 {"obs": {"space": "box", "size": [6]}}],
                           "agent_policy_names": ["shared", "shared"]}).encode()
    connection.sendall(len(env_info).to_bytes(4, "little") + env_info)
    time.sleep(600)
elif behaviour == "unknown-action-type":
    read_requests()
    send({"type": "env_info", "n_agents": 1, "observation_space": {"obs": {"space": "box", "size": [2]}},
          "action_space": {"move": {"action_type": "analog", "size": 2}}})
    time.sleep(600)
elif behaviour == "undeclared-obs-key":
    play(obs_key="position")
elif behaviour == "obs-key-state-ins":
    play(obs_key="state_ins", declared_key="state_ins")
elif behaviour == "done-every-step":
    play(obs_key="obs")
elif behaviour == "dotted-policy-name":
    play(obs_key="obs", policy_name="team.a")
elif behaviour == "obs-wrong-length":
    play(obs_key="obs", value=lambda: [0.5, 0.5, 0.5])
elif behaviour == "camera-wrong-size":
    play(obs_key="camera_2d", declared_key="camera_2d", size=(3, 36, 36), value=lambda: "ff" * 100)
elif behaviour == "camera-not-hex":
    play(obs_key="camera_2d", declared_key="camera_2d", size=(3, 36, 36), value=lambda: [0.0] * 3888)
elif behaviour == "camera-blank":
    play(obs_key="camera_2d", declared_key="camera_2d", size=(3, 36, 36), value=lambda: "00" * 3888)
elif behaviour == "camera-small":
    play(obs_key="camera_2d", declared_key="camera_2d", size=(3, 24, 36), value=lambda: "00" * 2592)
elif behaviour == "camera-flat":
    play(obs_key="camera_2d", declared_key="camera_2d", size=(3888,), value=lambda: "00" * 3888)
elif behaviour == "camera-and-vector":
    play_keys({"camera_2d": (3, 36, 36), "position": (2,)},
              lambda: {"camera_2d": random.randbytes(3888).hex(), "position": [0.25, -0.5]})
elif behaviour == "obs-and-more":
    play_keys({"obs": (4,), "speed": (1,)}, lambda: {"obs": [0.1, 0.2, 0.3, 0.4], "speed": [0.5]})
elif behaviour == "rgba-camera":
    play_keys({"camera_2d": (4, 36, 36)}, lambda: {"camera_2d": random.randbytes(5184).hex()})
elif behaviour.startswith("terminal-obs"):
    terminal_obs(behaviour[len("terminal-obs-"):] or None)
elif behaviour == "duel":
    duel()
elif behaviour == "reset":
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    connection.close()  # with a zero linger time, close sends RST: the peer sees a connection reset
    sys.exit(1)
