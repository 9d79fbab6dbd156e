"""PPO on a Godot game with Ray RLlib: several env runners, each launching its own game.

    pip install -r requirements-scale.txt                      # Ray RLlib, beside requirements.txt
    python scale/ppo_rllib_godot.py --env-path godot/chase/chase_discrete.x86_64 --num-env-runners 2
    tensorboard --logdir runs                                  # the charts ppo_godot.py writes

ppo_godot.py steps its --n-parallel games from one loop in one process; RLlib spreads them over
worker processes, and over machines. Each env runner (a Ray actor) launches one game on port
--port + its index (1, 2, ...), collects --num-steps steps per agent and sends them to the driver,
which runs RLlib's PPO update (read ppo_godot.py for the algorithm itself). On a cluster (`ray start
--head` on one machine, `ray start --address=HEAD_IP:6379` on the others, the game at the same path
on each), run this from any of its machines with --address auto.

The games go through godot-rl's RLlib wrapper (godot_rl.wrappers.ray_wrapper.RayVectorGodotEnv);
GodotRayEnv below fixes what breaks with Ray 2.48, each fix commented where it is made.
"""
import argparse
import contextlib
import logging
import os
import shutil
import signal
import sys
import time

import gymnasium as gym
import numpy as np
from torch.utils.tensorboard import SummaryWriter

try:
    import ray
    from godot_rl.core.godot_env import GodotEnv
    from godot_rl.wrappers.ray_wrapper import RayVectorGodotEnv
    from ray import tune
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.tune.logger import NoopLogger
except ImportError as e:
    sys.exit(f"error: {e.msg}: Ray RLlib is an optional install: pip install -r requirements-scale.txt")


# ================================================================================================
# 1. Arguments (ppo_godot.py's names and defaults, where RLlib has the same setting)
# ================================================================================================
def fail(message):
    """Bad input: one line on stderr and argparse's exit code 2, no usage text."""
    print(f"{os.path.basename(__file__)}: error: {message}", file=sys.stderr)
    sys.exit(2)


def str2bool(value):
    if value.lower() in ("true", "yes", "1"):
        return True
    if value.lower() in ("false", "no", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {value!r}")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.error = fail
    p.add_argument("--exp-name", default="ppo_rllib_godot", help="the name of this experiment")
    p.add_argument("--log-dir", default="runs", help="the folder of the runs' log folders")
    p.add_argument("--seed", type=int, default=1, help="seed of RLlib; env runner i seeds its game with seed + i")
    p.add_argument("--total-timesteps", type=int, default=300000, help="agent steps over all agents")
    p.add_argument("--learning-rate", type=float, default=1e-3, help="Adam's step size")
    p.add_argument("--num-steps", type=int, default=64, help="steps per agent per rollout")
    p.add_argument("--train-batch-size", type=int, default=2048,
                   help="agent steps per update (rollouts are collected until there are this many)")
    p.add_argument("--num-minibatches", type=int, default=4, help="minibatches per epoch")
    p.add_argument("--update-epochs", type=int, default=4, help="passes over each batch")
    p.add_argument("--gamma", type=float, default=0.99, help="discount factor")
    p.add_argument("--gae-lambda", type=float, default=0.95, help="lambda of GAE")
    p.add_argument("--clip-coef", type=float, default=0.2, help="epsilon of L^CLIP")
    p.add_argument("--ent-coef", type=float, default=0.01, help="entropy bonus weight")
    p.add_argument("--vf-coef", type=float, default=0.5, help="value loss weight")
    p.add_argument("--max-grad-norm", type=float, default=0.5, help="clip the global gradient norm")
    p.add_argument("--resume", default=None, help="an RLlib checkpoint folder to go on from")
    p.add_argument("--save-model", default=True, type=str2bool, nargs="?", const=True,
                   help="keep RLlib's checkpoint in {log_dir}/{run_name}/checkpoint: every --checkpoint-minutes, "
                        "at the end and at any stop; false: only at a stop")
    p.add_argument("--checkpoint-minutes", type=float, default=5,
                   help="minutes between two checkpoints while training (0: after every update)")
    # The games
    p.add_argument("--env-path", required=True, help="the exported game (a .x86_64 file on Linux)")
    p.add_argument("--num-env-runners", type=int, default=2, help="worker processes, one game each")
    p.add_argument("--port", type=int, default=11008, help="env runner i launches its game on port + i")
    p.add_argument("--speedup", type=int, default=None, help="game time runs this many times faster")
    p.add_argument("--framerate", type=int, default=60,
                   help="fixed physics frames per game second (Godot's --fixed-fps): the game runs as "
                        "fast as training allows instead of in real time; 0 = real time")
    p.add_argument("--action-repeat", type=int, default=None, help="physics frames per action")
    p.add_argument("--connect-timeout", type=float, default=60, help="seconds to wait for each game")
    # The Ray cluster
    p.add_argument("--address", default=None,
                   help="a running Ray cluster (auto, or HEAD_IP:6379); default: start a local one")
    p.add_argument("--num-cpus", type=int, default=None,
                   help="CPUs the local Ray cluster may use (default: all), one per env runner")
    args = p.parse_args(argv)
    if not os.path.isfile(args.env_path):
        p.error(f"--env-path {args.env_path}: no such file")
    for name in ("total_timesteps", "num_steps", "train_batch_size", "num_minibatches",
                 "update_epochs", "num_env_runners"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if not args.checkpoint_minutes >= 0:  # nan too
        p.error(f"--checkpoint-minutes must be 0 (after every update) or more, got {args.checkpoint_minutes}")
    if args.train_batch_size % args.num_minibatches:
        p.error("--train-batch-size must be a multiple of --num-minibatches")
    cpus = args.num_cpus or os.cpu_count()
    if not args.address and args.num_env_runners > cpus:  # Ray would wait for CPUs forever
        p.error(f"--num-env-runners {args.num_env_runners} needs as many CPUs; the local Ray cluster has "
                f"{cpus} (a higher --num-cpus shares the cores)")
    if args.resume and not os.path.isdir(args.resume):
        p.error(f"--resume {args.resume}: no such checkpoint folder")
    args.env_path = os.path.abspath(args.env_path)  # env runners may start in another folder
    return args


# ================================================================================================
# 2. Environment: one game per env runner, its agents the sub-envs of an RLlib VectorEnv
# ================================================================================================
class GodotRayEnv(RayVectorGodotEnv):
    """godot-rl's wrapper, with its breaks on Ray 2.48 fixed.

    Episode ends: RLlib resets a finished sub-env alone (reset_at) and starts its next episode at
    once, so the game must hand over the final observation and the next first one together. The
    Chase game does with --autoreset_mode=same_step (the final one in info["final_obs"]); a plugin
    game resets on the spot and sends no final observation, so its ends all count as terminal. A
    game that resets on the step after (info["autoreset"], Chase's default) would give RLlib a step
    that belongs to no episode: refused.
    """

    def __init__(self, connect_timeout=60, **kwargs):
        GodotEnv.DEFAULT_TIMEOUT = connect_timeout  # how long GodotEnv waits for its game to connect
        try:
            super().__init__(**kwargs)  # launches the game and waits for it
        except Exception as e:  # end a game that started but never connected, and say which
            for pid in child_pids():
                with contextlib.suppress(OSError):
                    os.killpg(pid, signal.SIGKILL)
            raise RuntimeError(f"the game on port {kwargs['port']} did not connect: {e}") from None
        # godot-rl declares every vector observation in [-1, 1]; the protocol sends no bounds
        # (Chase's to_target spans [-2, 2]) and RLlib rejects observations outside the space
        self.observation_space = gym.spaces.Dict({
            key: space if "2d" in key else gym.spaces.Box(-np.inf, np.inf, space.shape, space.dtype)
            for key, space in self.observation_space.items()})
        cameras = [key for key in self.observation_space if "2d" in key]
        if cameras:  # godot-rl reshapes a camera's H x W x C bytes as the [C, H, W] the plugin declares
            self.close()
            raise RuntimeError(f"the game observes through a camera ({', '.join(cameras)}): this script trains "
                               f"vector observations only; train camera games with ppo_godot.py")

    def vector_reset(self, *, seeds=None, options=None):
        obs, infos = self._env.reset()
        self.obs = [self.as_arrays(o) for o in obs]
        return self.obs, infos

    def vector_step(self, actions):
        # actions[agent][action key], in the order of godot-rl's (sorted) action space
        obs, rewards, dones, _, infos = self._env.step(np.array(actions, dtype=object), order_ij=True)
        self.obs = [self.as_arrays(o) for o in obs]  # a finished agent's is its next first one
        step_obs, terminateds, truncateds = list(self.obs), [], []
        for i, (done, info) in enumerate(zip(dones, infos)):
            if info.get("autoreset"):
                raise RuntimeError("the game resets a finished agent on the step after its end "
                                   "(info.autoreset): launch it with --autoreset_mode=same_step")
            # godot-rl reports every end as both; the game's info.truncated tells a time-out
            truncated = bool(done) and bool(info.get("truncated", False))
            terminateds.append(bool(done) and not truncated)
            truncateds.append(truncated)
            if done and "final_obs" in info:  # RLlib bootstraps a time-out from V(final observation)
                step_obs[i] = self.as_arrays(info["final_obs"])
        return step_obs, [float(r) for r in rewards], terminateds, truncateds, infos

    def reset_at(self, index=None, *, seed=None, options=None):
        return self.obs[index], {}  # the game has reset the agent already

    def as_arrays(self, observation):  # JSON gives lists, which RLlib's preprocessors refuse
        return {key: np.asarray(value, dtype=self.observation_space[key].dtype)
                for key, value in observation.items()}

    def get_sub_environments(self):  # what RLlib 2.48 closes on stop (the wrapper defines an older name)
        return [self]

    def close(self):  # godot-rl's close() asks the game to quit; wait until it has
        with contextlib.suppress(OSError):  # a game that died already cannot be asked
            self._env.close()
        if self._env.proc is not None:
            try:
                self._env.proc.wait(timeout=10)
            except Exception:
                self._env.proc.kill()
                self._env.proc.wait()


def child_pids():
    """The processes this one started (a game leads a session and process group of its own)."""
    pids = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == os.getpid():
                    pids.append(int(entry))
        except (OSError, ValueError, IndexError):
            continue
    return pids


def make_env(env_config):
    """Run in each env runner: launch its game on port base_port + worker_index."""
    game = {key: value for key, value in env_config.items()
            if key not in ("base_port", "seed", "connect_timeout")}  # the rest goes to GodotEnv
    return GodotRayEnv(config=game, port=env_config["base_port"] + env_config.worker_index,
                       seed=env_config["seed"] + env_config.worker_index,
                       connect_timeout=env_config["connect_timeout"])


# ================================================================================================
# 3. RLlib's PPO, set like ppo_godot.py
# ================================================================================================
def build_algorithm(args):
    tune.register_env("godot", make_env)
    config = (
        PPOConfig()
        # godot-rl's wrapper is an old-API-stack VectorEnv; RLlib 2.48 defaults to the new stack
        .api_stack(enable_rl_module_and_learner=False, enable_env_runner_and_connector_v2=False)
        .framework("torch")
        .environment("godot", env_config={
            "env_path": args.env_path, "show_window": False, "speedup": args.speedup,
            "action_repeat": args.action_repeat, "framerate": args.framerate or None,
            "autoreset_mode": "same_step",  # see GodotRayEnv; other games ignore the flag
            "base_port": args.port, "seed": args.seed, "connect_timeout": args.connect_timeout})
        .env_runners(num_env_runners=args.num_env_runners, rollout_fragment_length=args.num_steps,
                     # on the old stack, this keeps the driver from launching a game that never plays
                     create_local_env_runner=False)
        .training(lr=args.learning_rate, gamma=args.gamma, lambda_=args.gae_lambda,
                  train_batch_size=args.train_batch_size, num_epochs=args.update_epochs,
                  minibatch_size=args.train_batch_size // args.num_minibatches,
                  clip_param=args.clip_coef, entropy_coeff=args.ent_coef,
                  vf_loss_coeff=args.vf_coef, grad_clip=args.max_grad_norm,
                  kl_coeff=0.0,  # RLlib adds an adaptive KL penalty to L^CLIP by default; PPO-clip has none
                  model={"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh"})  # ppo_godot's Agent
        .fault_tolerance(restart_failed_env_runners=False)  # a game that fails ends the run
        .debugging(seed=args.seed)
    )
    return config.build_algo(logger_creator=lambda cfg: NoopLogger(cfg, ""))  # we log, below


# ================================================================================================
# 4. Training loop, logged under ppo_godot.py's TensorBoard tags
# ================================================================================================
def log(writer, result, global_step, sps):
    runners = result["env_runners"]
    new_episodes = runners["episodes_this_iter"]  # hist_stats: RLlib's last 100 episodes
    returns = runners["hist_stats"]["episode_reward"][-new_episodes:] if new_episodes else []
    lengths = runners["hist_stats"]["episode_lengths"][-new_episodes:] if new_episodes else []
    for episodic_return, episodic_length in zip(returns, lengths):  # one point per episode
        writer.add_scalar("charts/episodic_return", episodic_return, global_step)
        writer.add_scalar("charts/episodic_length", episodic_length, global_step)
    stats = result["info"]["learner"]["default_policy"]["learner_stats"]
    writer.add_scalar("charts/SPS", sps, global_step)
    writer.add_scalar("charts/learning_rate", stats["cur_lr"], global_step)
    writer.add_scalar("losses/value_loss", stats["vf_loss"], global_step)
    writer.add_scalar("losses/policy_loss", stats["policy_loss"], global_step)
    writer.add_scalar("losses/entropy", stats["entropy"], global_step)
    writer.add_scalar("losses/approx_kl", stats["kl"], global_step)
    writer.add_scalar("losses/explained_variance", stats["vf_explained_var"], global_step)
    # where the time goes, in ms: per step of an env runner (all its game's agents; env_wait is the
    # game, the rest RLlib's bookkeeping), and per iteration
    for name in ("env_wait_ms", "raw_obs_processing_ms", "inference_ms", "action_processing_ms"):
        if f"mean_{name}" in runners["sampler_perf"]:  # empty while no rollout has been timed
            writer.add_scalar(f"rllib/{name}", runners["sampler_perf"][f"mean_{name}"], global_step)
    for name in ("sample_time_ms", "learn_time_ms"):
        if name in result["timers"]:
            writer.add_scalar(f"rllib/{name}", result["timers"][name], global_step)
    print(f"global_step={global_step}, episodic_return={np.mean(returns) if returns else float('nan'):.2f}, "
          f"SPS={sps}", flush=True)


def save(algo, run_dir):
    """RLlib's checkpoint, a folder, written beside the last one and swapped in: a kill during a save
    leaves a whole checkpoint (`checkpoint`, or `checkpoint.new` when cut between the two renames)."""
    path = os.path.abspath(os.path.join(run_dir, "checkpoint"))
    for left in (path + ".new", path + ".old"):  # what a save cut short by a stop left behind
        shutil.rmtree(left, ignore_errors=True)
    algo.save(path + ".new")
    if os.path.isdir(path):
        os.rename(path, path + ".old")
    os.rename(path + ".new", path)
    shutil.rmtree(path + ".old", ignore_errors=True)
    return path


STOP_SIGNALS = []  # the signals that stopped the run


def stop_on_kill(signum, frame):
    """A kill stops the run as Ctrl-C does, raised as KeyboardInterrupt: Ray passes that on unchanged
    from inside its waits (ray.get), while a SystemExit raised there comes out as SystemExit(1)."""
    STOP_SIGNALS.append(signum)
    raise KeyboardInterrupt


def stop_code(e):
    """The exit code of a run that e stopped: 128 + the signal (130 Ctrl-C, 143 kill), else SystemExit's."""
    if STOP_SIGNALS:
        return 128 + STOP_SIGNALS[0]
    return e.code if isinstance(e, SystemExit) else 128 + signal.SIGINT


def main(argv=None):
    args = parse_args(argv)
    run_name = f"godot__{args.exp_name}__{args.seed}__{int(time.time())}"
    run_dir = os.path.join(args.log_dir, run_name)
    writer = SummaryWriter(run_dir)
    writer.add_text("hyperparameters", "|param|value|\n|-|-|\n"
                    + "\n".join(f"|{k}|{v}|" for k, v in vars(args).items()))

    logging.getLogger("ray.rllib.utils.actor_manager").setLevel(logging.CRITICAL)  # we say the cause
    algo, exit_code = None, 0
    try:
        if args.address:
            ray.init(address=args.address, log_to_driver=False)
        else:  # a local cluster, its services on loopback only
            ray.init(num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False,
                     _node_ip_address="127.0.0.1")
        # a kill saves the model, like Ctrl-C; set after ray.init, whose own handler aborts the process
        signal.signal(signal.SIGTERM, stop_on_kill)
        algo = build_algorithm(args)
        if args.resume:
            algo.restore(os.path.abspath(args.resume))
        start_step = global_step = algo._counters["num_env_steps_sampled"]  # > 0 when resumed
        start_time = last_checkpoint = time.time()
        while global_step < args.total_timesteps:
            result = algo.train()
            global_step = result["num_env_steps_sampled_lifetime"]
            log(writer, result, global_step, int((global_step - start_step) / (time.time() - start_time)))
            if args.save_model and time.time() - last_checkpoint >= 60 * args.checkpoint_minutes:
                writer.flush()
                print(f"checkpoint at global_step={global_step} saved to {save(algo, run_dir)}", flush=True)
                last_checkpoint = time.time()
    except (KeyboardInterrupt, SystemExit) as e:  # Ctrl-C (130) or a kill (143)
        print("stopped: saving the model", file=sys.stderr)
        exit_code = stop_code(e)
    except Exception as e:  # a game or a worker failed: Ray's message ends with the cause
        exit_code = "error: " + (str(e).strip().splitlines() or [type(e).__name__])[-1]
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # let the save and the shutdown finish
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if algo is not None:
            if args.save_model or exit_code:  # no run loses what it has learned
                print(f"model saved to {save(algo, run_dir)}")
            algo.stop()  # each env runner closes its game
        writer.close()
        ray.shutdown()
    sys.exit(exit_code)


if __name__ == "__main__":
    main()
