"""How closely Godot 4.6 (the official web template in headless Chromium, tests/godot4_web.py) plays what torch
and Godot 3.2.3 play: the figures behind the tests' pass/fail.

1. The exported file on each layout of the demo game: over every distinct observation 200 steps of a random
   policy met in the real game (tests/test_gdscript_export.py's recorded_game), on both engines, against the
   torch actor's greedy action: discrete actions equal (count), continuous ones' largest difference.
2. The demo game in the browser (godot/play_in_browser.py) against main.gd --policy on Godot 3.2.3, one policy
   file and seed: episode by episode, the same agent, length and ending, and the largest return difference
   (tests/test_play_in_browser.py's export_policies: Chase discrete and the tag game from the kept
   checkpoints, Chase continuous trained for 16,384 agent-steps).

    python benchmarks/godot4_matches.py [--episodes 160]
"""
import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

from common import REPO, write_table

sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
import godot4_web  # noqa: E402
import ppo_godot  # noqa: E402
from test_gdscript_export import ENGINES, as_get_obs, recorded_game  # noqa: E402
from test_play_in_browser import GAMES, episodes, export_policies  # noqa: E402

web = godot4_web.web


def exactness(folder):
    rows = ["| layout | observations | engine | discrete actions equal to torch's | largest continuous difference |",
            "|---|---|---|---|---|"]
    for kind in ("discrete", "multidiscrete", "continuous", "plugin"):
        agent, obs_layout, action_heads, observations = recorded_game(kind)
        path = folder / f"{kind}.gd"
        ppo_godot.export_gdscript(agent, obs_layout, action_heads, str(path), "benchmarks/godot4_matches.py")
        with torch.no_grad():
            greedy = agent.get_action(torch.as_tensor(observations), greedy=True).numpy()
        want = [ppo_godot.to_game_action(action, action_heads) for action in greedy]
        for engine, plays in ENGINES.items():
            got = plays(path, [as_get_obs(row, obs_layout) for row in observations], folder)
            equal, total, largest = 0, 0, None
            for g, w in zip(got, want, strict=True):
                for name, kind_, _ in action_heads:
                    if kind_ == "discrete":
                        equal, total = equal + (g[name] == w[name]), total + 1
                    else:
                        diff = float(np.max(np.abs(np.array(g[name]) - np.array(w[name]))))
                        largest = diff if largest is None else max(largest, diff)
            rows.append(f"| {kind} | {len(observations)} | {engine} | "
                        f"{f'{equal} of {total}' if total else '(none)'} | "
                        f"{'(none)' if largest is None else f'{largest:.1e}'} |")
    return rows


def same_episodes(godot3, godot4):
    """How many episodes, in order, have the same agent, length and ending on both engines (the returns are
    compared apart). Each episode is (policy, agent, return, length, ending), as test_play_in_browser's
    episodes() reads it."""
    return sum((name3, agent3, length3, end3) == (name4, agent4, length4, end4)
               for (name3, agent3, _, length3, end3), (name4, agent4, _, length4, end4) in zip(godot3, godot4))


def browser_against_godot3(folder, n_episodes):
    rows = ["| game | episodes | same agent, length and ending | terminated | largest return difference | "
            "mean return, Godot 3.2.3 | mean return, Godot 4.6 in Chromium |", "|---|---|---|---|---|---|---|"]
    for game, files in export_policies(folder).items():
        flags = ([f"--policy={files[0]}"] if game != "tag" else
                 [f"--policy_chaser={files[0]}", f"--policy_runner={files[1]}"])
        proc = subprocess.run([GAMES[game], *flags, f"--episodes={n_episodes}", "--env_seed=5", "--no-window",
                               "--disable-render-loop"], capture_output=True, text=True, check=True, cwd=folder)
        godot3, means3 = episodes(proc.stdout.splitlines())
        web.main([*map(str, files), "--out", str(folder / game), "--seed", "5"])
        out = godot4_web.console(web.play_built(folder / game, [f"--episodes={n_episodes}", "--speedup=20"],
                                                godot4_web.ends, timeout=600))
        godot4, means4 = episodes(out["print"])
        same = same_episodes(godot3, godot4)
        largest = max(abs(a[2] - b[2]) for a, b in zip(godot3, godot4))
        rows.append(f"| {game} | {len(godot3)} (Godot 4.6: {len(godot4)}) | {same} | "
                    f"{sum(e[4] == 'terminated' for e in godot3)} | {largest:.1e} | "
                    f"{', '.join(f'{n} {m[0]:.6f}' for n, m in means3.items())} | "
                    f"{', '.join(f'{n} {m[0]:.6f}' for n, m in means4.items())} |")
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--episodes", type=int, default=160, help="episodes per game in part 2 (default: %(default)s)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        lines = [f"`python benchmarks/godot4_matches.py --episodes {args.episodes}`", "",
                 "The exported file against the torch actor's greedy action, on observations from the real game:", "",
                 *exactness(folder), "",
                 "The demo game in the browser against main.gd --policy on Godot 3.2.3 (seed 5), episode by episode:",
                 "", *browser_against_godot3(folder, args.episodes)]
    write_table("godot4_matches", lines)


if __name__ == "__main__":
    main()
