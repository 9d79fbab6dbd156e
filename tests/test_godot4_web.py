"""The Godot 4.6 harness (tests/godot4_web.py) itself: the engine is Godot 4.6's official web build, a pack
written here is read back byte for byte, the page's uncaught errors and failed requests are errors, and a game
that never ends is stopped with every process it started."""
import hashlib
import os

import pytest

import godot4_web


def test_the_engine_is_godot_4_6_and_reads_a_pack_written_here_byte_for_byte():
    godot4_web.needs_godot4()
    data = bytes(range(256)) * 3 + b"odd length"  # not a multiple of 16, every byte value
    out = godot4_web.play({"main.gd": 'extends Node\n\n\nfunc _ready():\n\tprint(Engine.get_version_info()["string"])\n'
                                      '\tprint(FileAccess.get_file_as_bytes("res://data/blob.bin").hex_encode())\n'
                                      '\tprint(OS.get_cmdline_args())\n\tprint("DONE")\n',
                           "data/blob.bin": data}, args=["--headless", "--custom=1"])
    assert out["done"] and not out["error"], out
    assert out["print"][0] == "Godot Engine v4.6.stable.official.89cea1439 - https://godotengine.org"
    assert out["print"][2:] == ["4.6-stable (official)", data.hex(), '["--custom=1"]']


def test_the_page_reports_uncaught_errors_and_failed_requests():
    """What a page's JavaScript throws, rejects unhandled or fetches in vain reaches the test as an error line."""
    godot4_web.needs_godot4()
    script = ("setTimeout(() => { throw new Error('thrown') }); Promise.reject(new Error('rejected')); "
              "fetch('no_such_file.txt')")
    out = godot4_web.play({"main.gd": 'extends Node\n\n\nfunc _ready():\n\tJavaScriptBridge.eval("%s")\n'
                                      '\tfor _frame in range(30):\n\t\tawait get_tree().process_frame\n'
                                      '\tprint("DONE")\n' % script}, args=["--headless"])
    assert out["done"], out
    assert sorted(out["error"]) == ["http 404 /no_such_file.txt", "uncaught: Uncaught Error: thrown",
                                    "unhandled rejection: Error: rejected"]


def test_a_game_that_never_ends_is_stopped_and_leaves_no_process():
    godot4_web.needs_godot4()
    with pytest.raises(TimeoutError, match="did not end within 10 s; it printed"):
        godot4_web.play({"main.gd": 'extends Node\n\n\nfunc _ready():\n\tprint("waiting")\n'}, args=["--headless"],
                        timeout=10)
    with pytest.raises(ProcessLookupError):  # the browser's session: Chromium and every process it started
        os.killpg(godot4_web.web.run_page.last_browser, 0)


def test_a_headless_game_starts_whatever_its_pack_holds():
    """Under --headless the engine read memory past its display server when the page's canvas took its size: with
    this pack (24 small files beside main.gd) that trapped at start-up in every run ("the engine did not start:
    RuntimeError: null function"), until the page kept a headless engine's canvas at 0 x 0, never resized."""
    godot4_web.needs_godot4()
    files = {f"data/f{i:02d}.txt": f"file {i}\n" for i in range(24)}
    out = godot4_web.play({**files, "main.gd": 'extends Node\n\n\nfunc _ready():\n\tfor _i in range(10):\n'
                                               '\t\tawait get_tree().physics_frame\n\tprint("DONE")\n'},
                          args=["--headless"])
    assert out["done"] and out["exit"] is None and not out["error"], out


def test_the_pack_lists_each_file_with_its_offset_size_and_md5(tmp_path):
    files = {"b.txt": "b", "a/x.bin": b"\x00\x01"}
    godot4_web.web.write_pack(files, tmp_path / "game.pck")
    pack = (tmp_path / "game.pck").read_bytes()
    assert pack[:4] == b"GDPC" and int.from_bytes(pack[4:8], "little") == 3
    for name, data in files.items():
        data = data.encode() if isinstance(data, str) else data
        assert name.encode() in pack and hashlib.md5(data).digest() in pack
