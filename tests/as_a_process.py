"""Run a top-level script in a process of its own, as `python script.py ARGS` would, but forked from
a process that has already imported torch.

The suite runs the scripts as processes about two hundred times, most of them to read one error line
and an exit code, and `python script.py` spends about 3 CPU-seconds importing torch before it reads
its first flag. Here a server process (this file, run by the first test that needs it) imports what
every script imports, then forks once per run. The fork runs the script from its file as __main__,
with its own cwd, sys.argv, stdin (/dev/null), stdout, stderr, threads, atexit handlers and exit
code: SystemExit's code, or 1 and a traceback for an uncaught exception, or minus the signal that
killed it. What the imports printed (a warning) is printed again by every fork. A test of what only
a fresh interpreter does (a signal from a terminal) starts `python` itself.
"""
import atexit
import json
import os
import runpy
import select
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
import types
from pathlib import Path

# torch._dynamo: what the first torch.optim optimizer imports, 2-3 CPU-seconds more a run
PRELOAD = "import numpy, torch, torch.nn, torch.utils.tensorboard, gymnasium, cloudpickle, torch._dynamo"
_server, _lock = None, threading.Lock()


def run(script, argv, cwd, timeout, env=None):
    """What subprocess.run([python, script, *argv], cwd=cwd, capture_output=True, text=True,
    timeout=timeout, env=env) returns, or raises."""
    global _server
    args = [sys.executable, str(script), *argv]
    with _lock, tempfile.TemporaryDirectory() as folder:
        if _server is None or _server.poll() is not None:
            _server = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       bufsize=0)  # unbuffered: select() sees every reply
        out, err = Path(folder) / "stdout", Path(folder) / "stderr"
        request = {"script": str(script), "argv": [str(a) for a in argv], "cwd": str(cwd), "out": str(out),
                   "err": str(err), "env": dict(os.environ if env is None else env)}  # as subprocess.run passes it
        _server.stdin.write((json.dumps(request) + "\n").encode())
        pid = int(_server.stdout.readline())
        if not select.select([_server.stdout], [], [], timeout)[0]:
            os.kill(pid, signal.SIGKILL)
            _server.stdout.readline()
            raise subprocess.TimeoutExpired(args, timeout)
        returncode = int(_server.stdout.readline())
        return subprocess.CompletedProcess(args, returncode, out.read_text(errors="replace"),
                                           err.read_text(errors="replace"))


def run_command(command, cwd=None, env=None, **_):
    """subprocess.run(command, ...) as a benchmark or an experiment calls it, command [python, script, *argv]:
    the script forked; what it prints is returned, not written where stdout= says; a failed run raises."""
    proc = run(command[1], command[2:], cwd=cwd or os.getcwd(), timeout=600, env=env)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, command))} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return proc


# a stand-in for the subprocess module of a benchmark or an experiment: monkeypatch.setattr(module, "subprocess", ...)
SUBPROCESS = types.SimpleNamespace(run=run_command, DEVNULL=subprocess.DEVNULL, STDOUT=subprocess.STDOUT)


def _run_as_main(request, import_output):
    """In the fork: what `python script argv` does from cwd; returns its exit code."""
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for fd, path in ((0, os.devnull), (1, request["out"]), (2, request["err"])):  # child processes inherit these
        with open(path, "rb" if fd == 0 else "wb") as file:
            os.dup2(file.fileno(), fd)
    sys.stdin = open(0, closefd=False)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.stderr.write(import_output)
    sys.argv = [request["script"], *request["argv"]]
    sys.path.insert(0, str(Path(request["script"]).parent))  # as the interpreter puts the script's folder first
    code = 0
    try:
        runpy.run_path(request["script"], run_name="__main__")
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            code = stop.code or 0
        else:  # sys.exit("message"): the message on stderr, exit 1
            print(stop.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    threading._shutdown()  # then, as the interpreter ends: wait for the threads, run the atexit handlers
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    return code


def _serve():
    """One request (a JSON line) at a time: fork, reply the fork's pid, wait, reply its exit code."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C to the test run ends the forks, not the server
    replies = os.fdopen(os.dup(1), "w")
    stderr = os.dup(2)
    with tempfile.TemporaryFile("w+") as printed:  # what the imports print on stderr
        os.dup2(printed.fileno(), 2)
        exec(PRELOAD)
        os.dup2(stderr, 2)
        printed.seek(0)
        import_output = printed.read()
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = _run_as_main(request, import_output)
            finally:
                os._exit(code)
        print(pid, file=replies, flush=True)
        print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), file=replies, flush=True)


if __name__ == "__main__":
    _serve()
