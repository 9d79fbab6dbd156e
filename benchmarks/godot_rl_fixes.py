"""godot-rl 0.8.2's trainer wrappers as benchmarks/godot_trainers.py drives them, with what breaks fixed here
(godot-rl itself is not changed). Its Stable-Baselines3 side runs in the project's venv; its Sample Factory side
is run in Sample Factory's own venv (benchmarks/requirements-sample-factory.txt), as

    .cache/venv-sample-factory/bin/python benchmarks/godot_rl_fixes.py --env_path=GAME --experiment_name=NAME \\
        --seed=1 --device=cpu [--framerate=60] [--episodes=DIR] [Sample Factory's flags]

which is `gdrl --trainer=sf --env=gdrl --env_path=GAME --experiment_name=NAME --seed=1 --device=cpu ...` (godot-rl's
sample_factory_training: its env registered as "gdrl", its defaults, Sample Factory's run_rl) with these fixes:

1. A game of one discrete action does not train at all: Sample Factory hands each agent's action to the env as a
   plain int, and GodotEnv.from_numpy indexes it (action[agent][0]): TypeError in the rollout worker, after which
   Sample Factory's runner logs 0 FPS forever and never exits. Here each agent's action is made a 1-element array.
2. gdrl's --seed seeds only the games: godot-rl parses it, and Sample Factory never sees it ("Starting seed is not
   provided"), so its networks start unseeded. Here it is Sample Factory's seed too.
3. The games run paced by the clock: the wrapper passes --speedup (1 by default) and no framerate. --framerate=60
   here passes Godot's --fixed-fps 60, as ppo_godot.py starts its games (unpaced).
4. Ports: every game of a run takes base_port + 1 + its env id (11009, 11010, ...; the probe game 11008), each
   bound only after its game is started, so two runs at once fight over them. Here each game's socket listens on
   a free port that the system picks before the game starts, as ppo_godot.py does.
5. close() sends the game a close message and never waits for it; here it waits for the game process (and ends
   it after 10 s), so no game outlives its run and the run's CPU-seconds include the games'.

On the Stable-Baselines3 side (StableBaselinesGodotEnv builds its games with GodotEnv): 4 and 5 break there too,
fixed the same way (stable_baselines_games()). The example's PPO(seed=...) breaks: SB3 calls VecEnv.seed(),
which StableBaselinesGodotEnv leaves NotImplementedError; the example passes no seed to PPO, so its network starts
unseeded. godot_trainers.py seeds torch, numpy and random itself (SB3's set_random_seed) and passes no seed.

Every game also records each agent's episodes (--episodes=DIR): one JSON line per finished episode,
{"t": time.time(), "steps": agent-steps this game has played so far, "r": the episode's return}, and a last
line {"t", "steps", "closed": true} when it closes; a return is the sum of the game's rewards from the step after
the agent's last end up to its done, as godot-rl's trainers log them.
"""
import contextlib
import json
import os
import socket
import subprocess
import sys
import time

import numpy as np
from godot_rl.core.godot_env import GodotEnv


class FixedGodotEnv(GodotEnv):
    """GodotEnv whose game connects to a socket listening on a free port since before the game started (fix 4),
    whose close() ends the game (fix 5), and which records each agent's episodes in episodes/ (None: no record)."""

    def __init__(self, *args, episodes=None, **kwargs):
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as GodotEnv binds
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        kwargs["port"] = self.listener.getsockname()[1]  # the port the game is told, whatever was asked
        self.record = None
        if episodes:
            os.makedirs(episodes, exist_ok=True)
            self.record = open(os.path.join(episodes, f"episodes-{os.getpid()}-{kwargs['port']}.jsonl"), "a",
                               buffering=1)
        self.steps = 0
        self.returns = None
        super().__init__(*args, **kwargs)

    def _start_server(self):
        with self.listener:
            self.listener.settimeout(GodotEnv.DEFAULT_TIMEOUT)
            connection, _ = self.listener.accept()
        return connection

    def reset(self, *args, **kwargs):
        self.returns = None  # new episodes for every agent
        return super().reset(*args, **kwargs)

    def step_recv(self):
        obs, reward, term, trunc, info = super().step_recv()
        self.steps += len(reward)
        if self.returns is None:
            self.returns = np.zeros(len(reward))
        self.returns += reward
        if self.record is not None:
            for agent in np.flatnonzero(term):
                self.record.write(json.dumps({"t": time.time(), "steps": self.steps, "r": float(self.returns[agent])})
                                  + "\n")
        self.returns[np.asarray(term, dtype=bool)] = 0.0
        return obs, reward, term, trunc, info

    def close(self):
        with contextlib.suppress(OSError):  # a game that has gone cannot be told
            super().close()
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.record is not None:
            self.record.write(json.dumps({"t": time.time(), "steps": self.steps, "closed": True}) + "\n")
            self.record.close()
            self.record = None


def stable_baselines_games(env_path, n_parallel, seed, episodes, **game):
    """godot-rl's StableBaselinesGodotEnv with its games made by FixedGodotEnv (fixes 4 and 5, and the record)."""
    from godot_rl.wrappers import stable_baselines_wrapper

    class Games(FixedGodotEnv):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, episodes=episodes, **kwargs)

    made_with = stable_baselines_wrapper.GodotEnv
    stable_baselines_wrapper.GodotEnv = Games  # the name StableBaselinesGodotEnv builds its games with
    try:
        return stable_baselines_wrapper.StableBaselinesGodotEnv(env_path=env_path, n_parallel=n_parallel, seed=seed,
                                                                show_window=False, **game)
    finally:
        stable_baselines_wrapper.GodotEnv = made_with


# ------------------------------------------------------------------------------------------------
# Sample Factory (its own venv)
# ------------------------------------------------------------------------------------------------
def make_sample_factory_env(env_path, full_env_name, cfg=None, env_config=None, render_mode=None, seed=0, speedup=1,
                            framerate=None, episodes=None):
    """godot-rl's make_godot_env_func with the fixes: one game for Sample Factory's env env_config.env_id (None:
    the probe game the runner reads the spaces from), seeded seed + 1 + env id as godot-rl seeds it."""
    from godot_rl.wrappers.sample_factory_wrapper import SampleFactoryEnvWrapperNonBatched

    class SampleFactoryGame(FixedGodotEnv, SampleFactoryEnvWrapperNonBatched):
        def step(self, action):  # fix 1: an agent's single discrete action arrives as an int
            return super().step([np.atleast_1d(a) for a in action])

    if cfg.batched_sampling:
        raise SystemExit("godot_rl_fixes.py: --batched_sampling is not fixed here (godot-rl's default is off)")
    env_id = None if env_config is None else env_config.env_id
    return SampleFactoryGame(env_path=env_path, seed=seed + (0 if env_id is None else 1 + env_id),
                             show_window=False, speedup=speedup, framerate=framerate,
                             episodes=None if env_id is None else episodes)


def sample_factory_main():
    """gdrl --trainer=sf with fixes 1-5: godot-rl's arguments and defaults, Sample Factory's run_rl."""
    from functools import partial

    from godot_rl import main as gdrl
    from godot_rl.wrappers.sample_factory_wrapper import parse_gdrl_args
    from sample_factory.envs.env_utils import register_env
    from sample_factory.train import run_rl

    framerate, episodes, rest = None, None, []
    for arg in sys.argv[1:]:
        if arg.startswith("--framerate="):
            framerate = int(arg.split("=", 1)[1]) or None
        elif arg.startswith("--episodes="):
            episodes = os.path.abspath(arg.split("=", 1)[1])
        else:
            rest.append(arg)
    sys.argv = [sys.argv[0], "--trainer=sf", *rest]
    args, extras = gdrl.get_args()
    register_env("gdrl", partial(make_sample_factory_env, args.env_path, speedup=args.speedup, seed=args.seed,
                                 framerate=framerate, episodes=episodes))
    cfg = parse_gdrl_args(args=args, argv=extras, evaluation=False)
    cfg.seed = args.seed  # fix 2
    return run_rl(cfg)


if __name__ == "__main__":
    sys.exit(sample_factory_main())
