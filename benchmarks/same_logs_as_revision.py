"""Does a script still learn exactly what it learned at an earlier commit? Runs the script of --base
(taken with `git show`) and today's with the same flags, reads both event files back with
TensorBoard's reader, and compares every scalar tag but charts/SPS point by point.

    python benchmarks/same_logs_as_revision.py --base 7df053f ppo.py --total-timesteps 20000
    python benchmarks/same_logs_as_revision.py --base 7df053f ppo_godot.py \\
        --env-path godot/chase/chase_discrete.x86_64 --num-steps 32 --total-timesteps 16384
    python benchmarks/same_logs_as_revision.py --base 153f0a8 --base-script ppo_godot.py \\
        ppo_godot_multi_policy.py --env-path godot/chase/chase_tag.x86_64 --num-steps 32 --total-timesteps 16384
    python benchmarks/same_logs_as_revision.py --base b323d26 --base-script ppo_godot_multi_policy.py \\
        --base-flags=--self-play ppo_godot_self_play.py --env-path godot/chase/chase_tag.x86_64 --num-steps 32 \\
        --total-timesteps 65536 --self-play-outcome terminated=chaser

--base-script compares with another script of --base (a script whose code moved to a new file), and
--base-flags gives that run more flags (the flag that turned on what the new file always does).
--fewer TAG ... names tags that today's script logs at fewer steps on purpose: each of their points
must still be one of the base's, the same value at the same step (the note says how many went).
Exits 1 when a tag differs. The flags after the script name go to both runs unchanged.
"""
import argparse
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from common import REPO, read_run


def scalars(script, flags, folder):
    folder.mkdir()
    subprocess.run([sys.executable, str(script), *flags], cwd=folder, check=True, capture_output=True)
    (run_dir,) = (folder / "runs").iterdir()
    acc = read_run(run_dir)
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]
            if tag != "charts/SPS"}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", required=True, help="the commit to compare with")
    p.add_argument("--base-script", default=None, help="the script of --base to compare with (default: script)")
    p.add_argument("--base-flags", default="", help="more flags for the run of --base alone, quoted")
    p.add_argument("--fewer", nargs="+", default=[], metavar="TAG",
                   help="tags logged at fewer steps on purpose: their points a subset of the base's")
    p.add_argument("script")
    args, flags = p.parse_known_args()
    flags = [os.path.abspath(f) if os.path.exists(f) else f for f in flags]  # paths work from any folder
    with tempfile.TemporaryDirectory() as workdir:
        base_script = args.base_script or args.script
        base = Path(workdir) / base_script
        base.write_text(subprocess.run(["git", "show", f"{args.base}:{base_script}"], cwd=REPO, check=True,
                                       capture_output=True, text=True).stdout)
        old = scalars(base, flags + shlex.split(args.base_flags), Path(workdir) / "base")
        new = scalars(REPO / args.script, flags, Path(workdir) / "today")
    def same(tag):
        if tag in args.fewer:  # each point today's script still logs is the base's (a tag may go entirely)
            kept = dict(old.get(tag, []))
            return all(step in kept and np.array_equal(value, kept[step], equal_nan=True)
                       for step, value in new.get(tag, []))
        return tag in old and tag in new and np.array_equal(old[tag], new[tag], equal_nan=True)

    differ = sorted(tag for tag in old.keys() | new.keys() if not same(tag))
    points = sum(len(v) for v in new.values())
    fewer = "".join(f"; {tag}: {len(new.get(tag, []))} of the base's {len(old.get(tag, []))} points"
                    for tag in args.fewer)
    print(f"{args.script} {' '.join(flags)}: {len(new)} tags, {points} points{fewer}; "
          + (f"DIFFER: {', '.join(differ)}" if differ else f"identical to {base_script} of {args.base}"))
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
