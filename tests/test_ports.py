"""Which TCP port each game listens on (issue 60). Without --port, each game of a run with --env-path
gets a free port that the system picks, on a socket that listens before the game starts: runs
started at the same moment never race for a port. A given --port that is taken is one line; the
editor (no --env-path) waits on 11008, where the plugin's Sync node connects."""
import errno
import socket
import subprocess
import sys
import types

import pytest

import ppo_godot
from conftest import CHASE, REPO, assert_one_line_error, free_port, game_pids, needs_godot, run_dirs, run_script

TINY = ["--num-steps", "64", "--total-timesteps", "2048"]  # 2 iterations of 64 steps: every agent's
# 100-step time-out ends an episode


def test_runs_started_together_each_get_free_ports_of_their_own(tmp_path):
    """Three runs started in the same second (two with two games each), none given --port: each game
    listens on its own free port, names it in its log's name, and every run plays and logs its episodes."""
    needs_godot()
    folders, procs = [tmp_path / f"run{i}" for i in range(3)], []
    for i, folder in enumerate(folders):
        folder.mkdir()
        procs.append(subprocess.Popen(
            [sys.executable, str(REPO / "ppo_godot.py"), "--env-path", CHASE["discrete"], "--num-steps", "64",
             "--total-timesteps", str(2048 * (2 - i % 2)), "--n-parallel", str(2 - i % 2), "--seed", str(i)],
            cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    try:
        outputs = [proc.communicate(timeout=300) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    logs = []
    for i, (folder, proc, (stdout, stderr)) in enumerate(zip(folders, procs, outputs)):
        assert proc.returncode == 0, f"run {i} exited {proc.returncode}: {stderr[-2000:]}"
        assert "Traceback" not in stderr
        assert "episodic_return=" in stdout, stdout[-2000:]
        (run_dir,) = run_dirs(folder)
        run_logs = sorted(path.name for path in run_dir.glob("game-*.log"))
        assert len(run_logs) == 2 - i % 2, run_logs
        assert all(f"runs/{run_dir.name}/{name}" in stdout for name in run_logs)  # the run names each port
        logs += run_logs
    assert len(set(logs)) == len(logs) == 5  # five games, five ports
    assert all(int(name[len("game-"):-len(".log")]) != 11008 for name in logs)


def test_a_run_saved_with_free_ports_resumes_on_free_ports(tmp_path):
    needs_godot()
    run_script("ppo_godot.py", "--env-path", CHASE["discrete"], *TINY, cwd=tmp_path)
    (run_dir,) = run_dirs(tmp_path)
    assert ppo_godot.load_checkpoint(str(run_dir / "ppo_godot.pt"))["args"]["port"] is None
    proc = run_script("ppo_godot.py", "--resume", str(run_dir / "ppo_godot.pt"), "--total-timesteps", "3072",
                      cwd=tmp_path)
    assert "Traceback" not in proc.stderr and "global_step=3072" in proc.stdout
    assert len(list(run_dir.glob("game-*.log"))) in (1, 2)  # the resumed game's port: free again, likely another


def test_a_given_port_that_is_taken_is_one_line(tmp_path):
    """--port P --n-parallel 2 with P + 1 held: one line naming P + 1, exit 2, and the game already
    started on P ended."""
    needs_godot()
    port = free_port(2)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port + 1))
        holder.listen()
        proc = run_script("ppo_godot.py", "--env-path", CHASE["discrete"], "--port", str(port), "--n-parallel", "2",
                          cwd=tmp_path, check=False, timeout=60)
    assert_one_line_error(proc, f"port {port + 1} is already in use")
    assert "pick another --port, or leave it out for free ones" in proc.stderr
    assert not game_pids(port)


def test_the_editor_waits_on_11008(tmp_path):
    """No --env-path: the trainer listens on 11008, the port the plugin's Sync node connects to."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", 11008))
        except OSError:
            pytest.skip("port 11008 is taken on this machine")
    proc = run_script("ppo_godot.py", "--connect-timeout", "1", cwd=tmp_path, check=False, timeout=60)
    assert "waiting up to 1 s on port 11008: press Play in the Godot editor" in proc.stdout
    assert_one_line_error(proc, "no game connected on port 11008 within 1 s")


class RecordingSocket:
    """A socket that records the options set on it and finds its port taken: connect() stops at the bind."""

    def __init__(self):
        self.options = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def setsockopt(self, level, option, value):
        self.options.append((level, option, value))

    def bind(self, address):
        raise OSError(errno.EADDRINUSE, "Address already in use")


@pytest.mark.parametrize("platform", ["linux", "win32"])
def test_a_given_port_is_bound_for_this_run_alone(platform, monkeypatch):
    """Linux and macOS: SO_REUSEADDR, with which a port another socket listens on is refused (and one whose last
    connection is closing is not). Windows' SO_REUSEADDR would let a second run bind the port too: there the
    option is SO_EXCLUSIVEADDRUSE, which only Windows' socket module has."""
    sockets = []
    module = types.SimpleNamespace(SOL_SOCKET=socket.SOL_SOCKET, SO_REUSEADDR=socket.SO_REUSEADDR,
                                   socket=lambda: sockets.append(RecordingSocket()) or sockets[-1])
    if platform == "win32":
        module.SO_EXCLUSIVEADDRUSE = ~socket.SO_REUSEADDR
    monkeypatch.setattr(ppo_godot, "socket", module)
    with pytest.raises(ppo_godot.GameError, match="port 5000 is already in use"):
        ppo_godot.connect(ppo_godot.parse_args(["--port", "5000"]), 5000, 1, [])
    option = ~socket.SO_REUSEADDR if platform == "win32" else socket.SO_REUSEADDR
    assert [s.options for s in sockets] == [[(socket.SOL_SOCKET, option, 1)]]


@pytest.mark.parametrize("script", ["ppo_godot_camera.py", "ppo_godot_lstm.py", "ppo_godot_multi_policy.py",
                                    "ppo_godot_self_play.py", "ppo_godot_bc.py", "scale/ppo_rllib_godot.py"])
def test_every_script_binds_a_games_port_as_ppo_godot_does(script):
    def option_lines(path):
        return [line.strip() for line in (REPO / path).read_text().splitlines() if "listener.setsockopt(" in line]
    assert option_lines(script) == option_lines("ppo_godot.py") and len(option_lines(script)) == 1


@pytest.mark.parametrize("argv, message", [
    (["--port", "0"], "--port must be 1 to 65535 (a TCP port for each of the 1 games), got 0"),
    (["--port", "65535", "--n-parallel", "2", "--env-path", CHASE["discrete"]], "--port must be 1 to 65534"),
    (["--port", "-5"], "--port must be 1 to 65535"),
])
def test_a_port_out_of_range_is_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as end:
        ppo_godot.parse_args(argv)
    assert end.value.code == 2
    assert message in capsys.readouterr().err
