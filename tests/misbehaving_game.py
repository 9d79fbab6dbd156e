"""A game that misbehaves while it connects, for tests/test_ppo_godot.py. Started like a game:

    python tests/misbehaving_game.py BEHAVIOUR --port=N [the rest of a game's command line]

BEHAVIOUR: never-connect; exit-at-once (code 3); freeze (connects, then never answers);
exit-after-request (connects, reads the handshake and the env_info request, exits 0); reset
(connects, then resets the connection: an abrupt exit, code 1)."""
import socket
import struct
import sys
import time

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
    for _ in range(2):  # the handshake, then the env_info request
        length = int.from_bytes(connection.recv(4, socket.MSG_WAITALL), "little")
        connection.recv(length, socket.MSG_WAITALL)
    sys.exit(0)
elif behaviour == "reset":
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    connection.close()  # with a zero linger time, close sends RST: the peer sees a connection reset
    sys.exit(1)
