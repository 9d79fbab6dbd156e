"""PPO on a Godot game with Ray RLlib: several env runners, each launching its own game.

    pip install -r requirements-scale.txt                      # Ray RLlib, beside requirements.txt
    python scale/ppo_rllib_godot.py --env-path godot/chase/chase_discrete.x86_64 --num-env-runners 2
    tensorboard --logdir runs                                  # the charts ppo_godot.py writes

ppo_godot.py steps its --n-parallel games from one loop in one process; RLlib spreads them over
worker processes, and over machines. Each env runner (a Ray actor) launches one game on port
--port + its index (1, 2, ...), or on a free port without --port, collects --num-steps steps per
agent and sends them to the driver, which runs RLlib's PPO update (read ppo_godot.py for the algorithm
itself). On a cluster (`ray start --head` on one machine, `ray start --address=HEAD_IP:6379` on the
others, the game at the same path on each), run this from any of its machines with --address auto.

The games go through godot-rl's RLlib wrapper (godot_rl.wrappers.ray_wrapper.RayVectorGodotEnv);
GodotRayEnv below fixes what breaks with Ray 2.48, each fix commented where it is made. A game whose
agents have several policy names (agent_policy_names, like the Chase game's tag mode) trains one RLlib
policy per name instead, through GodotMultiAgentEnv, as godot-rl's rllib example maps agents to
policies; --onnx-export-path writes one model per policy then. Those policies all learn at once:
there is no self-play here (no snapshots, no turns, no rating; ppo_godot_self_play.py has them).
RLlib offers the parts (policies_to_train, a mapping function that can send an agent to a frozen
copy, Algorithm.add_module to add one while training) and an example that assembles them for one
shared policy and a win read from a final reward of +1 (docs/beyond-one-machine.md).
"""
import argparse
import contextlib
import io
import logging
import os
import shutil
import signal
import socket
import sys
import time
import warnings

import gymnasium as gym
import numpy as np
from torch.utils.tensorboard import SummaryWriter

try:
    import ray
    import torch
    from godot_rl.core.godot_env import GodotEnv
    from godot_rl.wrappers.ray_wrapper import RayVectorGodotEnv
    from ray import tune
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.env.multi_agent_env import MultiAgentEnv
    from ray.rllib.policy.policy import PolicySpec
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
    p.add_argument("--onnx-export-path", default=None,
                   help="also export the policy for the Godot RL Agents plugin at the end (ppo_godot.py's layout); "
                        "a game of several policies: one file each, model_<name>.onnx")
    # The games
    p.add_argument("--env-path", required=True, help="the exported game (a .x86_64 file on Linux)")
    p.add_argument("--num-env-runners", type=int, default=2, help="worker processes, one game each")
    p.add_argument("--port", type=int, default=None,
                   help="env runner i launches its game on port + i; unset: each on a free port the system picks")
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
    if args.port is not None and not 0 < args.port <= 65535 - args.num_env_runners:
        p.error(f"--port must be 1 to {65535 - args.num_env_runners} (the games take port + 1, ..., port + "
                f"{args.num_env_runners}), got {args.port}")
    if args.resume and not os.path.isdir(args.resume):
        p.error(f"--resume {args.resume}: no such checkpoint folder")
    if args.onnx_export_path and not args.onnx_export_path.endswith(".onnx"):
        args.onnx_export_path = os.path.splitext(args.onnx_export_path)[0] + ".onnx"
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

    def __init__(self, port=None, seed=0, config=None, connect_timeout=60):
        # The wrapper's __init__ with the game launched by launch_game, which listens before the game starts
        # (the wrapper's GodotEnv binds the port after: another run could take it in between)
        self._env = launch_game(port, seed, connect_timeout, **config)  # launches the game and waits for it
        super(RayVectorGodotEnv, self).__init__(observation_space=self._env.observation_space,
                                                action_space=self._env.action_space, num_envs=self._env.num_envs)
        try:
            self.observation_space = rllib_observation_space(self.observation_space)
        except RuntimeError:
            self.close()
            raise

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


def game_did_not_connect(port, error):
    """The error of a game that never connected, once the games this process started are ended."""
    for pid in child_pids():
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
    return RuntimeError(f"the game on port {port} did not connect: {error}")


def rllib_observation_space(space):
    """A game's observation space as RLlib takes it. godot-rl declares every vector observation in
    [-1, 1]; the protocol sends no bounds (Chase's to_target spans [-2, 2]) and RLlib rejects
    observations outside the space: unbounded here. A camera is refused (godot-rl reshapes its
    H x W x C bytes as the [C, H, W] the plugin declares)."""
    cameras = [key for key in space.spaces if "2d" in key]
    if cameras:
        raise RuntimeError(f"the game observes through a camera ({', '.join(cameras)}): this script trains "
                           f"vector observations only; train camera games with ppo_godot_camera.py")
    return gym.spaces.Dict({key: gym.spaces.Box(-np.inf, np.inf, sub.shape, sub.dtype) for key, sub in space.items()})


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


def runner_port(env_config):
    """Env runner i's game's port: base_port + i, or None (a free port) without --port."""
    return None if env_config["base_port"] is None else env_config["base_port"] + env_config.worker_index


def make_env(env_config):
    """Run in each env runner: launch its game on port base_port + worker_index, or a free port."""
    game = {key: value for key, value in env_config.items()
            if key not in ("base_port", "seed", "connect_timeout")}  # the rest goes to GodotEnv
    return GodotRayEnv(config=game, port=runner_port(env_config),
                       seed=env_config["seed"] + env_config.worker_index,
                       connect_timeout=env_config["connect_timeout"])


# ------------------------------------------------------------------------------------------------
# Several policy names: the game as an RLlib MultiAgentEnv, one RLlib policy per name
# ------------------------------------------------------------------------------------------------
class DeclaringGodotEnv(GodotEnv):
    """GodotEnv, keeping the env_info message: its action spaces sort the actions by name, and the
    plugin reads an ONNX model's output in the order the game declares them. It accepts the game on
    the socket launch_game listens on (GodotEnv would bind its own after launching the game)."""

    def __init__(self, listener, **kwargs):
        self.listener = listener
        super().__init__(**kwargs)

    def _start_server(self):
        self.listener.settimeout(GodotEnv.DEFAULT_TIMEOUT)
        connection, _ = self.listener.accept()
        return connection

    def _get_json_dict(self):
        message = super()._get_json_dict()
        if message.get("type") == "env_info":
            self.env_info = message
        return message


def launch_game(port, seed, connect_timeout, **game):
    """A GodotEnv, which launches the game and reads its spaces, or RuntimeError naming the port (the
    game that started but never connected ended). The socket listens before the game starts, on port or
    (port None) on a free port that the system picks, and the game is told that port: no other run can
    take it in between."""
    GodotEnv.DEFAULT_TIMEOUT = connect_timeout  # how long GodotEnv waits for its game to connect
    with socket.socket() as listener:  # closed once the game is connected, or is not
        # the port is this run's alone: Windows (where SO_EXCLUSIVEADDRUSE is) lets SO_REUSEADDR share it
        listener.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_EXCLUSIVEADDRUSE", socket.SO_REUSEADDR), 1)
        try:
            listener.bind(("127.0.0.1", port or 0))
        except OSError as e:
            raise RuntimeError(f"port {port} is already in use ({e.strerror}): another run or game holds it; "
                               f"pick another --port, or leave it out for free ones") from None
        listener.listen(1)
        port = listener.getsockname()[1]
        try:
            return DeclaringGodotEnv(listener, port=port, seed=seed, **game)
        except Exception as e:
            raise game_did_not_connect(port, e) from None


def read_policies(game):
    """{policy name: (observation space, action space, declared actions [(key, kind, size)])} of a
    connected GodotEnv; each policy's spaces are its first agent's."""
    declared = game.env_info["action_space"]
    policies = {}
    for agent, name in enumerate(game.agent_policy_names):
        if name in policies:
            continue
        heads = declared[agent] if isinstance(declared, list) else declared
        policies[name] = (rllib_observation_space(game.observation_spaces[agent]), game.action_spaces[agent],
                          [(key, head["action_type"], int(head["size"])) for key, head in heads.items()])
    return policies


def probe_game(args):
    """The game's policies, from a game launched once on port + 1 (or a free port) before any env runner
    starts, then closed: RLlib needs each policy's spaces before it builds the runners."""
    with contextlib.redirect_stdout(io.StringIO()):  # GodotEnv prints the spaces
        game = launch_game(args.port and args.port + 1, args.seed, args.connect_timeout, env_path=args.env_path,
                           show_window=False, framerate=args.framerate or None)
    try:
        return game.agent_policy_names, read_policies(game)
    finally:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(OSError):
            game.close()
        if game.proc is not None:
            game.proc.wait(timeout=10)


class GodotMultiAgentEnv(MultiAgentEnv):
    """A game of several policy names, for RLlib's multi-agent PPO. Game agent i's k-th episode is
    the RLlib agent "i/k", which policy_mapping_fn maps to agent i's policy name: each game agent's
    episodes end on their own, so an RLlib agent ends with its episode (terminated, or truncated by a
    time-out) and the next episode joins as a new agent, while RLlib's episode (__all__) never ends.
    The three ways a game resets a finished agent are read as ppo_godot_multi_policy.py reads them: on the next
    step (info.autoreset: that step only resets it), on the same step with info.final_obs, or on the
    spot like the plugin (the end counts as terminal). Finished episodes wait in `finished` for the
    driver, which logs them per policy (RLlib reports an episode's return only when __all__ ends)."""

    def __init__(self, port, seed, connect_timeout, **game):
        super().__init__()
        self.game = launch_game(port, seed, connect_timeout, **game)
        self.names = self.game.agent_policy_names
        self.policies = read_policies(self.game)
        n = len(self.names)
        self.episode, self.waiting = [0] * n, [False] * n  # waiting: ended, the game resets it on the next step
        self.returns, self.lengths = np.zeros(n), np.zeros(n, dtype=int)
        self.obs, self.finished = None, []

    def agent(self, i):
        return f"{i}/{self.episode[i]}"

    def reset(self, *, seed=None, options=None):
        if self.obs is None:  # RLlib resets once; the game's agents then go on, each resetting itself
            self.game._send_as_json({"type": "reset"})
            self.obs = self.game._get_json_dict()["obs"]
        return {self.agent(i): self.as_arrays(i, obs) for i, obs in enumerate(self.obs) if not self.waiting[i]}, {}

    def step(self, action_dict):
        actions = [self.to_game(i, action_dict.get(self.agent(i))) for i in range(len(self.names))]
        self.game._send_as_json({"type": "action", "action": actions})
        reply = self.game._get_json_dict()
        self.obs = reply["obs"]
        obs, rewards, terminateds, truncateds = {}, {}, {"__all__": False}, {"__all__": False}
        infos = reply.get("info", [{}] * len(self.names))
        for i, (o, reward, done, info) in enumerate(zip(reply["obs"], reply["reward"], reply["done"], infos)):
            if self.waiting[i]:  # the step that only reset agent i: its next episode starts here
                self.waiting[i] = False
                obs[self.agent(i)] = self.as_arrays(i, o)
                continue
            agent = self.agent(i)
            rewards[agent] = float(reward)
            self.returns[i] += reward
            self.lengths[i] += 1
            if not done:
                obs[agent] = self.as_arrays(i, o)
                continue
            self.finished.append((self.names[i], float(self.returns[i]), int(self.lengths[i])))
            self.returns[i], self.lengths[i] = 0.0, 0
            self.episode[i] += 1
            if "autoreset" in info or "final_obs" in info:  # a time-out bootstraps from V(final observation)
                truncated = bool(info.get("truncated", False))
                obs[agent] = self.as_arrays(i, info.get("final_obs", o))
                self.waiting[i] = "autoreset" in info
            else:  # reset on the spot: o is the next episode's first, and the end counts as terminal
                truncated = False
                obs[agent] = self.as_arrays(i, o)
            terminateds[agent], truncateds[agent] = not truncated, truncated
            if not self.waiting[i]:
                obs[self.agent(i)] = self.as_arrays(i, o)
        return obs, rewards, terminateds, truncateds, {}

    def to_game(self, i, action):
        """Agent i's action as the game reads it; an agent with none (the step that resets it) stays put."""
        out = {}
        for key, kind, size in self.policies[self.names[i]][2]:
            value = None if action is None else action[key]
            if kind == "discrete":
                out[key] = 0 if value is None else int(value)
            else:  # clipped to [-1, 1], as the plugin clamps an ONNX model's actions
                out[key] = [0.0] * size if value is None else np.clip(value, -1.0, 1.0).tolist()
        return out

    def as_arrays(self, i, observation):  # JSON gives lists, which RLlib's preprocessors refuse
        return {key: np.asarray(observation[key], dtype=np.float32)
                for key in self.policies[self.names[i]][0].spaces}

    def pop_finished(self):
        finished, self.finished = self.finished, []
        return finished

    def close(self):
        with contextlib.suppress(OSError):  # a game that died already cannot be asked
            self.game.close()
        if self.game.proc is not None:
            try:
                self.game.proc.wait(timeout=10)
            except Exception:
                self.game.proc.kill()
                self.game.proc.wait()


def make_multi_agent_env(env_config):
    """Run in each env runner: launch its game on port base_port + worker_index, or a free port."""
    game = {key: value for key, value in env_config.items()
            if key not in ("base_port", "seed", "connect_timeout", "autoreset_mode")}
    return GodotMultiAgentEnv(port=runner_port(env_config),
                              seed=env_config["seed"] + env_config.worker_index,
                              connect_timeout=env_config["connect_timeout"], **game)


# ================================================================================================
# 3. RLlib's PPO, set like ppo_godot.py
# ================================================================================================
def build_algorithm(args, names, policies):
    """names: each game agent's policy name; policies: {name: spaces}. One name: the vector env, one
    RLlib policy; several: GodotMultiAgentEnv, an RLlib policy per name."""
    several = len(policies) > 1
    tune.register_env("godot", make_multi_agent_env if several else make_env)
    config = (
        PPOConfig()
        # godot-rl's wrapper is an old-API-stack VectorEnv; RLlib 2.48 defaults to the new stack
        .api_stack(enable_rl_module_and_learner=False, enable_env_runner_and_connector_v2=False)
        .framework("torch")
        .environment("godot", env_config={
            "env_path": args.env_path, "show_window": False, "speedup": args.speedup,
            "action_repeat": args.action_repeat, "framerate": args.framerate or None,
            "autoreset_mode": "same_step",  # see GodotRayEnv; other games ignore the flag
            "base_port": args.port, "seed": args.seed, "connect_timeout": args.connect_timeout},
            disable_env_checking=several)  # the check steps a game in the driver, where none runs
        # a game's agents step together: a fragment is --num-steps steps of each, counted in agent-steps
        .env_runners(num_env_runners=args.num_env_runners,
                     rollout_fragment_length=args.num_steps * len(names) if several else args.num_steps,
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
    if several:  # game agent i's RLlib agents ("i/k", its k-th episode) play agent i's policy
        config.multi_agent(policies={name: PolicySpec(observation_space=obs_space, action_space=action_space)
                                     for name, (obs_space, action_space, _) in policies.items()},
                           policy_mapping_fn=lambda agent_id, *_, **__: names[int(agent_id.split("/")[0])],
                           count_steps_by="agent_steps")
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
    writer.add_scalar("charts/SPS", sps, global_step)
    log_learner(writer, result["info"]["learner"]["default_policy"]["learner_stats"], global_step)
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


def log_learner(writer, stats, global_step, policy_tag=""):
    """One policy's update, under ppo_godot.py's tags (with several policies, /<name> at the end)."""
    for tag, key in (("charts/learning_rate", "cur_lr"), ("losses/value_loss", "vf_loss"),
                     ("losses/policy_loss", "policy_loss"), ("losses/entropy", "entropy"), ("losses/approx_kl", "kl"),
                     ("losses/explained_variance", "vf_explained_var")):
        writer.add_scalar(tag + policy_tag, stats[key], global_step)


def log_policies(writer, algo, result, global_step, sps):
    """A game of several policies: the episodes each env runner's game finished (GodotMultiAgentEnv), and
    each policy's update, under ppo_godot.py's tags for several policies."""
    finished = algo.env_runner_group.foreach_env_runner(
        lambda runner: runner.foreach_env(lambda env: env.pop_finished()), local_env_runner=False)
    returns = {}
    for name, episodic_return, episodic_length in (e for runner in finished for env in runner for e in env):
        writer.add_scalar(f"charts/episodic_return/{name}", episodic_return, global_step)
        writer.add_scalar(f"charts/episodic_length/{name}", episodic_length, global_step)
        returns.setdefault(name, []).append(episodic_return)
    writer.add_scalar("charts/SPS", sps, global_step)
    for name, learner in result["info"]["learner"].items():
        log_learner(writer, learner["learner_stats"], global_step, f"/{name}")
    ended = ", ".join(f"episodic_return/{name}={np.mean(values):.2f}" for name, values in sorted(returns.items()))
    print(f"global_step={global_step}, {ended or 'no episode ended'}, SPS={sps}", flush=True)


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


# ================================================================================================
# 5. The ONNX export, in ppo_godot.py's layout, which the Godot RL Agents plugin loads
# ================================================================================================
class OnnxPolicy(torch.nn.Module):
    """An RLlib policy's network as the plugin feeds and reads it: one input per observation key, named
    after it (in sorted order, as RLlib flattens them), plus state_ins; out come `output`, the actions in
    the game's declared order (a discrete action's logits; a continuous one's mean, followed by its log
    std when the game mixes both kinds), and state_outs (state_ins passed through)."""

    def __init__(self, model, declared):
        super().__init__()
        self.model, self.declared = model, declared
        self.mixed = len({kind for _, kind, _ in declared}) == 2

    def forward(self, *inputs):
        *obs_parts, state_ins = inputs
        dist_inputs, _ = self.model.forward({"obs_flat": torch.cat(obs_parts, dim=-1)}, [], None)
        columns, first = {}, 0
        for key, kind, size in sorted(self.declared):  # RLlib's order: the action space's, sorted by key
            width = size if kind == "discrete" else 2 * size  # n logits; or size means, then size log stds
            columns[key] = dist_inputs[:, first:first + width]
            first += width
        output = [columns[key] if kind == "discrete" or self.mixed else columns[key][:, :size]
                  for key, kind, size in self.declared]
        return torch.cat(output, dim=-1), state_ins


def export_onnx(algo, policies, path):
    """Each policy to its file (several: path with _<name> before .onnx); returns the files written."""
    written = []
    for name, (obs_space, _, declared) in policies.items():
        policy = algo.get_policy(name if len(policies) > 1 else "default_policy")
        file = f"{path[:-len('.onnx')]}_{name}.onnx" if len(policies) > 1 else path
        keys = list(obs_space.spaces)
        names = keys + ["state_ins", "output", "state_outs"]
        example = tuple(torch.zeros(1, int(np.prod(obs_space[key].shape))) for key in keys) + (torch.zeros(1),)
        with warnings.catch_warnings():  # the TorchScript exporter calls itself deprecated
            warnings.simplefilter("ignore", DeprecationWarning)
            torch.onnx.export(OnnxPolicy(policy.model, declared).cpu().eval(), example, file + ".tmp",
                              input_names=names[:-2], output_names=names[-2:], opset_version=17, dynamo=False,
                              dynamic_axes={name: {0: "batch_size"} for name in names})
        os.replace(file + ".tmp", file)
        written.append(file)
    return written


def main(argv=None):
    args = parse_args(argv)
    run_name = f"godot__{args.exp_name}__{args.seed}__{int(time.time())}"
    run_dir = os.path.join(args.log_dir, run_name)
    writer = SummaryWriter(run_dir)
    writer.add_text("hyperparameters", "|param|value|\n|-|-|\n"
                    + "\n".join(f"|{k}|{v}|" for k, v in vars(args).items()))

    logging.getLogger("ray.rllib.utils.actor_manager").setLevel(logging.CRITICAL)  # we say the cause
    algo, exit_code, policies = None, 0, {}
    try:
        names, policies = probe_game(args)  # before Ray starts: a game that fails is named at once
        if args.address:
            ray.init(address=args.address, log_to_driver=False)
        else:  # a local cluster, its services on loopback only
            ray.init(num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False,
                     _node_ip_address="127.0.0.1")
        # a kill saves the model, like Ctrl-C; set after ray.init, whose own handler aborts the process
        signal.signal(signal.SIGTERM, stop_on_kill)
        algo = build_algorithm(args, names, policies)
        if args.resume:
            algo.restore(os.path.abspath(args.resume))
        several = len(policies) > 1  # then steps are counted per agent (count_steps_by), as ppo_godot.py does
        steps = "num_agent_steps_sampled" if several else "num_env_steps_sampled"
        start_step = global_step = algo._counters[steps]  # > 0 when resumed
        start_time = last_checkpoint = time.time()
        while global_step < args.total_timesteps:
            result = algo.train()
            global_step = result[steps + "_lifetime"]
            sps = int((global_step - start_step) / (time.time() - start_time))
            (log_policies(writer, algo, result, global_step, sps) if several else log(writer, result, global_step, sps))
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
            if args.onnx_export_path:
                print(f"exported for the Godot RL Agents plugin: {', '.join(export_onnx(algo, policies, args.onnx_export_path))}")
            algo.stop()  # each env runner closes its game
        writer.close()
        ray.shutdown()
    sys.exit(exit_code)


if __name__ == "__main__":
    main()
