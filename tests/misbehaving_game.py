"""A game that misbehaves while it connects, for tests/test_ppo_godot.py. Started like a game:

    python tests/misbehaving_game.py BEHAVIOUR --port=N [the rest of a game's command line]

BEHAVIOUR: never-connect; exit-at-once (code 3); freeze (connects, then never answers);
exit-after-request (connects, reads the handshake and the env_info request, exits 0);
unlike-agents (sends the spaces of two agents that observe differently, then waits); reset
(connects, then resets the connection: an abrupt exit, code 1)."""
import json
import socket
import struct
import sys
import time


def read_requests():
    """The handshake, then the env_info request: 4-byte little-endian length, then JSON."""
    for _ in range(2):
        length = int.from_bytes(connection.recv(4, socket.MSG_WAITALL), "little")
        connection.recv(length, socket.MSG_WAITALL)


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
elif behaviour == "reset":
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    connection.close()  # with a zero linger time, close sends RST: the peer sees a connection reset
    sys.exit(1)
