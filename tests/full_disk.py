"""Run a training script as `python SCRIPT ARGS` would, on a full disk: its files (and those of a game it
starts) stop growing at 64 kB, failing with EFBIG (File too large) where a full disk fails with ENOSPC.

    python tests/full_disk.py SCRIPT ARGS

Through as_a_process.run it starts with torch already imported.
"""
import os
import resource
import runpy
import signal
import sys

if __name__ == "__main__":
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails instead of killing the process
    resource.setrlimit(resource.RLIMIT_FSIZE, (64_000, 64_000))
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))  # as the interpreter puts the script's folder
    runpy.run_path(sys.argv[0], run_name="__main__")
