"""The trainers a Godot user would pick instead of ppo_godot.py, side by side on the demo game (issue 61).

    python benchmarks/godot_trainers.py --setup    # Sample Factory's own venv, once (.cache/venv-sample-factory)
    python benchmarks/godot_trainers.py            # every trainer on the three games, seeds 1-3
    python benchmarks/godot_trainers.py --tiny     # 4,096 agent-steps a run, seed 1, no Sample Factory

The whole benchmark is 48 runs (8 rows x 2 games x 3 seeds). My estimate on 2 free cores, before the first timed
run, was about 3 hours: fast Chase about 70 minutes, slow Chase about 115 at 150,000 agent-steps a run. It rests on
speeds measured before (ppo_godot.py 17,700-19,400 and RLlib 3,800 agent-steps/s in results/godot_chase_discrete.md
and rllib_chase.md) and on runs of a few thousand agent-steps on a busy machine while this was written: SB3 paced
410-440 agent-steps/s (its 300,000 take 12 minutes a seed), Sample Factory about 2,800 unpaced and 1,900 paced in
its first 10 seconds, slow Chase's 2 games alone about 620. Each finished run is kept (.cache/godot_trainers/runs),
so the benchmark can be split, e.g. over two sessions, and the tables written from all the runs:
    python benchmarks/godot_trainers.py --games fast --resume
    python benchmarks/godot_trainers.py --games slow --resume
    python benchmarks/godot_trainers.py --resume    # runs nothing new; writes the games' tables and the figure

The rows. Each run starts its own 2 game processes of 16 agents (32 agents) from the same game binary; each
trainer seeds them its own way from --seed:
  ppo_godot.py          ppo_godot.py at its defaults, --n-parallel 2
  ppo_godot.py-slow-game
                        the same with SLOW_GAME_FLAGS (16 steps a rollout, minibatches of 64, 10 epochs): an update
                        every 512 agent-steps that takes 80 gradient steps from them, where the defaults take 16 from
                        2,048. Added after fast Chase's first seed (the "after" of item 5): SB3 at its example's
                        settings reached 90% in 15,632 agent-steps there, ppo_godot.py in 28,192, which on a game
                        whose steps cost more than the update means later in wall-clock. Chosen from a probe on fast
                        Chase before any slow run (agent-steps to 90%, seeds 1-3, 80,000 agent-steps a run): defaults
                        27,264-35,136; --num-steps 32 --num-minibatches 16 --update-epochs 10 12,864-14,176; these
                        flags 10,528-12,800; more epochs or smaller minibatches alone 19,328-26,752
  sb3                   godot-rl's Stable-Baselines3 path: StableBaselinesGodotEnv + SB3 PPO("MultiInputPolicy") with
                        its example's settings (examples/stable_baselines3_example.py at v0.8.2: n_steps 32, learning
                        rate 3e-4, ent_coef 1e-4, the rest SB3 2.4.0's defaults; torch's default threads, 2 here),
                        n_parallel 2 (the example's default is 1)
  sb3-ppo-godot         the same path with ppo_godot.py's settings (64 steps, 4 epochs of 4 minibatches, learning rate
                        1e-3 decaying to 0, ent_coef 0.01, clipped value loss, rewards scaled by VecNormalize, 1 torch
                        thread): the implementation apart from the settings
  sample-factory        Sample Factory 2.1.1 through godot-rl (gdrl --trainer=sf --env=gdrl, godot-rl's defaults, on
                        the CPU) with one game per worker: 2 workers x 1 env, --worker_num_splits 1 (the machine's 2
                        cores; godot-rl's 2 envs a worker would make 4 games)
  rllib                 scale/ppo_rllib_godot.py at its defaults, 2 env runners
These start every game the same way: unpaced, with Godot's --fixed-fps 60, as ppo_godot.py does. Two more rows run
a trainer as its example runs it, where its pacing differs (the game paced by the clock: --speedup=1, no
--fixed-fps):
  sb3-paced             sb3, as stable_baselines3_example.py starts its games
  sample-factory-paced  gdrl --trainer=sf at godot-rl's defaults: 1 worker x 2 envs, --worker_num_splits 2
godot-rl's SB3 and Sample Factory wrappers take every end as terminal (no time-out is bootstrapped) and the step on
which the Chase game only resets a finished agent as an ordinary step (reward 0); ppo_godot.py leaves that step out
and bootstraps time-outs, RLlib's script starts the game with --autoreset_mode=same_step. Each runs as a user's run
would. What breaks in godot-rl's wrappers, and how it is fixed for these runs: benchmarks/godot_rl_fixes.py.

The games: fast Chase (godot/chase/chase_discrete.x86_64; well under 1 ms a step of its 16 agents) and slow Chase,
the same game with --tick_cost_ms=50: every physics tick, so every step, spends at least 50 ms busy
(tests/test_godot_trainers.py: nothing it sends changes). Medium Chase (issue 67), between them where a real game's
pace lies: --tick_cost_ms=6, the 2 games alone about 5,000 agent-steps/s on 2 free cores (32 agents / (6 ms + a
step's own half millisecond); 2,835-3,027 measured while other work ran), 150,000 agent-steps a run, added after
the full benchmark below was run: its tables, and the 48 runs counted above, are fast and slow Chase's alone. Budgets: 300,000 agent-steps
on fast Chase, 100,000 on slow Chase (150,000 when the margins were written; cut after fast Chase's first seed,
where every row reached the threshold within 86,000 agent-steps on that seed, to shorten slow Chase: its runs then
took 90 minutes in all); a run still going after --max-minutes (15) is stopped (Ctrl-C) and marked so.

Measured per trainer, game and seed:
  - agent-steps per second over the whole run: the agent-steps the games played / the seconds from starting the
    trainer's process to its exit (start-up, updates and shutdown included);
  - CPU-seconds of the trainer's processes and its games: getrusage(RUSAGE_CHILDREN) before and after, which counts
    every descendant whose parent waited for it (this process is the subreaper of the orphans, and reaps them), plus
    the processes the kernel reaps without passing their time up, read from /proc while they run (Unreported): Ray's
    raylet ignores SIGCHLD, so its workers, and the games they waited for, would escape getrusage (the full
    benchmark's RLlib rows were run before they were counted: a lower bound, marked so);
  - minutes from starting the trainer to the first episode at which the mean of the last 100 episodes reaches 90%
    of the scripted near-optimal return (straight for the target, measured at the start of the run on fast Chase
    as benchmarks/godot_chase.py does; slow Chase sends the same, so its return is the same);
  - the return at the end (the last 100 training episodes);
  - the greedy return of the exported policy, played on fresh fast games (320 episodes, as many from each agent):
    ppo_godot.py's and RLlib's ONNX exports. godot-rl's SB3 ONNX export fails on torch 2.13 (No module named
    'onnxscript'; godot_rl_agents #247), so the SB3 rows give their saved model's deterministic action instead,
    marked; Sample Factory exports nothing for Godot.
Writes benchmarks/results/godot_trainers.md (medians over seeds, the return by wall-clock time, where the time to
90% goes, the margins below against the runs) and benchmarks/figures/godot_trainers.png (return against wall-clock,
mean and min-max over seeds, one panel per game, minutes on a log scale); --tiny writes godot_trainers_tiny.*, and
--out DIR writes under DIR instead.

Margins, set before the first timed run (issue 61, item 5); each of ppo_godot.py's two rows is judged on its own,
against the rows that are not ppo_godot.py's:
  1. ppo_godot.py reaches the threshold first in wall-clock on both games, on every seed: for each game and seed,
     its minutes to 90% are fewer than every other row's (a row that never reaches it counts as infinitely late);
  2. on fast Chase, at least 2x sooner than the best other trainer: the median over seeds of the best other row's
     minutes to 90% is at least twice ppo_godot.py's median.

Margins of issue 67 (ppo_godot.py's default update follows the game's pace), written 2026-12-07 before any of its
timed runs; they judge ppo_godot.py's plain row, at its defaults, with the rule (or the one fixed setting the sweep
finds) in place, on fast, medium and slow Chase at >= 3 seeds, all in one invocation:
  1. first to 90% on every seed of every game, against every other trainer's best row (SB3 at its example's settings
     and at ppo_godot.py's, Sample Factory, RLlib);
  2. fast Chase: its median seconds to 90% within 10% of 4.2 s, the median before the rule (the rule must cost a
     fast game nothing);
  3. slow Chase: its median seconds to 90% at most 0.8 x the best other trainer's median (35.9 s, SB3's example,
     in the table before the rule);
  4. the starter's level (benchmarks/starter_learns.py) and two of godot-rl's official examples: at least as good as
     the defaults before the rule, in seconds to 90% of the best return either reached.
The sweep behind the rule runs on fast, medium and slow Chase alone; BallChase stays out of it and of this
benchmark, the check from outside. Prediction, before the sweep: the fast game keeps 4 epochs of 4 minibatches of
a 64-step rollout (its update costs about a third of the run), and the slow game takes about 10 times the gradient
steps per agent-step (as SLOW_GAME_FLAGS do, 80 per 512 against 16 per 2,048); medium Chase falls between, nearer
the slow setting, since its games alone (about 5,000 agent-steps/s) are slower than ppo_godot.py's update (about
15,000 on fast Chase).
"""
import argparse
import contextlib
import ctypes
import functools
import importlib.util
import json
import os
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from common import REPO, read_run, running_mean, save_figure

GAMES, AGENTS = 2, 16  # game processes a run, agents a game
FAST = REPO / "godot" / "chase" / "chase_discrete.x86_64"
TICK_COST_MS = 50  # slow Chase: --tick_cost_ms
MEDIUM_TICK_COST_MS = 6  # medium Chase: the 2 games alone about 5,000 agent-steps/s (32 agents / (6 ms + a step's own))
SHARE = 0.9  # the threshold: this share of the scripted return
WINDOW = 100  # episodes in the running mean
SF_VENV = REPO / ".cache" / "venv-sample-factory"
SF_PYTHON = SF_VENV / "bin" / "python"
SF_REQUIREMENTS = REPO / "benchmarks" / "requirements-sample-factory.txt"
SLOW_GAME_FLAGS = ["--num-steps", "16", "--num-minibatches", "8", "--update-epochs", "10"]
ROWS = {  # key: (label, pacing)
    "ppo_godot.py": ("ppo_godot.py", "unpaced"),
    "ppo_godot.py-slow-game": ("ppo_godot.py, a slow game's flags: " + " ".join(SLOW_GAME_FLAGS), "unpaced"),
    "sb3": ("SB3 (godot-rl), its example's settings", "unpaced"),
    "sb3-ppo-godot": ("SB3 (godot-rl), ppo_godot.py's settings", "unpaced"),
    "sample-factory": ("Sample Factory (godot-rl), 2 workers x 1 game", "unpaced"),
    "rllib": ("RLlib (scale/ppo_rllib_godot.py)", "unpaced"),
    "sb3-paced": ("SB3 (godot-rl), its example's settings", "as its example runs it: paced"),
    "sample-factory-paced": ("Sample Factory (godot-rl), its defaults: 1 worker x 2 games",
                             "as its example runs it: paced"),
}
SAMPLE_FACTORY = ("sample-factory", "sample-factory-paced")
MINE = ("ppo_godot.py", "ppo_godot.py-slow-game")  # the rows the margins judge, each against the other trainers
POLL_S = 0.5  # how often Unreported reads the processes


# ------------------------------------------------------------------------------------------------
# Sample Factory's venv
# ------------------------------------------------------------------------------------------------
def setup():
    """Sample Factory's venv from its pinned requirements, with this Python (3.11)."""
    if not SF_PYTHON.exists():
        subprocess.run([sys.executable, "-m", "venv", str(SF_VENV)], check=True)
    subprocess.run([str(SF_PYTHON), "-m", "pip", "install", "-r", str(SF_REQUIREMENTS)], check=True)
    subprocess.run([str(SF_PYTHON), "-c", "import sample_factory, godot_rl, torch; print('Sample Factory', "
                    "sample_factory.__version__, 'torch', torch.__version__)"], check=True)


def missing_parts(rows):
    """What the rows asked for need and this install lacks, a phrase each."""
    missing = []
    if "rllib" in rows and importlib.util.find_spec("ray") is None:
        missing.append("the rllib row needs Ray, an optional install: pip install -r requirements-scale.txt")
    if any(row in SAMPLE_FACTORY for row in rows) and not SF_PYTHON.exists():
        missing.append(f"Sample Factory's rows need its venv ({SF_VENV}): python benchmarks/godot_trainers.py --setup")
    return missing


# ------------------------------------------------------------------------------------------------
# The games
# ------------------------------------------------------------------------------------------------
def slow_game(folder, tick_cost_ms, pace="slow"):
    """A launcher for slow (or medium) Chase, named .x86_64 as godot-rl requires: the demo game with --tick_cost_ms."""
    path = Path(folder) / f"chase_{pace}.x86_64"
    path.write_text(f"#!/bin/sh\n# {pace} Chase: every physics tick spends {tick_cost_ms} ms busy\n"
                    f"exec {shlex.quote(str(FAST))} \"$@\" --tick_cost_ms={tick_cost_ms}\n")
    path.chmod(0o755)
    return path


def ppo_godot_envs(game, seed):
    """GAMES games of `game` as ppo_godot.py starts them (unpaced, free ports), as its vector env."""
    sys.path.insert(0, str(REPO))
    import ppo_godot

    args = ppo_godot.parse_args(["--env-path", str(game), "--n-parallel", str(GAMES), "--seed", str(seed)])
    return ppo_godot.RecordEpisodes(ppo_godot.GodotVecEnv(args))


def scripted_client(game, steps):
    """The scripted policy's mean return, and the agent-steps per second the games give a client that only
    plays (the first 20 steps, start-up, not timed)."""
    from godot_chase import scripted_action

    envs = ppo_godot_envs(game, seed=1)
    try:
        obs, _ = envs.reset()
        returns = []
        for step in range(steps):
            if step == 20:
                start = time.perf_counter()
            obs, _, _, _, infos = envs.step(scripted_action(obs, "discrete"))
            if "episode" in infos:
                returns.extend(infos["episode"]["r"][infos["_episode"]])
        return float(np.mean(returns)) if returns else None, (steps - 20) * envs.num_envs / (time.perf_counter() - start)
    finally:
        envs.close()


def play_greedy(act, seed, episodes):
    """The mean return of act(obs rows) -> action rows on fresh fast games, each agent's first
    ceil(episodes / agents) episodes."""
    envs = ppo_godot_envs(FAST, seed)
    try:
        rounds = -(-episodes // envs.num_envs)
        done = np.zeros(envs.num_envs, dtype=int)
        returns = []
        obs, _ = envs.reset()
        while done.min() < rounds:
            obs, _, _, _, infos = envs.step(np.asarray(act(obs), dtype=np.float32).reshape(len(obs), -1))
            for i in np.flatnonzero(infos["_episode"]) if "episode" in infos else []:
                if done[i] < rounds:
                    returns.append(float(infos["episode"]["r"][i]))
                done[i] += 1
        return float(np.mean(returns))
    finally:
        envs.close()


def onnx_policy(path):
    """The greedy action of an ONNX export with the plugin's inputs (obs, state_ins): each row's argmax."""
    import onnxruntime

    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])

    def act(obs):
        output = session.run(["output"], {"obs": obs.astype(np.float32),
                                          "state_ins": np.zeros(len(obs), np.float32)})[0]
        return output.argmax(axis=1)

    return act


def sb3_policy(path):
    """A saved SB3 model's deterministic action."""
    from stable_baselines3 import PPO

    model = PPO.load(str(path), device="cpu")
    return lambda obs: model.predict({"obs": obs}, deterministic=True)[0]


# ------------------------------------------------------------------------------------------------
# The trainers: each one's command, run in a folder of its own
# ------------------------------------------------------------------------------------------------
def command(row, game, seed, budget, folder):
    """The command line of one run, from the repository's root."""
    if row in MINE:
        return [sys.executable, str(REPO / "ppo_godot.py"), "--env-path", str(game), "--n-parallel", str(GAMES),
                "--seed", str(seed), "--total-timesteps", str(budget), "--log-dir", str(folder / "runs"),
                "--onnx-export-path", str(folder / "policy.onnx"), *(SLOW_GAME_FLAGS if row != "ppo_godot.py" else [])]
    if row == "rllib":
        return [sys.executable, str(REPO / "scale" / "ppo_rllib_godot.py"), "--env-path", str(game),
                "--num-env-runners", str(GAMES), "--num-cpus", str(GAMES), "--seed", str(seed),
                "--total-timesteps", str(budget), "--log-dir", str(folder / "runs"),
                "--onnx-export-path", str(folder / "policy.onnx")]
    if row.startswith("sb3"):
        config = dict(game=str(game), seed=seed, budget=budget, episodes=str(folder / "episodes"),
                      model=str(folder / "model.zip"), settings="ppo_godot" if row == "sb3-ppo-godot" else "example",
                      paced=row == "sb3-paced")
        return [sys.executable, __file__, "--sb3-run", json.dumps(config)]
    if row in SAMPLE_FACTORY:
        games = (["--num_workers=2", "--num_envs_per_worker=1", "--worker_num_splits=1", "--framerate=60"]
                 if row == "sample-factory" else [])  # paced: godot-rl's defaults (1 worker, 2 envs, 2 splits)
        return [str(SF_PYTHON), str(REPO / "benchmarks" / "godot_rl_fixes.py"), "--env=gdrl", f"--env_path={game}",
                f"--experiment_name=seed{seed}", f"--experiment_dir={folder / 'logs'}", f"--seed={seed}",
                "--device=cpu", f"--train_for_env_steps={budget}", f"--episodes={folder / 'episodes'}", *games]
    raise ValueError(row)


def sb3_run(config):
    """One SB3 run (this file run as a child process): godot-rl's StableBaselinesGodotEnv with the fixes, SB3's
    PPO, the model saved; whether godot-rl's ONNX export works is written beside it."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.utils import set_random_seed
    from stable_baselines3.common.vec_env import VecMonitor, VecNormalize

    from godot_rl_fixes import stable_baselines_games

    set_random_seed(config["seed"])  # PPO(seed=...) would call StableBaselinesGodotEnv.seed: NotImplementedError
    game = {"speedup": 1} if config["paced"] else {"framerate": 60}
    env = VecMonitor(stable_baselines_games(config["game"], GAMES, config["seed"], config["episodes"], **game))
    try:
        if config["settings"] == "example":  # stable_baselines3_example.py's PPO (its --linear_lr_schedule off)
            model = PPO("MultiInputPolicy", env, ent_coef=0.0001, verbose=0, n_steps=32, learning_rate=0.0003)
        else:  # ppo_godot.py's defaults in SB3's terms
            torch.set_num_threads(1)
            env = VecNormalize(env, norm_obs=False, norm_reward=True, clip_reward=10.0, gamma=0.99)
            model = PPO("MultiInputPolicy", env, n_steps=64, batch_size=64 * env.num_envs // 4, n_epochs=4,
                        learning_rate=lambda remaining: 1e-3 * remaining, ent_coef=0.01, clip_range=0.2,
                        clip_range_vf=0.2, vf_coef=0.5, max_grad_norm=0.5, gamma=0.99, gae_lambda=0.95, verbose=0)
        model.learn(config["budget"])
        model.save(config["model"])
        try:
            from godot_rl.wrappers.onnx.stable_baselines_export import export_model_as_onnx

            export_model_as_onnx(model, str(Path(config["model"]).with_suffix(".onnx")))
            exported = "ok"
        except Exception as e:  # torch >= 2.9: godot_rl_agents #247
            exported = f"{type(e).__name__}: {e}".splitlines()[0]
        Path(config["model"]).with_suffix(".export").write_text(exported)
    finally:
        env.close()


# ------------------------------------------------------------------------------------------------
# Running one trainer, and what it leaves
# ------------------------------------------------------------------------------------------------
def become_subreaper():
    """Orphaned descendants (games a trainer did not wait for, Ray's processes whose parent has gone) become this
    process's children, so that they are reaped here and their CPU time counts (prctl PR_SET_CHILD_SUBREAPER)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(36, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def process_table():
    """{pid: (parent pid, its own CPU-seconds so far, its start time in clock ticks)} of every process in /proc."""
    table = {}
    for entry in os.listdir("/proc"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            table[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"),
                                 int(fields[19]))
    return table


def descendants(table, root):
    """The pids under root in the process table, at every depth."""
    children = {}
    for pid, (parent, _, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found, todo = [], list(children.get(root, []))
    while todo:
        found.append(todo.pop())
        todo += children.get(found[-1], [])
    return found


def ignores_sigchld(pid):
    """Whether the process ignores SIGCHLD (its SigIgn mask), so that the kernel reaps its children."""
    with contextlib.suppress(OSError, StopIteration):
        with open(f"/proc/{pid}/status") as f:
            mask = next(line.split()[1] for line in f if line.startswith("SigIgn:"))
        return bool(int(mask, 16) >> (signal.SIGCHLD - 1) & 1)
    return False


class Unreported:
    """The CPU-seconds getrusage(RUSAGE_CHILDREN) never sees: a process whose parent ignores SIGCHLD is reaped by the
    kernel, which then drops its time, and that of the children it waited for, instead of passing it up. Every
    POLL_S seconds this reads each live descendant's own CPU-seconds and parent from /proc; at the end it sums the
    processes whose time was dropped. What one of them spends after its last read is missed (at most POLL_S
    seconds each), and a process that lives less than POLL_S may not be seen."""

    def __init__(self, root):
        self.root = root  # whose descendants are read
        self.seen = {}  # (pid, start): ((parent pid, its start), own CPU-seconds, whether the parent ignores SIGCHLD)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.watch, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()

    def watch(self):
        while not self.stop.wait(POLL_S):
            table = process_table()
            parents = {}
            for pid in descendants(table, self.root):
                parent, cpu, start = table[pid]
                if parent not in parents:
                    parents[parent] = ignores_sigchld(parent)
                self.seen[pid, start] = ((parent, table[parent][2]), cpu, parents[parent])

    def seconds(self, reaped):
        """The CPU-seconds of the processes seen whose time was dropped; reaped: the pids this process reaped, whose
        time getrusage counts."""
        @functools.cache
        def dropped(key):
            parent, _, parent_ignores = self.seen[key]
            return key[0] not in reaped and (parent_ignores or (parent in self.seen and dropped(parent)))

        return sum(cpu for key, (_, cpu, _) in self.seen.items() if dropped(key))


def reap_all(grace=30):
    """Wait for every child left (up to `grace` seconds, then each is killed by its id); the pids reaped."""
    deadline, reaped = time.time() + grace, set()
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid:
            reaped.add(pid)
            continue
        if time.time() > deadline:
            for pid, (parent, _, _) in process_table().items():
                if parent == os.getpid():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)


def run_process(argv, folder, cap_s):
    """(start, seconds from start to exit, CPU-seconds of it and every descendant, those of them that getrusage
    missed (Unreported), stopped at the cap, exit code)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.time()
    with open(folder / "output.log", "wb") as log, Unreported(os.getpid()) as unreported:
        proc = subprocess.Popen(argv, cwd=folder, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        capped = False
        try:
            proc.wait(timeout=cap_s)
        except subprocess.TimeoutExpired:  # Ctrl-C, as a user would stop it; then a kill
            capped = True
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        seconds = time.time() - start
        reaped = reap_all() | {proc.pid}
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    missed = unreported.seconds(reaped)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime) + missed
    return start, seconds, cpu, missed, capped, proc.returncode


def episodes_of(row, folder):
    """(end times, returns, the agent-steps all the run's games had played by then) of every training episode, in
    the order they ended, and the agent-steps played in all."""
    if row in (*MINE, "rllib"):
        acc = read_run(next((folder / "runs").iterdir()))
        tags = acc.Tags()["scalars"]  # a run too short for any episode to end has no episodic_return
        events = acc.Scalars("charts/episodic_return") if "charts/episodic_return" in tags else []
        steps = max(e.step for e in acc.Scalars("charts/SPS")) if "charts/SPS" in tags else 0
        times, returns, played = [e.wall_time for e in events], [e.value for e in events], [e.step for e in events]
    else:  # godot_rl_fixes.py's records, one file a game, merged in time: each game's count as it last wrote it
        lines = [dict(json.loads(line), game=game) for game, path in enumerate((folder / "episodes").glob("*.jsonl"))
                 for line in path.read_text().splitlines()]
        lines.sort(key=lambda line: line["t"])
        times, returns, played, last = [], [], [], {}
        for line in lines:
            last[line["game"]] = line["steps"]
            if "r" in line:
                times.append(line["t"]), returns.append(line["r"]), played.append(sum(last.values()))
        steps = sum(last.values())
    order = np.argsort(times, kind="stable")
    return np.asarray(times)[order], np.asarray(returns)[order], np.asarray(played, dtype=int)[order], int(steps)


def greedy_return(row, folder, seed, episodes):
    """(the greedy return of the run's export or saved model, what it is) or (None, why there is none)."""
    if row in (*MINE, "rllib"):
        path = folder / "policy.onnx"
        return (play_greedy(onnx_policy(path), 100 + seed, episodes), "ONNX") if path.exists() else (None, "none")
    if row.startswith("sb3"):
        if not (folder / "model.zip").exists():
            return None, "none"
        exported = (folder / "model.export").read_text()
        what = "ONNX" if exported == "ok" else "SB3 model (ONNX export: " + exported + ")"
        return play_greedy(sb3_policy(folder / "model.zip"), 100 + seed, episodes), what
    return None, "no export for Godot"


def first_reach(times, returns, threshold, window=WINDOW):
    """Seconds (on times' clock) of the first episode where the mean of the last `window` reaches threshold; or
    whatever else times holds of each episode (the agent-steps played by then)."""
    for i in range(window - 1, len(returns)):
        if returns[i - window + 1:i + 1].mean() >= threshold:
            return float(times[i])
    return None


def run_one(row, game_path, seed, budget, threshold, args, keep):
    """One trainer on one game for one seed: its measures, and its curve (seconds since its start, returns)."""
    folder = Path(tempfile.mkdtemp(prefix=f"{row}-", dir=keep))
    start, seconds, cpu, unreported, capped, code = run_process(command(row, game_path, seed, budget, folder),
                                                                folder, 60 * args.max_minutes)
    times, returns, played, steps = episodes_of(row, folder)
    failed = code != 0 and not capped
    if failed:
        tail = (folder / "output.log").read_bytes()[-2000:].decode(errors="replace")
        print(f"{row} seed {seed} exited {code}; the end of {folder / 'output.log'}:\n{tail}", flush=True)
    reached = first_reach(times, returns, threshold)
    reached_steps = first_reach(played, returns, threshold)
    greedy, what = (None, "none") if failed else greedy_return(row, folder, seed, args.eval_episodes)
    result = dict(row=row, seed=seed, budget=budget, steps=steps, seconds=seconds, cpu=cpu, cpu_unreported=unreported,
                  capped=capped, exit_code=code, failed=failed, episodes=len(returns),
                  minutes_to_threshold=None if reached is None else (reached - start) / 60,
                  steps_to_threshold=reached_steps, first_episode_seconds=float(times[0] - start) if len(times) else None,
                  final=float(returns[-WINDOW:].mean()) if len(returns) else None, greedy=greedy, greedy_of=what,
                  curve=[(times - start).round(3).tolist(), np.round(returns, 4).tolist(), played.tolist()],
                  folder=str(folder) if args.keep_folders else None)
    if not args.keep_folders:
        shutil.rmtree(folder, ignore_errors=True)
    return result


# ------------------------------------------------------------------------------------------------
# Tables and figure
# ------------------------------------------------------------------------------------------------
def median_or_none(values):
    values = [v for v in values if v is not None]
    return float(np.median(values)) if values else None


def cell(x, digits=0):
    return "-" if x is None else f"{x:,.{digits}f}"


def late(run):
    """Minutes to the threshold, a run that never reached it counting as infinitely late."""
    return np.inf if run["minutes_to_threshold"] is None else run["minutes_to_threshold"]


def seconds_cell(runs):
    """The median seconds to the threshold (fast Chase's are a few seconds: minutes would round them alike)."""
    median = float(np.median([late(r) for r in runs]))
    return "never" if not np.isfinite(median) else f"{60 * median:.1f}"


def cpu_note(row, runs):
    """Runs kept from before Unreported (no cpu_unreported) missed Ray's workers and their games."""
    if row == "rllib" and any("cpu_unreported" not in r for r in runs):
        return " (a lower bound: run before Ray's workers and their games were counted)"
    return ""


def row_lines(runs_by_row):
    lines = ["| trainer | pacing | agent-steps played | agent-steps/s | CPU-seconds (trainer + games) | seconds to 90% "
             "| seeds reaching 90% | return at the end (last 100 episodes) | greedy return (what was played) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row, runs in runs_by_row.items():
        label, pacing = ROWS[row]
        done = [r for r in runs if not r["failed"]]
        if not done:
            lines.append(f"| {label} | {pacing} | failed: exit {runs[0]['exit_code']} | | | | | | |")
            continue
        capped = sum(r["capped"] for r in done)
        sps = median_or_none([r["steps"] / r["seconds"] for r in done])
        what = "; ".join(sorted({r["greedy_of"] for r in done}))
        lines.append(f"| {label} | {pacing} | {cell(median_or_none([r['steps'] for r in done]))} | {cell(sps)}{f' ({capped} stopped at the cap)' if capped else ''} "
                     f"| {cell(median_or_none([r['cpu'] for r in done]))}{cpu_note(row, done)} | {seconds_cell(done)} "
                     f"| {sum(r['minutes_to_threshold'] is not None for r in done)}/{len(done)} "
                     f"| {cell(median_or_none([r['final'] for r in done]), 2)} "
                     f"| {cell(median_or_none([r['greedy'] for r in done]), 2)} ({what}) |")
    return lines


def by_time(runs, seconds):
    """The mean of the last 100 episodes ended by `seconds` after the start, median over seeds (a run that had
    ended by then: its last 100)."""
    values = []
    for r in runs:
        times, returns = (np.asarray(x) for x in r["curve"][:2])
        ended = returns[times <= seconds]
        values.append(float(ended[-WINDOW:].mean()) if len(ended) else None)
    return median_or_none(values) if all(v is not None for v in values) else None


def time_lines(runs_by_row):
    longest = max(max(r["seconds"] for r in runs) for runs in runs_by_row.values())
    points = [t for t in (5, 10, 20, 30, 60, 120, 300, 600, 900) if t < longest] + [int(np.ceil(longest))]
    lines = ["| trainer | pacing | " + " | ".join(f"{t} s" if t < 60 else f"{t / 60:.3g} min" for t in points) + " |",
             "|---|---|" + "---|" * len(points)]
    for row, runs in runs_by_row.items():
        done = [r for r in runs if not r["failed"]]
        if done:
            lines.append(f"| {ROWS[row][0]} | {ROWS[row][1]} | "
                         + " | ".join(cell(by_time(done, t), 2) for t in points) + " |")
    return lines


def span(values, digits=0):
    """min-max of the values, or the one value."""
    low, high = cell(min(values), digits), cell(max(values), digits)
    return low if low == high else f"{low}-{high}"


def seed_lines(runs_by_row):
    """Each row seed by seed: the ranges over seeds, and each seed's seconds to 90% (the pages' table)."""
    lines = ["| trainer | pacing | agent-steps/s | seconds to 90%, seeds in order | agent-steps to 90% (median) "
             "| first finished episode (s, median) | return at the end | greedy return |", "|---|---|---|---|---|---|---|---|"]
    for row, runs in runs_by_row.items():
        done = sorted((r for r in runs if not r["failed"]), key=lambda r: r["seed"])
        if done:
            steps = float(np.median([np.inf if r.get("steps_to_threshold") is None else r["steps_to_threshold"]
                                     for r in done]))
            greedy = [r["greedy"] for r in done if r["greedy"] is not None]
            lines.append(f"| {ROWS[row][0]} | {'unpaced' if ROWS[row][1] == 'unpaced' else 'paced'} "
                         f"| {span([r['steps'] / r['seconds'] for r in done])} "
                         f"| {', '.join('never' if late(r) == np.inf else f'{60 * late(r):.1f}' for r in done)} "
                         f"| {cell(steps) if np.isfinite(steps) else 'never'} "
                         f"| {cell(median_or_none([r.get('first_episode_seconds') for r in done]), 1)} "
                         f"| {span([r['final'] for r in done], 2)} | {span(greedy, 2) if greedy else '-'} |")
    return lines


def why_lines(runs_by_row):
    """The time to the threshold taken apart: start-up (to the first finished episode), the agent-steps the
    trainer needed, and how fast it played them."""
    lines = ["| trainer | pacing | seconds to 90% | seconds to the first finished episode | agent-steps to 90% "
             "| agent-steps/s over the run |", "|---|---|---|---|---|---|"]
    for row, runs in runs_by_row.items():
        done = [r for r in runs if not r["failed"]]
        if done:
            steps = [np.inf if r.get("steps_to_threshold") is None else r["steps_to_threshold"] for r in done]
            median_steps = float(np.median(steps))
            lines.append(f"| {ROWS[row][0]} | {ROWS[row][1]} | {seconds_cell(done)} "
                         f"| {cell(median_or_none([r.get('first_episode_seconds') for r in done]), 1)} "
                         f"| {cell(median_steps) if np.isfinite(median_steps) else 'never'} "
                         f"| {cell(median_or_none([r['steps'] / r['seconds'] for r in done]))} |")
    return lines


def margin_lines(results, games, mine="ppo_godot.py"):
    """The two margins of the docstring against the runs, for one of ppo_godot.py's rows (MINE) against every
    row that is not ppo_godot.py's."""
    label = ROWS[mine][0]
    if any(mine not in results[game] or not set(results[game]) - set(MINE) for game in games):
        return [f"Margins for {label}: not judged (it and another trainer must both run on each game)."]
    first_everywhere, misses = True, []
    for game in games:
        runs = results[game]
        for run in runs[mine]:
            for row, others in runs.items():
                other = next((r for r in others if r["seed"] == run["seed"]), None)
                if row not in MINE and other is not None and not late(run) < late(other):
                    first_everywhere = False
                    misses.append(f"{game}, seed {run['seed']}: {ROWS[row][0]} ({ROWS[row][1]})")
    lines = [f"1. {label} reaches 90% first on every game, on every seed: "
             + ("met." if first_everywhere else "missed (" + "; ".join(misses) + ").")]
    fast = results.get("fast Chase")
    if fast:
        medians = {row: float(np.median([late(r) for r in runs])) for row, runs in fast.items() if row not in MINE}
        best_row, own = min(medians, key=medians.get), float(np.median([late(r) for r in fast[mine]]))
        if not np.isfinite(own):
            lines.append(f"2. At least 2x sooner than the best other trainer on fast Chase: missed ({label}'s median "
                         "never reaches 90%).")
        else:
            ratio = medians[best_row] / own
            lines.append(f"2. At least 2x sooner than the best other trainer on fast Chase: the best other, "
                         f"{ROWS[best_row][0]} ({ROWS[best_row][1]}), takes "
                         f"{'forever' if not np.isfinite(ratio) else f'{ratio:.1f}x'} {label}'s median time: "
                         f"{'met' if ratio >= 2 else 'missed'}.")
    return lines


def write_outputs(name, out, results, info, argv):
    command_line = "python benchmarks/godot_trainers.py " + " ".join(shlex.quote(a) for a in argv)
    lines = [f"Command: `{command_line}` ({time.strftime('%Y-%m-%d')}; {os.cpu_count()} cores; {info['godot']}; "
             f"{GAMES} game processes x {AGENTS} agents a run; seeds {info['seeds']})", "",
             f"Scripted near-optimal return (straight for the target, {info['scripted_episodes']}): "
             f"{info['scripted']:.2f}; the threshold, {SHARE:.0%} of it: {info['threshold']:.2f}.",
             "The games alone (the scripted client, no learning): " + ", ".join(
                 f"{game}{tick} {info['limit'][game]:,.0f} agent-steps/s" for game, tick in (
                     ("fast Chase", ""),
                     ("medium Chase", f" (--tick_cost_ms={info.get('medium_tick_cost_ms', MEDIUM_TICK_COST_MS)})"),
                     ("slow Chase", f" (--tick_cost_ms={info['tick_cost_ms']})")) if game in info["limit"]) + ".",
             f"Each run capped at {info['max_minutes']:g} minutes. Medians over seeds; agent-steps/s and times "
             f"are from starting the trainer's process (start-up included).", ""]
    for game, runs_by_row in results.items():
        lines += [f"### {game}: {info['budgets'][game]:,} agent-steps a run", ""] + row_lines(runs_by_row)
        lines += ["", f"The return (mean of the last {WINDOW} episodes) by wall-clock time since the start, median over "
                  "seeds (-: a seed had no episode yet; a run that had ended: its last 100):", ""]
        lines += time_lines(runs_by_row) + [""]
        lines += ["Where the time to 90% goes (medians over seeds): the seconds to 90% are about the start-up, "
                  "then the agent-steps the trainer needed to reach it at its speed:", ""] + why_lines(runs_by_row) + [""]
        lines += ["Seed by seed (ranges over seeds; the table of benchmarks/README.md):", ""] + seed_lines(runs_by_row) + [""]
    lines += ["### Margins (set in the docstring before the first timed run)", ""]
    for mine in (row for row in MINE if any(row in runs_by_row for runs_by_row in results.values())):
        lines += margin_lines(results, list(results), mine) + [""]
    table = "\n".join(lines) + "\n"
    (out / "results").mkdir(parents=True, exist_ok=True)
    (out / "results" / f"{name}.md").write_text(table)
    print(table)
    plot(out / "figures" / f"{name}.png", results, info, command_line)


def draw_seeds(ax, label, curves):
    """On ax, the mean over seeds of each seed's running mean of its last WINDOW returns against minutes, with the
    min-max band over seeds, from the minute every seed has an episode to the minute the first seed ends."""
    first, last = max(minutes[0] for minutes, _ in curves), min(minutes[-1] for minutes, _ in curves)
    grid = np.linspace(first, max(first, last), 200)
    values = np.stack([np.interp(grid, minutes, running_mean(returns, WINDOW)) for minutes, returns in curves])
    line, = ax.plot(grid, values.mean(axis=0), label=f"{label} ({len(curves)} seed{'s' * (len(curves) > 1)})")
    ax.fill_between(grid, values.min(axis=0), values.max(axis=0), color=line.get_color(), alpha=0.2)


def plot(path, results, info, command_line):
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(6.4 * len(results), 5.4), squeeze=False)
    for ax, (game, runs_by_row) in zip(axes[0], results.items()):
        for row, runs in runs_by_row.items():
            curves = [(np.asarray(r["curve"][0]) / 60, np.asarray(r["curve"][1])) for r in runs
                      if not r["failed"] and len(r["curve"][1])]
            if curves:
                label = ROWS[row][0].split(":")[0]  # the slow game's flags are in the table
                draw_seeds(ax, f"{label}{'' if ROWS[row][1] == 'unpaced' else ', paced'}", curves)
        ax.axhline(info["scripted"], color="gray", linestyle="--", linewidth=1, label="scripted near-optimal")
        ax.axhline(info["threshold"], color="gray", linestyle=":", linewidth=1, label=f"{SHARE:.0%} of it")
        ax.set_xscale("log")  # runs of 0.5 and 15 minutes on one axis
        ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1, 2, 5)))
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:g}"))
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("minutes since the trainer started (log scale)")
        ax.set_ylabel(f"episodic return (mean of the last {WINDOW})")
        ax.set_title(f"{game}, {info['budgets'][game]:,} agent-steps a run\nline: mean over seeds; band: min-max",
                     fontsize=9)
        ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()  # every panel has the same rows
    fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, 0.04), ncol=min(3, len(labels)), fontsize=8)
    save_figure(fig, path, command_line, legend_rows=-(-len(labels) // 3) + 1)


# ------------------------------------------------------------------------------------------------
# The whole benchmark
# ------------------------------------------------------------------------------------------------
def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--setup", action="store_true", help="build Sample Factory's venv and exit")
    p.add_argument("--tiny", action="store_true",
                   help="4,096 agent-steps a run, seed 1, 32 greedy episodes, no Sample Factory")
    p.add_argument("--seeds", type=int, default=3, help="seeds 1..N")
    p.add_argument("--fast-budget", type=int, default=300_000, help="agent-steps a run on fast Chase")
    p.add_argument("--medium-budget", type=int, default=150_000, help="agent-steps a run on medium Chase")
    p.add_argument("--slow-budget", type=int, default=100_000, help="agent-steps a run on slow Chase")
    p.add_argument("--medium-tick-cost-ms", type=int, default=MEDIUM_TICK_COST_MS,
                   help="medium Chase's --tick_cost_ms")
    p.add_argument("--tick-cost-ms", type=int, default=TICK_COST_MS, help="slow Chase's --tick_cost_ms")
    p.add_argument("--trainers", default=None,
                   help=f"rows to run, of {', '.join(ROWS)} (default: all; --tiny: all but Sample Factory's)")
    p.add_argument("--games", default="fast,medium,slow", help="fast, medium, slow, or several with commas")
    p.add_argument("--eval-episodes", type=int, default=320, help="greedy episodes of each export")
    p.add_argument("--max-minutes", type=float, default=15, help="a run still going then is stopped (Ctrl-C)")
    p.add_argument("--resume", action="store_true",
                   help="reuse the runs an earlier invocation finished with the same game, row, seed and budget "
                        "(kept in .cache/godot_trainers/runs); the rest run")
    p.add_argument("--out", default=str(REPO / "benchmarks"), help="writes results/ and figures/ under it")
    p.add_argument("--keep-folders", action="store_true", help="keep each run's folder (its logs, model, export)")
    p.add_argument("--sb3-run", help=argparse.SUPPRESS)  # a child process: one SB3 run, its config as JSON
    args = p.parse_args(argv)
    if args.sb3_run:
        return sb3_run(json.loads(args.sb3_run))
    if args.setup:
        return setup()
    if args.tiny:
        args.seeds, args.eval_episodes = 1, 32
        args.fast_budget = args.medium_budget = args.slow_budget = 4096
        if args.trainers is None:
            args.trainers = ",".join(row for row in ROWS if row not in SAMPLE_FACTORY)
    rows = [row.strip() for row in (args.trainers or ",".join(ROWS)).split(",") if row.strip()]
    unknown = [row for row in rows if row not in ROWS]
    if unknown:
        p.error(f"unknown trainers {unknown}: pick from {', '.join(ROWS)}")
    games = {"fast": "fast Chase", "medium": "medium Chase", "slow": "slow Chase"}
    unknown = [g for g in args.games.split(",") if g.strip() not in games]
    if unknown:
        p.error(f"unknown games {unknown}: pick from {', '.join(games)}")
    chosen = [games[g.strip()] for g in args.games.split(",")]
    tick_costs = {"medium Chase": args.medium_tick_cost_ms, "slow Chase": args.tick_cost_ms}
    missing = missing_parts(rows)
    if missing:
        sys.exit(f"godot_trainers.py: error: {'; '.join(missing)}")

    become_subreaper()
    keep = REPO / ".cache" / "godot_trainers"
    keep.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="games-", dir=keep))
    paths = {"fast Chase": FAST, "medium Chase": slow_game(work, args.medium_tick_cost_ms, "medium"),
             "slow Chase": slow_game(work, args.tick_cost_ms)}
    scripted, limit_fast = scripted_client(FAST, 3000 if not args.tiny else 300)
    info = dict(scripted=scripted, threshold=SHARE * scripted, limit={"fast Chase": limit_fast},
                scripted_episodes="the episodes of 3,000 steps of 32 agents" if not args.tiny else "the episodes of 300 steps of 32 agents",
                tick_cost_ms=args.tick_cost_ms, medium_tick_cost_ms=args.medium_tick_cost_ms,
                max_minutes=args.max_minutes, seeds=f"1-{args.seeds}",
                budgets={"fast Chase": args.fast_budget, "medium Chase": args.medium_budget,
                         "slow Chase": args.slow_budget},
                godot="godot3-server " + subprocess.run(["godot3-server", "--version"], capture_output=True,
                                                        text=True).stdout.strip())
    for game, steps in (("medium Chase", 300), ("slow Chase", 60)):
        if game in chosen:
            info["limit"][game] = scripted_client(paths[game], steps)[1]
    print(f"scripted return {scripted:.2f}, the games alone: {info['limit']}", flush=True)

    results = {game: {row: [] for row in rows} for game in chosen}
    (keep / "runs").mkdir(exist_ok=True)
    for game in chosen:
        budget = info["budgets"][game]
        for seed in range(1, args.seeds + 1):  # the trainers interleaved, so that drift in the machine hits all
            for row in rows:
                tick = f"-tick{tick_costs[game]}" if game in tick_costs else ""
                record = keep / "runs" / f"{game.split()[0]}{tick}-{row}-seed{seed}-{budget}.json"
                if args.resume and record.exists():  # a run that finished in an earlier invocation
                    result = json.loads(record.read_text())
                else:
                    result = run_one(row, paths[game], seed, budget, info["threshold"], args, keep)
                    record.write_text(json.dumps(result))
                results[game][row].append(result)
                print(f"{game}, {row}, seed {seed}: {result['steps'] / result['seconds']:,.0f} agent-steps/s, "
                      f"{result['cpu']:.0f} CPU-s, seconds to 90%: {cell(60 * late(result), 1)}, "
                      f"end {cell(result['final'], 2)}, greedy {cell(result['greedy'], 2)}"
                      f"{' (stopped at the cap)' if result['capped'] else ''}"
                      f"{' FAILED' if result['failed'] else ''}", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    for run in (r for by_row in results.values() for runs in by_row.values() for r in runs):
        # against this invocation's threshold, runs kept from earlier ones (--resume) too
        times, returns, played = (np.asarray(x) for x in run["curve"])
        reached = first_reach(times, returns, info["threshold"])
        run["minutes_to_threshold"] = None if reached is None else reached / 60
        run["steps_to_threshold"] = first_reach(played, returns, info["threshold"])
    name = "godot_trainers_tiny" if args.tiny else "godot_trainers"
    write_outputs(name, Path(args.out), results, info, argv)
    raw = Path(args.out) / "results" / f"{name}_runs.json"  # the runs without their curves, for a reader's check
    raw.write_text(json.dumps({game: {row: [{k: v for k, v in r.items() if k != "curve"} for r in runs]
                                      for row, runs in by_row.items()} for game, by_row in results.items()}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
