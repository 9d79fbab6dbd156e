"""Issue 61's groundwork: the demo game's slow flag (--tick_cost_ms) changes nothing the game sends, and
benchmarks/godot_trainers.py's tiny mode runs every trainer and writes tables that read back."""
import os
import subprocess

import numpy as np

import ppo_godot
from conftest import CHASE, listening, needs_godot


def start_game(*flags):
    """The discrete demo game, started as a trainer starts it (seed 3, unpaced), connected and reset:
    (its process, the connection, its env_info, its reply to reset)."""
    needs_godot()
    with listening() as listener:
        port = listener.getsockname()[1]
        proc = subprocess.Popen([CHASE["discrete"], f"--port={port}", "--env_seed=3", "--fixed-fps", "60", *flags],
                                start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            connected = ppo_godot.GuardedGodotEnv(listener, proc, 30)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    connected._send_as_json({"type": "reset"})
    return proc, connected, connected.env_info, ppo_godot.await_reply(connected, 10)


def close_game(proc, connected):
    """The game told to close, and ended."""
    try:
        connected._send_as_json({"type": "close"})
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def cpu_seconds(pid):
    """User and system CPU-seconds of a running process, from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def play_messages(flags, actions):
    """Everything the game sends, as JSON, for the same seed and actions: env_info, the reply to reset,
    then the reply to each action message; and the CPU-seconds the game process spent stepping."""
    proc, connected, env_info, first = start_game(*flags)
    try:
        sent = [env_info, first]
        start = cpu_seconds(proc.pid)
        for step_actions in actions:
            connected._send_as_json({"type": "action", "action": step_actions})
            sent.append(ppo_godot.await_reply(connected, 10))
        return sent, cpu_seconds(proc.pid) - start
    finally:
        close_game(proc, connected)


def test_the_slow_flag_changes_nothing_the_game_sends_and_keeps_the_game_busy():
    rng = np.random.default_rng(0)
    # 120 steps of random moves: some of the 16 agents reach their target, others time out (100 actions)
    actions = [[{"move": int(m)} for m in rng.integers(0, 5, 16)] for _ in range(120)]
    fast, fast_cpu = play_messages([], actions)
    slow, slow_cpu = play_messages(["--tick_cost_ms=10"], actions)
    assert any(any(reply["done"]) for reply in fast[2:])  # the steps cover ends and resets
    assert any(info["truncated"] for reply in fast[2:] for info in reply["info"])
    assert slow == fast  # observations, rewards, dones and infos, value for value
    # 120 ticks busy for 10 ms each is 1.2 CPU-seconds on a free core; a quarter of that, however busy the
    # machine, is far more than the fast game's own stepping
    assert slow_cpu - fast_cpu > 0.3, (slow_cpu, fast_cpu)
