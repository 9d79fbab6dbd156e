"""What a decision of an exported GDScript policy (--gdscript-export-path) costs in the engine: Debian's
Godot 3.2.3 headless runs godot/run_policy.gd over random observations, once per policy of the demo
game, once per state size of ppo_godot_lstm.py's recurrent policy, and once for dense nets with a camera CNN's share of multiply-adds, to see whether a camera
policy could fit a frame; the demo's policies also on Godot 4.6, the official web template in headless
Chromium (tests/godot4_web.py: WebAssembly, one thread). The frame share: 16 agents each deciding once
every action-repeat ticks of a 60 fps game (a 16.7 ms frame).

    python benchmarks/gdscript_speed.py [--decisions 2000]
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch import nn

from common import REPO, fmt, write_table

sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
import godot4_web  # noqa: E402
import ppo_godot  # noqa: E402
import ppo_godot_lstm  # noqa: E402

FRAME_MS = 1000 / 60
AGENTS = 16
# The demo game's policies as training builds them: (label, obs_layout, action_heads)
DEMO = [
    ("chase_discrete", [("obs", (4,))], [("move", "discrete", 5)]),
    ("chase_multidiscrete", [("obs", (4,))], [("move_x", "discrete", 3), ("move_y", "discrete", 3)]),
    ("chase_continuous", [("obs", (4,))], [("move", "continuous", 2)]),
    ("chase_plugin (2 keys, mixed)", [("position", (2,)), ("to_target", (2,))],
     [("sprint", "discrete", 2), ("direction", "continuous", 2)]),
    ("chase_tag chaser", [("obs", (4,))], [("move", "discrete", 5)]),
    ("chase_tag runner", [("obs", (5,))], [("move", "continuous", 2)]),
]
LSTM_STATES = [16, 32, 64, 128]  # ppo_godot_lstm.py's --lstm-hidden-size: 32 by default, 128 is ppo_lstm.py's
CAMERA_PIXELS = 36 * 36 * 3  # the plugin's smallest camera; its CNN (camera_encoder) is ~740,000 multiply-adds


def multiply_adds(actor):
    return sum(layer.in_features * layer.out_features for layer in actor if isinstance(layer, nn.Linear))


def recurrent_multiply_adds(agent):
    """The encoder, the LSTM's four gates over [x, h], and the actor: a decision's multiply-adds."""
    hidden = agent.lstm.hidden_size
    return multiply_adds(agent.encoder) + 4 * hidden * (agent.lstm.input_size + hidden) + multiply_adds([agent.actor])


def export(agent, obs_layout, action_heads, path):
    """--gdscript-export-path of the script the agent is from: ppo_godot_lstm.py's when it has an LSTM."""
    script = ppo_godot_lstm if hasattr(agent, "lstm") else ppo_godot
    script.export_gdscript(agent, obs_layout, action_heads, str(path), "benchmarks/gdscript_speed.py")


def random_observations(obs_layout):
    rng = np.random.default_rng(0)
    return [{key: rng.uniform(-1, 1, shape[0]).tolist() for key, shape in obs_layout} for _ in range(200)]


def usec_per_decision(agent, obs_layout, action_heads, decisions, folder):
    path = folder / "policy.gd"
    export(agent, obs_layout, action_heads, path)
    observations = random_observations(obs_layout)
    (folder / "obs.json").write_text(json.dumps(observations))
    subprocess.run(["godot3-server", "-s", str(REPO / "godot" / "run_policy.gd"), f"--policy={path}",
                    f"--observations={folder / 'obs.json'}", f"--actions={folder / 'out.json'}",
                    f"--repeat={max(1, decisions // len(observations))}"], check=True, capture_output=True, cwd=folder)
    return json.loads((folder / "out.json").read_text())["usec_per_decision"], path.stat().st_size


def usec_on_godot4(agents, decisions, folder):
    """Each (agent, obs_layout, action_heads)'s microseconds a decision on Godot 4.6's web build, one run of it."""
    cases = []
    for i, (agent, obs_layout, action_heads) in enumerate(agents):
        path = folder / f"policy{i}.gd"
        export(agent, obs_layout, action_heads, path)
        observations = random_observations(obs_layout)
        cases.append((path, observations, False, 0, max(1, decisions // len(observations))))
    return [played["usec_per_decision"] for played in godot4_web.play_policies(cases)]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--decisions", type=int, default=2000, help="decisions timed per policy")
    p.add_argument("--camera-widths", type=int, nargs="+", default=[8, 16, 32],
                   help="hidden widths of the camera-sized dense nets (3,888 pixels -> width -> 5)")
    args = p.parse_args()
    torch.manual_seed(0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        demo = []
        for label, obs_layout, action_heads in DEMO:
            agent = ppo_godot.Agent(obs_layout, action_heads)
            usec, size = usec_per_decision(agent, obs_layout, action_heads, args.decisions, folder)
            rows.append((label, multiply_adds(agent.actor), usec, size))
            demo.append((agent, obs_layout, action_heads))
        for hidden in LSTM_STATES:  # ppo_godot_lstm.py on chase_memory: the state is the cost
            obs_layout, action_heads = DEMO[0][1:]
            agent = ppo_godot_lstm.Agent(obs_layout, action_heads, hidden)
            usec, size = usec_per_decision(agent, obs_layout, action_heads, max(200, args.decisions * 8 // hidden),
                                           folder)
            rows.append((f"chase_memory, LSTM state {hidden}", recurrent_multiply_adds(agent), usec, size))
            demo.append((agent, obs_layout, action_heads))
        web = usec_on_godot4(demo, args.decisions, folder) if not godot4_web.missing() else None
        for width in args.camera_widths:  # the export refuses cameras; a dense net of their inputs is timed instead
            layout, heads = [("pixels", (CAMERA_PIXELS,))], [("move", "discrete", 5)]
            agent = ppo_godot.Agent(layout, heads)
            agent.actor = nn.Sequential(nn.Linear(CAMERA_PIXELS, width), nn.Tanh(), nn.Linear(width, 5))
            usec, size = usec_per_decision(agent, layout, heads, max(50, args.decisions // width), folder)
            rows.append((f"dense {CAMERA_PIXELS:,}-{width}-5 (camera-sized input)", multiply_adds(agent.actor),
                         usec, size))
    mlp_ns = np.median([usec * 1000 / macs for label, macs, usec, _ in rows[:len(DEMO)]])
    dense_ns = np.median([usec * 1000 / macs for label, macs, usec, _ in rows[len(DEMO) + len(LSTM_STATES):]])
    lines = [f"Command: `python benchmarks/gdscript_speed.py --decisions {args.decisions}` (Godot 3.2.3 "
             f"headless, Debian's godot3-server; one core of a shared 2-core machine; random weights and "
             f"observations, which do not change the cost)", "",
             "| policy | multiply-adds | ms a decision | file | 16 agents, share of a 60 fps frame: repeat 1 / 8 "
             "(plugin default) |", "|---|---|---|---|---|"]
    for label, macs, usec, size in rows:
        lines.append(f"| {label} | {fmt(macs)} | {usec / 1000:.3f} | {size / 1024:,.0f} KiB | {frame_share(usec)} |")
    camera_ms = 740_000 * dense_ns / 1e6
    lines += ["", f"Per multiply-add: {mlp_ns:.0f} ns in the 64-64 MLPs, {dense_ns:.0f} ns in the camera-sized "
                  f"dense nets. At {dense_ns:.0f} ns, the camera CNN's ~740,000 multiply-adds take about "
                  f"{camera_ms:.0f} ms a decision, {camera_ms / FRAME_MS:.1f} frames of 60 fps for one agent: "
                  f"the export refuses cameras and points to --onnx-export-path.",
              "A repeat of 8 with every agent deciding on the same tick puts the whole repeat-1 share into "
              "that one frame; the plugin's Sync node does so (sync.gd lines 189-197)."]
    if web:
        lines += ["", "Godot 4.6, the official web export template (WebAssembly, single-threaded) in Debian's "
                      "Chromium, headless, the same files and observations:", "",
                  "| policy | ms a decision, Godot 4.6 web | against Godot 3.2.3 native | 16 agents, share of a 60 fps "
                  "frame: repeat 1 / 8 |", "|---|---|---|---|"]
        for (label, _, native, _), usec in zip(rows, web):
            lines.append(f"| {label} | {usec / 1000:.3f} | {usec / native:.2f}x | {frame_share(usec)} |")
    else:
        lines += ["", f"Godot 4.6 (web) not measured: {godot4_web.missing()}"]
    write_table("gdscript_speed", lines)


def frame_share(usec):
    """16 agents' share of a 60 fps frame, deciding every tick / every 8 ticks."""
    return " / ".join(f"{AGENTS * usec / 1000 / (repeat * FRAME_MS):.1%}" for repeat in (1, 8))


if __name__ == "__main__":
    main()
