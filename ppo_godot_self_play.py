"""PPO with self-play inside a running Godot game whose agents name opposing policies, through the
godot-rl package, in one file: one policy learns at a time while the others play snapshots of their
own past weights (Unity ML-Agents' ghost trainer), each policy rated by ELO.

    python ppo_godot_self_play.py --env-path godot/chase/chase_tag.x86_64 --self-play-outcome terminated=chaser
    tensorboard --logdir runs      # charts/episodic_return/chaser, self_play/elo/chaser, self_play/learning/...
    python ppo_godot_self_play.py --env-path ... --self-play-pool runner=runs/<run>/ppo_godot_multi_policy.pt

Read ppo_godot_multi_policy.py first: this file is it with self-play. Two policies that learn together
can starve each other: one learns faster and the other never sees a reward to learn from. Here they
take turns. `diff ppo_godot_multi_policy.py ppo_godot_self_play.py` changes these definitions of the
lesson: `parse_args`, `GodotVecEnv`, `AgentPerPolicy`, `collect_rollout`, `train`; and adds `SelfPlay`.
AgentPerPolicy.playing (section 3): a waiting policy's agents play a snapshot from its pool; SelfPlay
(section 7): the pools, whose turn it is, which snapshot plays, after each update; train() (section 7):
only the learner updates, since the other rows were played by a snapshot; parse_args names the flags
section 9 adds. The lines that name the ratings (GodotVecEnv's tells_time_outs, SelfPlay's ratings, a
snapshot's rating, ratings.rate and ratings.log) change nothing learned. Below the banner (section 9)
are the ELO ratings (Ratings: who won each episode), the settings' checks, and the self-play state that
a checkpoint keeps for --resume. Everything else is ppo_godot_multi_policy.py (a game resets its agents, and
bootstraps a plugin time-out, as in ppo_godot.py): read it down to the plumbing banner (section 9).
"""
import argparse
import atexit
import contextlib
import copy
import importlib.util
import io
import json
import math
import os
import pickle
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
import warnings

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
from godot_rl.core.godot_env import GodotEnv
from gymnasium.wrappers.utils import RunningMeanStd
from torch.utils.tensorboard import SummaryWriter


# ================================================================================================
# 1. Arguments
# ================================================================================================
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.error = fail  # a bad flag gets one line, not the whole usage text
    flag = dict(type=str2bool, nargs="?", const=True)  # `--anneal-lr`, `--anneal-lr false`
    # Experiment
    p.add_argument("--exp-name", default=os.path.basename(__file__)[: -len(".py")],
                   help="name of the run; the log folder is {log_dir}/{env_id}__{exp_name}__{seed}__{time}")
    p.add_argument("--log-dir", default="runs", help="the folder of the runs' log folders")
    p.add_argument("--seed", type=int, default=1, help="seed of python, numpy, torch and the envs")
    p.add_argument("--torch-deterministic", default=True, **flag,
                   help="make cuDNN deterministic (a CPU run repeats for the same --torch-threads)")
    p.add_argument("--cuda", default=False, **flag,
                   help="run the networks on the GPU; off by default: for 64-unit networks one CPU core is "
                        "faster, each tiny kernel costing more to launch than to run (benchmarks/README.md)")
    p.add_argument("--torch-threads", type=int, default=1,
                   help="CPU threads for torch: for 64-unit nets a 2nd gains ~10%%, and is several times slower "
                        "beside a busy process (results change)")
    # Algorithm
    p.add_argument("--total-timesteps", type=int, default=300000,
                   help="agent steps over all agents; a new total given with --resume respreads --anneal-lr's decay")
    p.add_argument("--learning-rate", type=float, default=1e-3,
                   help="Adam step size; 4x ppo.py's: many agents make big batches, so few updates per step")
    p.add_argument("--num-steps", type=int, default=64, help="steps per agent per rollout")
    p.add_argument("--anneal-lr", default=True, **flag,
                   help="decay the learning rate linearly toward 0 (1/num_iterations of it at the last update)")
    p.add_argument("--gamma", type=float, default=0.99, help="discount factor")
    p.add_argument("--gae-lambda", type=float, default=0.95, help="1: Monte-Carlo advantages, 0: one-step TD")
    p.add_argument("--num-minibatches", type=int, default=4, help="minibatches per epoch")
    p.add_argument("--update-epochs", type=int, default=4, help="passes over each rollout")
    p.add_argument("--norm-adv", default=True, **flag, help="normalise advantages per minibatch")
    p.add_argument("--clip-coef", type=float, default=0.2, help="epsilon of L^CLIP")
    p.add_argument("--clip-vloss", default=True, **flag, help="clip the value loss like L^CLIP")
    p.add_argument("--ent-coef", type=float, default=0.01, help="entropy bonus weight")
    p.add_argument("--vf-coef", type=float, default=0.5, help="value loss weight")
    p.add_argument("--max-grad-norm", type=float, default=0.5, help="clip the global gradient norm")
    p.add_argument("--target-kl", type=float, default=None,
                   help="stop the update's epochs once approx_kl exceeds it (e.g. 0.015)")
    p.add_argument("--norm-reward", default=True, **flag,
                   help="scale rewards by a running std of the discounted return: a critic fits returns of 10 or "
                        "100 slowly (benchmarks/README.md, Chase)")
    p.add_argument("--bootstrap-truncation", default=True, **flag,
                   help="bootstrap V(final obs) on time-limit ends; false: terminal, as in CleanRL")
    # The game (GodotEnv's settings)
    p.add_argument("--env-path", default=None,
                   help="the exported game (a .x86_64 file on Linux); omitted: press Play in the editor")
    p.add_argument("--n-parallel", type=int, default=1, help="game processes, each on a port of its own")
    p.add_argument("--action-repeat", type=int, default=None, help="physics frames per action; unset: the game's own")
    # Evaluation
    p.add_argument("--eval-checkpoint", default=None,
                   help="play this saved model in the game (--env-path, or the editor) instead of training")
    p.add_argument("--eval-episodes", type=int, default=10,
                   help="at least this many episodes of each policy for --eval-checkpoint, as many from every agent")
    # section 9 adds the run's own flags (saving, --resume, --track), how the game runs, the exports and
    # --frozen-policy (a policy kept fixed), then checks them (a bad one: one line); --resume takes a saved run's flags
    # section 9 also adds self-play's settings (--self-play-*)
    return parse_and_check(p, flag, sys.argv[1:] if argv is None else argv)


# ================================================================================================
# 2. Environment: every agent of every game as one vector env
# ================================================================================================
class GodotVecEnv:
    """All agents of --n-parallel games as one vector env with gymnasium 1.0's API (the games' messages: section 9)."""

    def __init__(self, args):
        self.games, self.procs = start_games(args)  # section 9: one line and no game left when one fails
        self.seed, self.step_timeout = args.seed, args.step_timeout  # for section 9's messages
        # Agents of one policy name share a network: start_games has checked that they share spaces
        self.policies, self.agent_policy = read_policies(self.games)
        width = max(policy.width for policy in self.policies.values())  # each row zero-padded to the widest
        self.single_observation_space = gym.spaces.Box(-np.inf, np.inf, (width,), np.float32)
        for policy in self.policies.values():
            policy.padding = [np.zeros(width - policy.width, np.float32)] if policy.width < width else []
        # floats: each discrete action's index (exact in a float), each continuous one's values; padded alike
        columns = max(policy.columns for policy in self.policies.values())
        self.single_action_space = gym.spaces.Box(-np.inf, np.inf, (columns,), np.float32)
        self.num_envs = len(self.agent_policy)
        self.tells_time_outs = np.zeros(self.num_envs, bool)  # whether each agent's game can tell a time-out: step()

    def observations(self, replies):
        """Every agent's row: its policy's keys' values joined in obs_layout's order, then the padding."""
        agents_obs = (obs for reply in replies for obs in reply["obs"])
        with observation_errors(self, replies):  # section 9: a value unlike its declaration gets one line
            return np.array([np.concatenate([obs[key] for key in policy.obs_keys] + policy.padding)
                             for obs, policy in zip(agents_obs, self.agent_policy)],
                            dtype=self.single_observation_space.dtype)

    def reset(self, seed=None):
        """The first observations of new episodes in every game (a resumed run's seed: reset_games)."""
        replies = reset_games(self, seed)  # section 9: checked: the keys declared
        return self.observations(replies), {}

    def step(self, actions):
        game_actions = [to_game_action(action, policy.action_heads)
                        for action, policy in zip(actions, self.agent_policy)]
        replies, reward, done, info = step_games(self, game_actions)  # section 9: sent to every game, then read
        # Gymnasium-like ("autoreset" in every info): the final observation comes with done, a time-out is "truncated".
        # Plugin-like: a time-out is "TimeLimit.truncated", bootstrapped if "terminal_observation" came, else terminal
        gymnasium_like = np.array(["autoreset" in i for i in info])
        autoreset = np.array([bool(i.get("autoreset", False)) for i in info])  # True: this step only reset an agent
        sent_final = done & ~gymnasium_like & np.array(["terminal_observation" in i for i in info])
        timed_out = np.array([bool(i.get("truncated" if like else "TimeLimit.truncated", False))
                              for i, like in zip(info, gymnasium_like)])
        # which ends timed out: told by a game that resets like gymnasium, or on the spot with its final observation
        self.tells_time_outs = gymnasium_like | sent_final
        truncated = done & timed_out & (gymnasium_like | sent_final)
        infos = {"autoreset": autoreset, "bootstraps_from_final": sent_final & timed_out}
        if sent_final.any():
            infos["final_obs"] = final_observations(self, replies, info, sent_final)  # section 9: checked
        return self.observations(replies), reward, done & ~truncated, truncated, infos

    def close(self):
        close_games(self)  # section 9: each game told, and its process ended


def read_layouts(game, agent):
    """One agent's row and action, from its game's spaces. obs_layout: each key (sorted, as godot-rl's
    Dict space sorts them) with its shape (size,).
    action_heads: each action (name, "discrete", n) or (name, "continuous", size) in the game's declared
    order (env_info's; godot-rl's Dict space sorts them), the order the plugin reads an ONNX model's output."""
    space = game.observation_spaces[agent]
    obs_layout = [(key, space[key].shape) for key in sorted(space.spaces)]
    declared = game.env_info["action_space"]
    declared = declared[agent] if isinstance(declared, list) else declared  # one entry per agent, or one for all
    action_heads = [(name, spec["action_type"], int(spec["size"])) for name, spec in declared.items()]
    return obs_layout, action_heads


def read_policies(games):
    """({policy name: policy}, each agent's policy). A policy's layouts are its first agent's, agent_ids its
    agents' indices in the vector env, and tag ends its TensorBoard tags ("/chaser"; "" for a game of one policy)."""
    policies, agent_policy = {}, []
    for game in games:
        for agent, name in enumerate(game.agent_policy_names):
            if name not in policies:
                obs_layout, action_heads = read_layouts(game, agent)
                policies[name] = argparse.Namespace(
                    name=name, obs_layout=obs_layout, obs_keys=[key for key, _ in obs_layout],
                    action_heads=action_heads, agent_ids=[],
                    width=sum(shape[0] for _, shape in obs_layout),
                    columns=sum(1 if kind == "discrete" else size for _, kind, size in action_heads))
            policies[name].agent_ids.append(len(agent_policy))
            agent_policy.append(policies[name])
    for policy in policies.values():
        policy.agent_ids = np.array(policy.agent_ids)
        policy.tag = f"/{policy.name}" if len(policies) > 1 else ""
    return policies, agent_policy


def to_game_action(action, action_heads):
    """One agent's action as the game expects it, {action name: int, or list of floats}, from its row of columns."""
    out, column = {}, 0
    for name, kind, size in action_heads:
        if kind == "discrete":
            out[name] = int(action[column])
            column += 1
        else:
            # clipped to the space's bounds [-1, 1], as the plugin clamps them when it plays a model;
            # the rollout stores the action as sampled, so log pi(a|s) stays that of the sample
            out[name] = np.clip(action[column:column + size], -1.0, 1.0).tolist()
            column += size
    return out


def make_envs(args):
    with game_errors("the games connected"):  # section 9: a game that fails to start or connect: one line
        envs = RecordEpisodes(GodotVecEnv(args))  # section 9: each episode's return and length, for the logs
    if args.norm_reward:
        envs = NormalizeReward(envs, gamma=args.gamma)
    return envs


class NormalizeReward:
    """Rewards divided by a running std of the discounted return G_t = r_t + gamma G_{t-1}, then clipped
    to +-10 (ppo.py's subclass of gymnasium's wrapper does not), for the games' vector env, with one statistic
    per policy (its rewards have a scale of their own). G restarts at every episode end, and an autoreset
    step (no transition) is left out. The logged returns stay the game's own."""

    def __init__(self, envs, gamma):
        self.env, self.gamma = envs, gamma
        self.return_rms = {name: RunningMeanStd(shape=()) for name in envs.policies}
        self.discounted_return = np.zeros(envs.num_envs)

    def __getattr__(self, name):  # the rest is the games' vector env's
        return getattr(self.env, name)

    def reset(self, **kwargs):
        self.discounted_return[:] = 0.0
        return self.env.reset(**kwargs)

    def step(self, actions):
        obs, reward, terminated, truncated, infos = self.env.step(actions)
        autoreset = infos["autoreset"]
        self.discounted_return = np.where(autoreset, 0.0, self.discounted_return * self.gamma + reward)
        std = np.zeros(len(reward), dtype=np.float32)
        for name, policy in self.env.policies.items():
            mid_episode = policy.agent_ids[~autoreset[policy.agent_ids]]
            if len(mid_episode):
                self.return_rms[name].update(self.discounted_return[mid_episode])
            std[policy.agent_ids] = np.sqrt(self.return_rms[name].var + 1e-8)
        reward = np.clip(reward / std, -10, 10).astype(np.float32)
        self.discounted_return[terminated | truncated] = 0.0
        return obs, reward, terminated, truncated, infos


# ================================================================================================
# 3. Network: separate 64-64 tanh actor and critic; a categorical head per discrete action and a
#    diagonal Gaussian per continuous one, in the game's declared order; an Agent per policy name
#    (AgentPerPolicy)
# ================================================================================================
def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    """obs_layout: the row's keys in order, each (name, (size,)): the row is their values, joined.
    action_heads: read_layouts'. An action is a row: one column (the index) per discrete one, size per continuous."""

    def __init__(self, obs_layout, action_heads):
        super().__init__()
        self.obs_layout = [(key, tuple(shape)) for key, shape in obs_layout]
        obs_dim = sum(shape[0] for _, shape in self.obs_layout)
        self.heads = [(kind, size) for _, kind, size in action_heads]
        # the actor's output, action by action: a discrete action's n logits, a continuous one's means
        n_outputs = sum(size for _, size in self.heads)
        n_continuous = sum(size for kind, size in self.heads if kind == "continuous")
        if n_continuous:  # std = exp(a learned, state-free log std) for each continuous dimension
            self.actor_logstd = nn.Parameter(torch.zeros(1, n_continuous))
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 1), std=1.0),
        )
        self.actor = nn.Sequential(
            layer_init(nn.Linear(obs_dim, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, n_outputs), std=0.01),  # near-uniform policy at the start
        )

    def get_value(self, x):
        return self.critic(x)

    def action_distributions(self, x):
        """pi(.|s)'s parameters, computed here alone (get_action and evaluate_actions use them): a discrete
        action's log pi of every choice, a continuous one's Gaussian (mean, log std)."""
        outputs = self.actor(x).split([size for _, size in self.heads], dim=-1)
        dists, logstd_column = [], 0
        for (kind, size), output in zip(self.heads, outputs):
            if kind == "discrete":
                dists.append(torch.log_softmax(output, dim=-1))
            else:
                logstd = self.actor_logstd[:, logstd_column:logstd_column + size].expand_as(output)
                dists.append((output, logstd))
                logstd_column += size
        return dists

    def get_action(self, x, greedy=False):
        """a_t ~ pi(.|s_t), or with greedy the most likely action, as a row (a discrete action's index as a float).
        A Gaussian samples mean + std * z, z ~ N(0, I), unclipped; a discrete action argmax(pi / E), E ~ Exp(1):
        the Gumbel-max trick's exponential-race form, torch.multinomial's draw without its input checks."""
        per_head = []
        for (kind, _), dist in zip(self.heads, self.action_distributions(x)):
            if kind == "discrete":
                choice = dist if greedy else dist.exp() / torch.empty_like(dist).exponential_()
                per_head.append(choice.argmax(dim=-1, keepdim=True).float())
            else:
                action_mean, action_logstd = dist
                noise = 0 if greedy else action_logstd.exp() * torch.randn_like(action_mean)
                per_head.append(action_mean + noise)
        return torch.cat(per_head, dim=-1)

    def evaluate_actions(self, x, action):
        """log pi(a_t|s_t), the entropy H[pi(.|s_t)] and V(s_t) (CleanRL's get_action_and_value). The
        actions (and a Gaussian's dimensions) are independent, so log-probs and entropies add up."""
        logprob, entropy = 0, 0
        per_head = action.split([1 if kind == "discrete" else size for kind, size in self.heads], dim=-1)
        for (kind, _), dist, a in zip(self.heads, self.action_distributions(x), per_head):
            if kind == "discrete":
                log_pi = dist
                logprob = logprob + log_pi.gather(-1, a.long()).squeeze(-1)
                entropy = entropy - (log_pi.exp() * log_pi).sum(-1)
            else:
                action_mean, action_logstd = dist
                # log N(a; mean, std^2) = -z^2 / 2 - log std - log(2 pi) / 2, with z = (a - mean) / std
                z = (a - action_mean) / action_logstd.exp()
                logprob = logprob + (-0.5 * z**2 - action_logstd - 0.5 * math.log(2 * math.pi)).sum(-1)
                entropy = entropy + (0.5 + 0.5 * math.log(2 * math.pi) + action_logstd).sum(-1)
        return logprob, entropy, self.critic(x)


class AgentPerPolicy(nn.Module):
    """An Agent per policy name (agents[name]), playing every agent: each agent's row, cut to its policy's width,
    goes to that policy's Agent, and its action comes back padded to the widest policy's columns. frozen_weights:
    {name: its --frozen-policy file's weights (None on --resume: the checkpoint brings them)}: those never learn.
    playing: {name: another Agent that acts for the policy's agents instead}: a snapshot of the policy's
    past weights, while another policy learns (SelfPlay, section 7)."""

    def __init__(self, policies, frozen_weights=None):
        super().__init__()
        self.policies, self.frozen = policies, set(frozen_weights or {})  # the frozen policies' names
        self.agents = nn.ModuleDict({name: Agent(policy.obs_layout, policy.action_heads)
                                     for name, policy in policies.items()})
        for name, weights in (frozen_weights or {}).items():
            if weights is not None:
                self.agents[name].load_state_dict(weights)
            self.agents[name].requires_grad_(False)
        self.columns = max(policy.columns for policy in policies.values())
        self.playing = {}  # a plain dict: a snapshot's weights are not the policy's, and are saved apart

    def __getitem__(self, name):
        return self.agents[name]

    def get_action(self, x, greedy=False):
        action = torch.zeros(len(x), self.columns, device=x.device)
        for name, policy in self.policies.items():
            its_ids = torch.as_tensor(policy.agent_ids, device=x.device)
            its_agent = self.playing.get(name, self.agents[name])  # a past self, or the policy as it learns
            action[its_ids, :policy.columns] = its_agent.get_action(x[its_ids, :policy.width], greedy)
        return action

    def get_value(self, x):
        value = torch.zeros(len(x), 1, device=x.device)
        for name, policy in self.policies.items():
            its_ids = torch.as_tensor(policy.agent_ids, device=x.device)
            value[its_ids] = self.agents[name].get_value(x[its_ids, :policy.width])
        return value


# ================================================================================================
# 4. Rollout: num_steps steps of every agent: the learner's current weights, a waiting policy's snapshot,
#    a frozen one's fixed weights
# ================================================================================================
def make_storage(args, envs):
    """One row per (step, env). Numpy, the envs' own format, where CleanRL keeps torch tensors: a
    row write costs ~0.5 us in numpy against ~4 us in torch, and torch sees the rollout once, after it."""
    rows = (args.num_steps, args.num_envs)
    return argparse.Namespace(
        obs=np.zeros(rows + envs.single_observation_space.shape, dtype=envs.single_observation_space.dtype),
        actions=np.zeros(rows + envs.single_action_space.shape, dtype=envs.single_action_space.dtype),
        rewards=np.zeros(rows, dtype=np.float32),
        terminations=np.zeros(rows, dtype=np.float32),
        truncations=np.zeros(rows, dtype=np.float32),
        is_transition=np.zeros(rows, dtype=bool),  # False: the autoreset row after an episode end
        bootstraps_from_final=np.zeros(rows, dtype=bool),  # True: a plugin time-out
        final_values=np.zeros(rows, dtype=np.float32),  # V(s_final) of such a time-out
    )


def collect_rollout(envs, agents, all_storage, all_obs, global_step, writer, device, self_play):
    """Fills all_storage, every agent's steps; returns (all_obs, global_step). No reset: the episodes go on from the
    last rollout (a reset here would cap every episode at num_steps steps)."""
    for step in range(len(all_storage.obs)):
        global_step += envs.num_envs
        all_storage.obs[step] = all_obs

        # ALGO: a_t ~ pi(.|s_t). inference_mode: no autograd bookkeeping at all
        with torch.inference_mode():
            action = agents.get_action(torch.as_tensor(all_obs, dtype=torch.float32, device=device))
        action = action.cpu().numpy()
        all_storage.actions[step] = action

        all_obs, reward, terminated, truncated, infos = envs.step(action)
        all_storage.is_transition[step] = ~infos["autoreset"]  # False: this step only reset a finished agent
        all_storage.rewards[step] = reward
        all_storage.terminations[step] = terminated
        all_storage.truncations[step] = truncated
        all_storage.bootstraps_from_final[step] = infos["bootstraps_from_final"]
        if infos["bootstraps_from_final"].any():  # s_{t+1} is the next episode's first: V(s_final) is kept instead
            with torch.inference_mode():  # final_obs: GodotVecEnv.step's; only these rows' V is used
                final_value = agents.get_value(torch.as_tensor(infos["final_obs"], device=device))
            all_storage.final_values[step] = final_value.flatten().cpu().numpy()

        if "episode" in infos:  # the episodes that ended this step, with their raw returns
            for i in np.nonzero(infos["_episode"])[0]:
                episodic_return = float(infos["episode"]["r"][i])
                tag = envs.agent_policy[i].tag  # "/chaser"; none when the game has one policy
                print(f"global_step={global_step}, episodic_return{tag}={episodic_return:.1f}")
                writer.add_scalar("charts/episodic_return" + tag, episodic_return, global_step)
                writer.add_scalar("charts/episodic_length" + tag, infos["episode"]["l"][i], global_step)
                self_play.ratings.rate(i, episodic_return, terminated[i])  # section 9: ELO, which shapes nothing
    check_env_output(all_storage, all_obs, global_step)  # section 9: a NaN or inf from the env stops here
    return all_obs, global_step


# ================================================================================================
# 5. Advantages: the learner's rows of the rollout, their log pi_old and V, then Generalized Advantage
#    Estimation
# ================================================================================================
def rollout_logprobs_and_values(agent, storage, next_obs, device):
    """log pi_old(a_t|s_t), V(s_t) of every row, and V(next_obs). CleanRL computes them in the rollout, step
    by step; the policy has not changed since, so one batched forward over all rows gives the same, in less time."""
    with torch.inference_mode():
        logprobs, _, values = agent.evaluate_actions(
            torch.as_tensor(storage.obs, device=device), torch.as_tensor(storage.actions, device=device))
        next_value = agent.get_value(torch.as_tensor(next_obs, dtype=torch.float32, device=device))
    return logprobs.cpu().numpy(), values.squeeze(-1).cpu().numpy(), next_value.flatten().cpu().numpy()


def policy_share(policy, all_storage, all_obs):
    """One policy's share of all_storage, all it learns from: its agents' columns of every array, each observation
    cut to its own keys (the padding dropped) and each action to its own columns; and its agents' all_obs rows."""
    storage = argparse.Namespace(**{key: array[:, policy.agent_ids] for key, array in vars(all_storage).items()})
    storage.obs, storage.actions = storage.obs[..., :policy.width], storage.actions[..., :policy.columns]
    return storage, all_obs[policy.agent_ids, :policy.width]


def bootstrap_reset_on_the_spot(storage, gamma):
    """compute_gae's rewards and terminations, each plugin time-out bootstrapped: its values[t+1] is V of the next
    episode's first observation, so the step is marked terminated (values[t+1] dropped) and its reward becomes
    r_t + gamma V(s_final), r_t the stored one: compute_gae's delta_t = r_t + gamma V(s_final) - V(s_t), as at any
    time-out. (V and the stored r_t are both on --norm-reward's scale; the logged returns are the game's.)"""
    rewards = np.where(storage.bootstraps_from_final, storage.rewards + gamma * storage.final_values, storage.rewards)
    return rewards, np.maximum(storage.terminations, storage.bootstraps_from_final)


def compute_gae(rewards, values, terminations, truncations, next_value, gamma, gae_lambda):
    """Backward GAE over a (num_steps, num_envs) rollout. values[t+1] (next_value at the last step) is V of
    the observation step t returned, which delta_t bootstraps from unless terminated_t: at a time-out, the
    final observation, as gymnasium's next-step autoreset returns it (a plugin time-out: the Godot scripts'
    bootstrap_reset_on_the_spot)."""
    num_steps = rewards.shape[0]
    advantages = np.zeros_like(rewards)
    dones = np.maximum(terminations, truncations)
    lastgaelam = 0.0
    for t in reversed(range(num_steps)):
        nextvalues = next_value if t == num_steps - 1 else values[t + 1]
        # ALGO: delta_t = r_t + gamma * V(s_{t+1}) * (1 - terminated_t) - V(s_t)
        delta = rewards[t] + gamma * nextvalues * (1.0 - terminations[t]) - values[t]
        # ALGO: A_t = delta_t + gamma * lambda * (1 - done_t) * A_{t+1}; any episode end cuts it
        lastgaelam = delta + gamma * gae_lambda * (1.0 - dones[t]) * lastgaelam
        advantages[t] = lastgaelam
    return advantages, advantages + values  # A_t, and the value targets R_t = A_t + V(s_t)


# ================================================================================================
# 6. Update: update_epochs passes of minibatch gradient steps on the clipped objective
# ================================================================================================
def ppo_update(args, agent, optimizer, storage, logprobs, values, advantages, returns, device):
    """Trains on the rollout's real transitions. Returns what TensorBoard shows of it: the last
    minibatch's losses, KL estimates and gradient norm; clipfrac over every minibatch."""
    keep = storage.is_transition.reshape(-1)  # the autoreset rows are no transitions

    def batch(x):  # (num_steps, num_envs, ...) -> (n_transitions, ...) tensor
        return torch.as_tensor(x.reshape((-1,) + x.shape[2:])[keep], device=device)

    b_obs, b_actions, b_logprobs = batch(storage.obs), batch(storage.actions), batch(logprobs)
    b_advantages, b_returns, b_values = batch(advantages), batch(returns), batch(values)

    clipfracs = []
    stop_early = False
    for epoch in range(args.update_epochs):
        # a new order every epoch: cut in order, a minibatch is one stretch of the rollout's time, and each
        # epoch would take the same minibatches in the same order
        for mb_inds in torch.randperm(len(b_obs)).tensor_split(args.num_minibatches):
            newlogprob, entropy, newvalue = agent.evaluate_actions(b_obs[mb_inds], b_actions[mb_inds])
            logratio = newlogprob - b_logprobs[mb_inds]
            ratio = logratio.exp()  # ALGO: r_t(theta) = pi_theta(a_t|s_t) / pi_old(a_t|s_t)

            with torch.no_grad():
                # KL(pi_old || pi_theta) estimators, http://joschu.net/blog/kl-approx.html
                old_approx_kl = (-logratio).mean()
                approx_kl = ((ratio - 1) - logratio).mean()
                clipfracs.append(((ratio - 1.0).abs() > args.clip_coef).float().mean())

            mb_advantages = b_advantages[mb_inds]
            # dropping the autoreset rows can leave a 1-row minibatch, which has no std
            if args.norm_adv and len(mb_advantages) > 1:
                mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)

            # ALGO: L^CLIP = E[min(r_t A_t, clip(r_t, 1-eps, 1+eps) A_t)]; we minimise -L^CLIP
            pg_loss1 = -mb_advantages * ratio
            pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)
            pg_loss = torch.max(pg_loss1, pg_loss2).mean()

            # ALGO: L^VF = 0.5 (V(s_t) - R_t)^2, optionally clipped around the old V(s_t)
            newvalue = newvalue.flatten()
            mb_returns, mb_values = b_returns[mb_inds], b_values[mb_inds]
            if args.clip_vloss:
                v_loss_unclipped = (newvalue - mb_returns) ** 2
                v_clipped = mb_values + torch.clamp(newvalue - mb_values, -args.clip_coef, args.clip_coef)
                v_loss_clipped = (v_clipped - mb_returns) ** 2
                v_loss = 0.5 * torch.max(v_loss_unclipped, v_loss_clipped).mean()
            else:
                v_loss = 0.5 * ((newvalue - mb_returns) ** 2).mean()

            # ALGO: loss = -L^CLIP + c1 L^VF - c2 H[pi]
            entropy_loss = entropy.mean()
            loss = pg_loss - args.ent_coef * entropy_loss + v_loss * args.vf_coef

            optimizer.zero_grad()
            loss.backward()
            grad_norm = nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
            if not torch.isfinite(loss + grad_norm):  # stop before a NaN reaches the weights
                raise FloatingPointError("non-finite loss or gradient")
            optimizer.step()

            if args.target_kl is not None and approx_kl > args.target_kl:
                stop_early = True  # leave both loops: the policy moved far enough
                break
        if stop_early:
            break
    # explained variance 1 - Var(R - V) / Var(R): 1 when V(s_t) predicted the returns, <= 0 when not
    y_pred, y_true = values.reshape(-1)[keep], returns.reshape(-1)[keep]
    var_y = np.var(y_true)
    return {"losses/explained_variance": np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y,
            "losses/policy_loss": pg_loss.item(), "losses/value_loss": v_loss.item(),
            "losses/entropy": entropy_loss.item(), "losses/old_approx_kl": old_approx_kl.item(),
            "losses/approx_kl": approx_kl.item(), "losses/clipfrac": torch.stack(clipfracs).mean().item(),
            "diagnostics/grad_norm": grad_norm.item(), "diagnostics/update_epochs_done": epoch + 1}


# ================================================================================================
# 7. The training loop: one policy learns at a time against snapshots of the others (SelfPlay); rollout,
#    advantages, update, logging
# ================================================================================================
class SelfPlay:
    """Self-play as Unity ML-Agents' ghost trainer does it. One policy learns at a time (the learner), in
    the game's order of policy names, frozen ones left out; after --self-play-team-change of its
    agent-steps the next one learns. Every --self-play-save-steps of a policy's learning steps (counted
    across its turns) a snapshot of its weights goes into its pool, which keeps the newest
    --self-play-window, beside any --self-play-pool checkpoint (kept for good); each pool starts with the
    policy's first weights. Every other policy's agents play a snapshot from its own pool
    (AgentPerPolicy.playing): the newest with probability --self-play-latest, else one drawn uniformly
    from the pool, drawn again every --self-play-swap-steps of that policy's own agent-steps and when its
    turn to learn ends. The counts are checked after each update: an interval ends at the first rollout
    that reaches it. The ratings (Ratings, section 9) only watch."""

    def __init__(self, args, envs, agents, pool_weights):
        self.args, self.agents, self.policies = args, agents, agents.policies
        self.names = [name for name in self.policies if name not in agents.frozen]  # they take turns
        self.rng = np.random.default_rng(args.seed)  # the draws, apart from the rest: its state is saved
        self.ratings = Ratings(args, envs, self)  # section 9: an ELO rating per policy and snapshot
        # a snapshot: "weights", "source" (a step of this run, or a file), "kept" (a file's: for good), "rating"
        self.pools = {}
        for name in self.names:  # the files of --self-play-pool, kept for good, then the policy's first weights
            self.pools[name] = [self.snapshot(name, weights, path, kept=True)
                                for path, weights in pool_weights.get(name, [])]
            self.pools[name].append(self.snapshot(name, agents[name].state_dict(), "global_step=0"))
        self.snapshot_agents = {name: copy.deepcopy(agents[name]).requires_grad_(False) for name in self.names}
        self.learner, self.in_play = self.names[0], {}  # in_play: {name: the snapshot its agents play}
        # agent-steps since: the learner's turn began; each policy's last snapshot, and its last draw
        self.since = {"team_change": 0, **{(name, event): 0 for name in self.names for event in ("save", "swap")}}
        for name in self.names[1:]:
            self.swap(name)

    def snapshot(self, name, weights, source, kept=False):
        """A copy of policy name's weights, rated as the policy is now."""
        return {"weights": {key: value.detach().clone() for key, value in weights.items()},
                "rating": self.ratings.players[name]["rating"], "source": source, "kept": kept}

    def swap(self, name):
        """Policy name's agents play a snapshot drawn from its pool."""
        pool = self.pools[name]
        latest = self.rng.random() < self.args.self_play_latest
        self.play(name, pool[-1] if latest else pool[self.rng.integers(len(pool))])
        self.since[(name, "swap")] = 0

    def play(self, name, snapshot):
        """Policy name's agents act with the snapshot's weights (AgentPerPolicy.playing)."""
        self.in_play[name] = snapshot
        self.snapshot_agents[name].load_state_dict(snapshot["weights"])
        self.agents.playing[name] = self.snapshot_agents[name]

    def end_iteration(self, global_step, writer):
        """After an update: a snapshot of the learner, the next learner, a new draw for each other policy, as
        their intervals end."""
        args, learner = self.args, self.learner
        learned = len(self.policies[learner].agent_ids) * args.num_steps
        self.since[(learner, "save")] += learned
        self.since["team_change"] += learned
        if self.since[(learner, "save")] >= args.self_play_save_steps:
            pool = self.pools[learner]
            pool.append(self.snapshot(learner, self.agents[learner].state_dict(), f"global_step={global_step}"))
            if sum(not snapshot["kept"] for snapshot in pool) > args.self_play_window:
                del pool[next(i for i, snapshot in enumerate(pool) if not snapshot["kept"])]  # the oldest
            self.since[(learner, "save")] = 0
        for name in self.names:
            if name != learner:
                self.since[(name, "swap")] += len(self.policies[name].agent_ids) * args.num_steps
        if self.since["team_change"] >= args.self_play_team_change:
            self.learner = self.names[(self.names.index(learner) + 1) % len(self.names)]
            del self.agents.playing[self.learner], self.in_play[self.learner]  # its own weights again, and it learns
            self.swap(learner)
            self.since["team_change"] = 0
        for name in self.names:
            if name != self.learner and self.since[(name, "swap")] >= args.self_play_swap_steps:
                self.swap(name)
        self.ratings.log(writer, global_step)


def train(args):
    # TRY NOT TO MODIFY: seeding, threads, device
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = args.torch_deterministic
    torch.set_num_threads(args.torch_threads)
    device = torch.device("cuda" if args.cuda else "cpu")

    run = GameRun(args)  # section 9: the log folder (a new one, or the resumed run's), checkpoints, stops
    envs = make_envs(args)
    args.num_envs = envs.num_envs  # the game decides how many agents (envs) there are
    args.batch_size = args.num_envs * args.num_steps  # rows per rollout, all policies' together
    args.num_iterations = max(1, args.total_timesteps // args.batch_size)  # rollouts, each then an update
    # section 9: each policy's batch splits; the weights of --frozen-policy and of --self-play-pool
    frozen_weights, pool_weights = check_game(args, envs)
    agents = AgentPerPolicy(envs.policies, frozen_weights).to(device)
    # One policy learns at a time (self_play.learner); each other policy's agents play a snapshot of its
    # past weights, drawn from its pool
    self_play = SelfPlay(args, envs, agents, pool_weights)
    # One Adam for all policies: its moments are per weight, and a policy's update steps only its own (zero_grad
    # leaves the other policies' gradients None, and Adam skips a weight without one)
    # fused=True: Adam's arithmetic in one fused kernel instead of several small ops per tensor (~30% faster here)
    optimizer = torch.optim.Adam(agents.parameters(), lr=args.learning_rate, eps=1e-5, fused=True)
    all_storage = make_storage(args, envs)  # every agent's steps; the learner learns from its own (policy_share)

    # Leaving this block saves the run: at the end (unless --save-model false), on Ctrl-C, kill, a fault or a crash
    with run.guard(envs, agents, optimizer, self_play):
        # s_0: new episodes from envs.reset(seed=args.seed + global_step), a resumed run's too (a game saves none)
        all_obs, global_step = run.start()
        for iteration in run.iterations():  # Ctrl-C and kill stop here, between two updates
            if args.anneal_lr:  # linearly: --learning-rate at the first update, 1/num_iterations of it at the last
                optimizer.param_groups[0]["lr"] = (1.0 - (iteration - 1.0) / args.num_iterations) * args.learning_rate

            all_obs, global_step = collect_rollout(
                envs, agents, all_storage, all_obs, global_step, run.writer, device, self_play)
            for name, policy in envs.policies.items():  # the learner learns from its own agents' rows alone
                if name in agents.frozen:  # it plays, and never learns
                    continue
                if name != self_play.learner:  # not its turn: a snapshot acted for its agents, and
                    continue  # those rows are no samples of its own policy (log pi_old would be another's)
                agent = agents[name]
                storage, next_obs = policy_share(policy, all_storage, all_obs)
                logprobs, values, next_value = rollout_logprobs_and_values(agent, storage, next_obs, device)
                if args.bootstrap_truncation:  # a plugin time-out's gamma V(s_final) into r_t; others bootstrap in GAE
                    gae_rewards, gae_terminations = bootstrap_reset_on_the_spot(storage, args.gamma)
                else:  # CleanRL's way: a time-limit end counts as terminal
                    gae_rewards, gae_terminations = storage.rewards, np.maximum(storage.terminations, storage.truncations)
                advantages, returns = compute_gae(gae_rewards, values, gae_terminations, storage.truncations,
                                                  next_value, args.gamma, args.gae_lambda)
                stats = ppo_update(args, agent, optimizer, storage, logprobs, values, advantages, returns, device)
                stats["charts/learning_rate"] = optimizer.param_groups[0]["lr"]
                for tag, value in stats.items():
                    run.writer.add_scalar(tag + policy.tag, value, global_step)
            self_play.end_iteration(global_step, run.writer)  # a snapshot into the pool, new draws, the next learner
            run.end_iteration(iteration, global_step)  # SPS; where a stop resumes
    return run.dir


# ================================================================================================
# 8. Evaluation: play a checkpoint in the game, greedy or sampled
# ================================================================================================
def evaluate(args, greedy=True):
    """Each saved policy's episode returns, {name: returns}: greedy plays the most likely action, else a ~
    pi(.|s). Every agent's first episodes count, as many from each (the first to end would favour short ones)."""
    checkpoint = load_checkpoint(args.eval_checkpoint)
    mode = "greedy" if greedy else "sampled"
    envs = make_envs(args)
    with game_errors("the policy played"), contextlib.closing(envs):  # section 9: one line for a game that fails
        agents = AgentPerPolicy(envs.policies)
        load_policies(agents, checkpoint, args.eval_checkpoint)  # section 9: those the game names, from the file
        # episodes per agent, rounded up, so that the policy of fewest agents plays --eval-episodes
        rounds = -(-args.eval_episodes // min(len(policy.agent_ids) for policy in envs.policies.values()))
        episodes_done = np.zeros(envs.num_envs, dtype=int)
        episodic_returns = {name: [] for name in envs.policies}
        torch.manual_seed(args.seed)  # the sampled actions repeat for the same seed
        obs, _ = envs.reset(seed=args.seed)
        while episodes_done.min() < rounds:
            with torch.inference_mode():
                action = agents.get_action(torch.as_tensor(obs), greedy)
            obs, _, _, truncated, infos = envs.step(action.numpy())
            for i in np.nonzero(infos["_episode"])[0] if "episode" in infos else []:
                if episodes_done[i] < rounds:
                    policy = envs.agent_policy[i]
                    returns = episodic_returns[policy.name]
                    returns.append(float(infos["episode"]["r"][i]))
                    ended = "time-out" if truncated[i] else "terminated"
                    print(f"{mode} eval_episode={len(returns)}{policy.tag}, episodic_return={returns[-1]:.1f}, "
                          f"episodic_length={infos['episode']['l'][i]} ({ended})")
                episodes_done[i] += 1
    return episodic_returns


# ================================================================================================
# 9. Plumbing: bad input, checkpoints, stop and resume, faults, starting and guarding the games, the
#    exports. How the update learns is decided above; below is what a run is given or resumes from (saved
#    weights, the reward statistics) and the games. A game started with --env-path gets its command line:
#    `--port`, `--env_seed` (from --seed), `--fixed-fps` (--framerate), `--action_repeat`, `--speedup` and,
#    without --show-window, `--disable-render-loop` with Godot 4's `--headless` or Godot 3's `--no-window`;
#    then godot-rl's handshake, a resumed run's reset seed (reset_games) and, at the end, a close message. The
#    seed and the action repeat shape the episodes; --speedup and --framerate pace the game against the clock
#    (--speedup changed nothing learned on the demo game: docs/your-own-godot-game.md)
# ================================================================================================
def str2bool(value):
    if value.lower() in ("true", "yes", "1"):
        return True
    if value.lower() in ("false", "no", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {value!r}")


# A resumed run keeps its flags, but for these: a longer run (the learning rate's decay is then
# spread over the new total), how it saves, where and how to reach the game, and where to export the policy
RESUME_FLAGS = ["--total-timesteps", "--save-model", "--checkpoint-minutes", "--track", "--env-path", "--port",
                "--connect-timeout", "--step-timeout", "--show-window", "--godot-version", "--onnx-export-path",
                "--gdscript-export-path"]
# The flags of godot-rl's example scripts (stable_baselines3_example.py, clean_rl_example.py, ...) that
# every Godot RL Agents user has typed, and what they are here
GODOT_RL_SPELLINGS = {
    "--env_path": "--env-path", "--viz": "--show-window", "--timesteps": "--total-timesteps",
    "--onnx_export_path": "--onnx-export-path", "--n_parallel": "--n-parallel", "--action_repeat": "--action-repeat",
    "--experiment_dir": "--log-dir", "--experiment_name": "--exp-name", "--base_port": "--port",
    "--resume_model_path": "--resume (or --eval-checkpoint, to play it)", "--restore": "--resume",
    "--inference": "--eval-checkpoint", "--eval": "--eval-checkpoint",
    "--export": "--export-checkpoint with --onnx-export-path",
    "--save_model_path": "--save-model, on by default (the model goes to {log_dir}/{run_name}/{exp_name}.pt)",
    "--save_checkpoint_frequency": "--checkpoint-minutes (in minutes, not steps)",
    "--linear_lr_schedule": "--anneal-lr, on by default",
}


def parse_and_check(p, flag, argv):
    """The flags of section 9 added, the command line parsed; a bad value ends here with one line,
    and --resume returns the saved run's flags instead."""
    p.formatter_class = argparse.ArgumentDefaultsHelpFormatter  # --help shows each flag's default
    p.add_argument("--save-model", default=True, **flag,
                   help="keep the training state in {log_dir}/{run_name}/{exp_name}.pt: every --checkpoint-minutes, "
                        "at the end and at any stop; false: only a run that stops early saves")
    p.add_argument("--checkpoint-minutes", type=float, default=5,
                   help="minutes between two checkpoints while training (0: after every update); a hard kill (kill "
                        "-9, out of memory, power cut) loses at most this much and the update under way")
    p.add_argument("--track", default=False, **flag,
                   help="also sync the run to Weights & Biases (pip install -r requirements-track.txt): its "
                        "TensorBoard scalars, its flags")
    p.add_argument("--wandb-project-name", default="single-file-ppo", help="the W&B project of --track")
    p.add_argument("--wandb-entity", default=None, help="the W&B team or user of --track (unset: yours)")
    p.add_argument("--resume", default=None,
                   help=f"continue the run saved in this checkpoint, in its log folder with its flags (but "
                        f"{', '.join(RESUME_FLAGS)}); a resumed game starts new episodes")
    p.add_argument("--port", type=int, default=None,
                   help="the first game's TCP port, then port+1, ...; unset: a free port for each game of --env-path, "
                        "11008 for the editor")
    p.add_argument("--speedup", type=float, default=None,
                   help="game time runs this many times faster (a fraction too: the plugin's sync.gd reads a float; "
                        "the Godot 3 demo game takes its whole part, at least 1); unset: the game's own")
    p.add_argument("--framerate", type=int, default=60,
                   help="frames per game second, run as fast as training goes instead of with the clock (Godot's "
                        "--fixed-fps; the physics step stays the game's own); 0: real time")
    p.add_argument("--show-window", default=False, **flag, help="render the game in a window")
    p.add_argument("--godot-version", type=int, choices=[3, 4], default=4,
                   help="the engine the game was exported with, for how to start it without a window: 4 passes "
                        "--headless; 3 passes --no-window, which Godot 3 honours on Windows only (on Linux, "
                        "export with Godot 3's server template, or run under xvfb-run)")
    p.add_argument("--connect-timeout", type=float, default=60, help="seconds to wait for each game")
    p.add_argument("--step-timeout", type=float, default=10,
                   help="seconds a game may take to answer before it counts as frozen")
    p.add_argument("--onnx-export-path", default=None,
                   help="also export the policy to ONNX, as the Godot RL Agents plugin loads it (at the "
                        "end of training, on Ctrl-C, or from --export-checkpoint)")
    p.add_argument("--frozen-policy", action="append", default=[], metavar="NAME=CHECKPOINT",
                   help="play the game's policy NAME with its weights from CHECKPOINT (another run's .pt, of this "
                        "script or of ppo_godot.py, or an earlier one of this run), kept fixed while the other "
                        "policies learn: a frozen opponent; repeat it to freeze more")
    p.add_argument("--gdscript-export-path", default=None,
                   help="also export the policy as one plain GDScript file, which any Godot build plays (no .NET; "
                        "web and mobile too), written when the ONNX file is")
    p.add_argument("--export-checkpoint", default=None,
                   help="export this saved model to --onnx-export-path and --gdscript-export-path and exit: no "
                        "training, no game")
    # Self-play: Unity ML-Agents' ghost trainer (its settings' names and defaults: course/name-maps.md)
    p.add_argument("--self-play-save-steps", type=int, default=4000,
                   help="a policy's agent-steps of learning (counted across its turns) between two snapshots of it "
                        "into its pool (ML-Agents' save_steps, 20000 there: a fifth of it, with a fifth of "
                        "team_change, did better on the tag demo, benchmarks/README.md)")
    p.add_argument("--self-play-window", type=int, default=10,
                   help="the newest snapshots a pool keeps, the oldest dropped (ML-Agents' window)")
    p.add_argument("--self-play-team-change", type=int, default=20000,
                   help="the learning policy's agent-steps before the next policy, in the game's order, learns "
                        "(ML-Agents' team_change: 5 x save_steps, 100000 there)")
    p.add_argument("--self-play-swap-steps", type=int, default=2000,
                   help="each other policy's own agent-steps between two draws of the snapshot it plays (ML-Agents' "
                        "swap_steps, as its code has it; its docs say 10000)")
    p.add_argument("--self-play-latest", type=float, default=0.5,
                   help="the chance that a draw takes the newest snapshot; else one from the whole pool, uniformly "
                        "(ML-Agents' play_against_latest_model_ratio)")
    p.add_argument("--self-play-pool", action="append", default=[], metavar="NAME=CHECKPOINT",
                   help="put policy NAME of CHECKPOINT (a .pt file, as for --frozen-policy) into NAME's pool for good, "
                        "beside the window's snapshots: a saved opponent; repeat it to add more")
    p.add_argument("--self-play-outcome", default="return", metavar="return|terminated=NAME",
                   help="who won an episode, for the ELO ratings (the game sends no winner): return: the sign of the "
                        "learning agent's return (ML-Agents' rule: for a final reward of +1, 0, -1); terminated=NAME: "
                        "an episode that ends terminated is NAME's win, a time-out its opponents' (tag, hide-and-seek) "
                        "in a game that marks time-outs: one that resets on the spot, as the plugin does, cannot")
    theirs = [flag for flag in (a.split("=")[0] for a in argv) if flag in GODOT_RL_SPELLINGS]
    if theirs:  # all of them in one line, not one per try
        fail("; ".join(f"{flag} is godot-rl's spelling; here it is {GODOT_RL_SPELLINGS[flag]}" for flag in theirs))
    spelling = "{} takes NAME=CHECKPOINT (a policy the game names, a .pt file), got {!r}"
    for i in range(len(argv) - 2):  # --frozen-policy NAME PATH: this line, not argparse's "unrecognized arguments"
        if argv[i] in ("--frozen-policy", "--self-play-pool") and not argv[i + 2].startswith("-"):
            fail(spelling.format(argv[i], f"{argv[i + 1]} {argv[i + 2]}"))
    args = p.parse_args(argv)
    if not args.checkpoint_minutes >= 0:  # nan too
        fail(f"--checkpoint-minutes must be 0 (after every update) or more, got {args.checkpoint_minutes}")
    for name in ("total_timesteps", "num_steps", "num_minibatches", "update_epochs", "torch_threads",
                 "n_parallel", "eval_episodes", "speedup", "action_repeat", "connect_timeout", "step_timeout"):
        if getattr(args, name) is not None and getattr(args, name) <= 0:
            fail(f"--{name.replace('_', '-')} must be positive, got {getattr(args, name)}")
    if args.speedup is not None and not 0 < args.speedup < math.inf:  # nan and inf pass the check above
        fail(f"--speedup must be a positive number, got {args.speedup}")
    if args.framerate < 0:
        fail(f"--framerate must be 0 (real time) or more, got {args.framerate}")
    if args.n_parallel > 1 and args.env_path is None:
        fail(f"--n-parallel {args.n_parallel} needs --env-path: the editor runs one game")
    for name in ("speedup", "action_repeat"):  # passed on a game's command line, which only --env-path has
        if getattr(args, name) is not None and args.env_path is None and not args.export_checkpoint:
            fail(f"--{name.replace('_', '-')} needs --env-path: a game played from the editor keeps its Sync node's "
                 f"{name.replace('speedup', 'speed_up')}; set it there")
    if args.port is not None and not 0 < args.port <= 65536 - args.n_parallel:
        fail(f"--port must be 1 to {65536 - args.n_parallel} (a TCP port for each of the {args.n_parallel} "
             f"games), got {args.port}")
    if args.onnx_export_path and not args.onnx_export_path.endswith(".onnx"):  # as godot-rl's examples do
        args.onnx_export_path = os.path.splitext(args.onnx_export_path)[0] + ".onnx"
    if args.gdscript_export_path and not args.gdscript_export_path.endswith(".gd"):
        args.gdscript_export_path = os.path.splitext(args.gdscript_export_path)[0] + ".gd"
    if args.cuda and not torch.cuda.is_available():
        fail(f"--cuda: torch {torch.__version__} sees no CUDA GPU (leave --cuda out to train on the CPU)")
    if args.track and importlib.util.find_spec("wandb") is None:
        fail("--track needs the wandb package: pip install -r requirements-track.txt")
    # NAME=CHECKPOINT: what the file holds is checked once the game runs (check_game)
    args.frozen_policy = dict(name_and_checkpoint("--frozen-policy", value, spelling) for value in args.frozen_policy)
    args.self_play_pool = [name_and_checkpoint("--self-play-pool", value, spelling) for value in args.self_play_pool]
    if args.frozen_policy and (args.eval_checkpoint or args.export_checkpoint):
        fail("--frozen-policy is for training: --eval-checkpoint and --export-checkpoint take every policy "
             "from their checkpoint")
    self_play_problem(args, argv)
    if args.export_checkpoint and not (args.onnx_export_path or args.gdscript_export_path):
        fail("--export-checkpoint writes the model to --onnx-export-path or --gdscript-export-path: give one")
    for flag, path in (("--onnx-export-path", args.onnx_export_path),
                       ("--gdscript-export-path", args.gdscript_export_path)):
        if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            fail(f"{flag} {path!r}: its folder does not exist")
    if args.env_path is not None and not (os.path.isfile(args.env_path) and os.access(args.env_path, os.X_OK)):
        fail(f"--env-path {args.env_path!r} is not an executable file (an exported game, or chmod +x it)")
    args.env_id = os.path.basename(args.env_path).split(".")[0] if args.env_path else "godot-editor"
    if args.env_path:  # the game runs from wherever the run continues (--resume)
        args.env_path = os.path.abspath(args.env_path)
    if args.resume:
        args = resumed_args(args, argv)
        own_kind(args.checkpoint, args.resume)  # ppo_godot.py's of one policy: one line naming it
        saved_by = args.checkpoint["script"]
        if saved_by != os.path.basename(__file__) and not args.checkpoint["args"].get("self_play"):
            fail(f"{args.resume} was saved by {saved_by} without self-play: resume it with {saved_by}")
    return args


def name_and_checkpoint(flag, value, spelling):
    """[name, absolute path] of --frozen-policy's or --self-play-pool's NAME=CHECKPOINT, or one line."""
    name, _, path = value.partition("=")
    if not (name and path) or name != name.strip() or path != path.strip():  # "chaser = x.pt" too
        fail(spelling.format(flag, value))
    if not os.path.isfile(path):
        fail(f"{flag} {name}: no such checkpoint: {path!r}")
    return [name, os.path.abspath(path)]


def self_play_problem(args, argv):
    """One line for a self-play setting that cannot work; those that need the game's names are in check_game.
    A resumed run's are its checkpoint's (resumed_args refuses them given anew)."""
    if args.resume:
        return
    settings = sorted({a.split("=")[0] for a in argv if a.startswith("--self-play-")})
    if settings and (args.eval_checkpoint or args.export_checkpoint):
        fail(f"{' '.join(settings)} {'is a setting' if len(settings) == 1 else 'are settings'} of training: "
             f"--eval-checkpoint and --export-checkpoint play or export each policy's own weights")
    for name in ("save_steps", "team_change", "swap_steps", "window"):
        if getattr(args, f"self_play_{name}") < 1:
            fail(f"--self-play-{name.replace('_', '-')} must be 1 or more, got {getattr(args, f'self_play_{name}')}")
    if not 0 <= args.self_play_latest <= 1:  # nan too
        fail(f"--self-play-latest is a probability, from 0 to 1; got {args.self_play_latest}")
    rule, _, winner = args.self_play_outcome.partition("=")
    if not (rule == "return" and not winner or rule == "terminated" and winner):
        fail(f"--self-play-outcome takes return or terminated=NAME (NAME: the policy a terminated episode is a win "
             f"for), got {args.self_play_outcome!r}")


def check_game(args, envs):
    """What the game decided, checked once it is up: each learning policy's batch (its agents x
    --num-steps) must split into minibatches, the observation keys must not clash with the ONNX model's
    own names, --frozen-policy and --self-play-pool must name a policy of the game that their checkpoint
    fits, and self-play needs two policies that learn. Returns the frozen policies' weights ({name:
    weights}; None for a resumed run, whose checkpoint holds them) and the pools' ({name: [(checkpoint,
    weights)]}; none for a resumed run, whose pools are saved), each file read once. The layouts go into
    the checkpoint, for an export without a game."""
    args.policies = {name: {"obs_layout": policy.obs_layout, "action_heads": policy.action_heads}
                     for name, policy in envs.policies.items()}
    problems = [onnx_name_clash(policy.obs_keys) for policy in envs.policies.values()] if args.onnx_export_path else []
    if args.gdscript_export_path:
        problems += [gdscript_problem(policy.obs_layout, policy.action_heads) for policy in envs.policies.values()]
    frozen_weights, pool_weights, weight_sources = {}, {}, []
    names = f"its agents' policy names are {', '.join(map(repr, envs.policies))}"
    frozen_files = [("--frozen-policy", name, path) for name, path in args.frozen_policy.items()]
    pool_files = [("--self-play-pool", name, path) for name, path in args.self_play_pool]
    for flag, name, path in frozen_files + pool_files:
        if name not in envs.policies:
            problems.append(f"{flag} {name}: the game has no policy {name!r}; {names}")
        elif flag == "--self-play-pool" and name in args.frozen_policy:
            problems.append(f"--self-play-pool {name}: policy {name!r} is frozen (--frozen-policy): it has no pool")
        elif args.resume:  # its checkpoint holds the frozen weights, and the pools
            if flag == "--frozen-policy":
                frozen_weights[name] = None
        else:
            try:  # a file that is no checkpoint, or holds no such policy: its one line, the games closed
                checkpoint = load_checkpoint(path)
                saved = saved_policy(saved_policies(checkpoint, path), name, path)
            except SystemExit:
                envs.close()
                raise
            problems.append(misfit(name, saved, envs.policies[name], path))
            if flag == "--frozen-policy":
                frozen_weights[name] = saved[2]
                weight_sources.append(f"policy {name!r} is frozen: its weights from {where_saved(path, checkpoint)}")
            else:
                pool_weights.setdefault(name, []).append((path, saved[2]))
                weight_sources.append(f"policy {name!r} has a saved opponent in its self-play pool: the weights from "
                                      f"{where_saved(path, checkpoint)}")
    if set(envs.policies) <= set(args.frozen_policy):
        problems.append("--frozen-policy freezes every policy of the game: nothing would learn")
    problems.append(self_play_game_problem(args, envs, names))
    for name, policy in envs.policies.items():
        n_agents = len(policy.agent_ids)
        batch = f"{n_agents} agents x --num-steps {args.num_steps} = {n_agents * args.num_steps}"
        if name not in args.frozen_policy:
            problems.append(minibatch_problem(n_agents * args.num_steps, args.num_minibatches,
                                              batch if len(envs.policies) == 1 else f"policy {name!r}: {batch}"))
    problems = [problem for problem in problems if problem]
    if problems:  # found now, not after training
        envs.close()
        fail(problems[0])
    if weight_sources:  # where each frozen policy's and saved opponent's weights come from
        print(*weight_sources, sep="\n")
    team_change_note(args, envs)
    if args.total_timesteps % args.batch_size and not args.resume:
        budget_note(args.total_timesteps, args.batch_size,
                    f"{args.num_envs} agents x --num-steps {args.num_steps} = {args.batch_size}")
    return frozen_weights, pool_weights


def where_saved(path, checkpoint):
    """Where a frozen policy or a saved opponent comes from: the file, the run folder and the step it was saved at."""
    step = checkpoint.get("global_step")
    return (f"{path} (run {os.path.basename(os.path.dirname(path))}, {checkpoint['script']}, "
            + (f"global_step={step})" if step is not None else "its step not saved)"))


def self_play_game_problem(args, envs, names):
    """Why self-play cannot run in this game, or None."""
    learning = [name for name in envs.policies if name not in args.frozen_policy]
    if len(envs.policies) == 1:
        return f"self-play needs a game of two or more policy names, which take turns to learn; {names}"
    if len(learning) == 1:  # none: check_game has said that every policy is frozen
        return (f"self-play needs two policies that learn, to take turns; --frozen-policy leaves {learning[0]!r} "
                f"alone (train it with ppo_godot_multi_policy.py: it learns against the frozen ones)")
    winner = args.self_play_outcome.partition("=")[2]
    if winner and winner not in envs.policies:
        return f"--self-play-outcome terminated={winner}: the game has no policy {winner!r}; {names}"
    return None


def team_change_note(args, envs):
    """Said before a self-play run starts: a turn shorter than one rollout of a policy."""
    for name, policy in envs.policies.items():
        rollout_steps = len(policy.agent_ids) * args.num_steps
        if name not in args.frozen_policy and args.self_play_team_change < rollout_steps:
            print(f"{os.path.basename(__file__)}: note: --self-play-team-change {args.self_play_team_change} is "
                  f"shorter than one rollout of policy {name!r} ({len(policy.agent_ids)} agents x --num-steps "
                  f"{args.num_steps} = {rollout_steps}): the learning policy changes after every rollout")
            return


def budget_note(total_timesteps, batch_size, batch):
    """Said before a run starts: the steps it takes when --total-timesteps is not whole rollouts."""
    rollouts = max(1, total_timesteps // batch_size)
    print(f"{os.path.basename(__file__)}: note: --total-timesteps {total_timesteps} is "
          f"{'less than one rollout' if total_timesteps < batch_size else 'not a whole number of rollouts'} "
          f"({batch}): {rollouts} rollout{'s run' if rollouts > 1 else ' runs'}, {rollouts * batch_size} steps")


def minibatch_problem(batch_size, num_minibatches, batch):
    """Why the batch cannot be split into these minibatches, or None."""
    if batch_size % num_minibatches != 0:
        return f"the batch ({batch}) does not divide into --num-minibatches {num_minibatches}"
    if batch_size // num_minibatches < 2:  # advantages are normalised by their std, which one row lacks
        return (f"--num-minibatches {num_minibatches} splits the batch of {batch_size} rows into "
                f"minibatches of 1 row; each needs at least 2")
    return None


def resumed_args(args, argv):
    """The flags of the run saved in --resume, with those of RESUME_FLAGS given anew."""
    given = {a.split("=")[0] for a in argv if a.startswith("--")} - {"--resume"}
    if given - set(RESUME_FLAGS):
        fail(f"--resume continues a run with the flags it started with; it takes no "
             f"{' '.join(sorted(given - set(RESUME_FLAGS)))} (only {' '.join(RESUME_FLAGS)})")
    checkpoint = load_checkpoint(args.resume)
    added = [name for name in vars(args) if name not in checkpoint["args"] and name not in
             ("resume", "save_model", "checkpoint_minutes")]  # flags added to the script since the run was saved
    if added:
        print("resume: the run was saved before " + ", ".join(f"--{name.replace('_', '-')}" for name in added)
              + " existed; it goes on with " + ", ".join(f"--{name.replace('_', '-')} {getattr(args, name)}"
                                                          for name in added))
    resumed = argparse.Namespace(**{**vars(args), **checkpoint["args"]})
    resumed.resume = args.resume
    resumed.checkpoint = checkpoint  # for Run, which takes it out of the flags: the file is read once
    for flag in given:
        name = flag[2:].replace("-", "_")
        setattr(resumed, name, getattr(args, name))
    # How a run saves is this command's, given or not: a resumed run saves like any other
    resumed.save_model, resumed.checkpoint_minutes = args.save_model, args.checkpoint_minutes
    saved = pickle.loads(checkpoint["resume"])  # runs code from the file: resume your own files only
    if saved is None:
        fail(f"{args.resume} was saved inside an update, so it holds weights but no state to resume")
    if saved["global_step"] + resumed.batch_size > resumed.total_timesteps:  # no rollout left to do
        fail(f"the run in {args.resume} already did its {saved['global_step']} steps; give a larger "
             f"--total-timesteps to continue it")
    if resumed.cuda and not torch.cuda.is_available():
        fail(f"the run in {args.resume} trained with --cuda, and torch sees no CUDA GPU")
    return resumed


def fail(message):
    """Bad input: one line on stderr and argparse's exit code 2, no traceback."""
    print(f"{os.path.basename(__file__)}: error: {message}", file=sys.stderr)
    sys.exit(2)


class EnvFault(Exception):
    """The env returned a NaN or inf: its fault, not the learning's."""


def check_env_output(storage, next_obs, global_step):
    """A NaN or inf from the env would reach every loss: name it, before any update sees it."""
    if not (np.isfinite(storage.obs).all() and np.isfinite(next_obs).all()):
        raise EnvFault(f"the env returned a non-finite observation before global_step={global_step}")
    if not np.isfinite(storage.rewards).all():
        raise EnvFault(f"the env returned a non-finite reward before global_step={global_step}")


class RecordEpisodes:
    """Each finished episode's return (the game's own rewards: --norm-reward scales them after this) and
    length in infos["episode"] / ["_episode"], as gymnasium's RecordEpisodeStatistics; an autoreset step
    is part of no episode. The logs and --eval-checkpoint read them: nothing learned does."""

    def __init__(self, envs):
        self.env = envs
        self.episode_returns = np.zeros(envs.num_envs)
        self.episode_lengths = np.zeros(envs.num_envs, dtype=np.int64)

    def __getattr__(self, name):  # the rest is the games' vector env's
        return getattr(self.env, name)

    def reset(self, **kwargs):
        self.episode_returns[:], self.episode_lengths[:] = 0.0, 0
        return self.env.reset(**kwargs)

    def step(self, actions):
        obs, reward, terminated, truncated, infos = self.env.step(actions)
        done = terminated | truncated
        self.episode_returns += reward
        self.episode_lengths += ~infos["autoreset"]
        if done.any():
            infos.update({"episode": {"r": np.where(done, self.episode_returns, 0.0),
                                      "l": np.where(done, self.episode_lengths, 0)}, "_episode": done})
            self.episode_returns[done] = 0.0
            self.episode_lengths[done] = 0
        return obs, reward, terminated, truncated, infos


def get_env_state(envs):
    """A copy of the reward statistics (NormalizeReward's), for --resume."""
    return {"return_rms": copy.deepcopy(envs.return_rms) if isinstance(envs, NormalizeReward) else None}


def set_env_state(envs, state):
    """Put back the statistics get_env_state saved."""
    if isinstance(envs, NormalizeReward):  # {policy name: statistic}
        envs.return_rms = state["return_rms"]


class Run:
    """What keeps a run safe, around train()'s loop: the log folder and TensorBoard writer, --resume,
    checkpoints, Ctrl-C and kill, faults. Whatever a hack adds as a module of Agent, or to the
    optimizer, is saved and resumed with it (state_dict); a tensor kept elsewhere on the agent is
    named when the run saves, since it is not saved.

    Between two updates (a boundary) the run can stop and be resumed, every state as it was but the
    episodes: a running game's cannot be saved, so a resumed run starts new ones. The first Ctrl-C or
    kill (SIGTERM) only asks it to stop at the next boundary: interrupting a library half-way, like
    the TensorBoard writer, can hang it. A second one stops at once, unless the run is already on its
    way out (saving, exporting, closing): from then on a signal is only counted, so that nothing is
    cut short.

    The checkpoint keeps the flags (args) as they were when the loop started. A hack that changes args
    in the loop (a decaying args.ent_coef, say) is not saved, so --resume starts from the flag's value:
    compute such a value from iteration or global_step, as --anneal-lr does, and a resumed run goes on
    exactly where it stopped."""

    def __init__(self, args):
        self.args = args
        self.checkpoint = vars(args).pop("checkpoint", None)  # --resume's, read by resumed_args
        self.flags = args  # what the checkpoint keeps as flags; a copy of args once the loop starts
        if args.resume:  # the same log folder: TensorBoard shows one run
            self.dir = os.path.dirname(args.resume) or "."
        else:
            self.dir = f"{args.log_dir}/{args.env_id}__{args.exp_name}__{args.seed}__{int(time.time())}"
        self.name = os.path.basename(os.path.abspath(self.dir))
        self.model_path = f"{self.dir}/{args.exp_name}.pt"
        self.writer, self.boundary, self.stop_requested = None, None, []
        self.leaving = self.stopped_at_once = False  # on the way out; stopped by a second signal
        self.kept = None  # how far the checkpoint on disk resumes (resumes_to), once this run wrote or resumed it

    @contextlib.contextmanager
    def guard(self, envs, agent, optimizer):
        self.envs, self.agent, self.optimizer = envs, agent, optimizer
        try:  # made once the envs are up, so that bad input leaves no empty run folder behind
            os.makedirs(self.dir, exist_ok=True)
        except OSError as e:
            envs.close()
            fail(f"cannot make the log folder {self.dir}: {e.strerror}")
        # From an update's first gradient step to its end the weights are between two boundaries
        step_hook = optimizer.register_step_post_hook(lambda *_: setattr(self, "boundary", None))
        previous_handlers = {s: signal.signal(s, self.request_stop) for s in (signal.SIGINT, signal.SIGTERM)}
        # The writer writes from a thread of its own. A failed write (disk full) reaches us at the
        # next add_scalar as an OSError; the thread's own traceback would only repeat it.
        previous_excepthook = threading.excepthook
        threading.excepthook = lambda hook: None if issubclass(hook.exc_type, OSError) else previous_excepthook(hook)
        try:
            try:
                yield self
            finally:  # on the way out: from here a Ctrl-C or kill is counted, not raised
                self.leaving = True
            kept = self.save() if self.args.save_model else "No model is saved (--save-model false)."
            print(f"Done. The logs are in {self.dir}: watch them with `tensorboard --logdir {self.dir}`. {kept}")
        except KeyboardInterrupt:  # the first Ctrl-C or kill, seen between two updates, stops exactly
            how = " at once (a second signal): the iteration under way is dropped" if self.stopped_at_once else ""
            print(f"interrupted{how}. {self.save()}")
            sys.exit(128 + (self.stop_requested[0] if self.stop_requested else signal.SIGINT))  # 130, 143
        except EnvFault as e:  # caught before any update saw the bad values
            fail(f"{e}: a fault of the env, not of the learning. {self.save()}")
        except FloatingPointError as e:  # raised before the bad step: the weights are the last good ones
            fail(f"{e} at global_step={self.global_step + self.args.batch_size}; try a lower "
                 f"--learning-rate. {self.save()}")
        except OSError as e:  # the disk is full, or the log folder is gone: a fault of the machine
            try:
                kept = self.save()
            except OSError:
                kept = "The checkpoint could not be written either."
            fail(f"writing to {self.dir} failed ({e.strerror or e}). {kept}")
        except SystemExit:  # bad input found on the way in: nothing was learned
            raise
        except BaseException:
            print(f"crashed at global_step={self.global_step} or after. {self.save()}", file=sys.stderr)
            raise
        finally:
            envs.close()
            if self.writer is not None:
                with contextlib.suppress(OSError):  # a writer that failed to write fails again here
                    self.writer.close()
                if self.args.track:  # once the writer is closed: its last events go to W&B too
                    stop_tracking()
            step_hook.remove()
            for stop_signal, handler in previous_handlers.items():  # a stopped run is ending: ignore more
                signal.signal(stop_signal, signal.SIG_IGN if self.stop_requested else handler)
            threading.excepthook = previous_excepthook

    def request_stop(self, signum, frame):
        self.stop_requested.append(signum)
        if len(self.stop_requested) >= 2 and not self.leaving:
            self.leaving = self.stopped_at_once = True
            raise KeyboardInterrupt

    def start(self):
        """(next_obs, global_step) to start from: new episodes, and for --resume the saved
        run's weights, optimizer and random generators."""
        args, iteration, global_step = self.args, 0, 0
        saved = None
        if args.resume:
            checkpoint = self.checkpoint
            saved = pickle.loads(checkpoint["resume"])  # resumed_args has checked it
            self.kept = resumes_to(saved)
            iteration, global_step = saved["iteration"], saved["global_step"]
            load_weights(self.agent, checkpoint, args.resume)
            self.optimizer.load_state_dict(saved["optimizer"])
            random.setstate(saved["rng"]["python"])
            np.random.set_state(saved["rng"]["numpy"])
            torch.set_rng_state(saved["rng"]["torch"])
            if args.cuda:
                torch.cuda.set_rng_state(saved["rng"]["cuda"])
            set_env_state(self.envs, saved["envs"])
            unsaved = unsaved_tensors(self.agent)  # a hack's state kept outside state_dict: it restarts
            if unsaved:
                print(f"resume: {', '.join(unsaved)} were not saved: they start anew")
            end = args.num_iterations * args.batch_size
            print(f"resume: the run goes on from global_step={global_step} (iteration {iteration}) to "
                  f"global_step={end}" + (f", the whole rollouts of {args.batch_size} steps in --total-timesteps "
                                          f"{args.total_timesteps}" if end != args.total_timesteps else ""))
            started_with = checkpoint["args"]["total_timesteps"]
            if args.total_timesteps != started_with:  # --anneal-lr's decay follows the total: say what it does
                if not args.anneal_lr:
                    how = (f"--anneal-lr is off: the learning rate stays {args.learning_rate:.1e}, only the run's "
                           f"length changes")
                else:  # train()'s lr, with num_iterations from the old total at the stop and the new one next
                    at_stop = (1.0 - (iteration - 1.0) / max(1, started_with // args.batch_size)) * args.learning_rate
                    at_next = (1.0 - iteration / args.num_iterations) * args.learning_rate
                    how = ("--anneal-lr's linear decay now runs to 0 over the new total, so the learning rate "
                           + (f"goes from {at_stop:.1e} at the stop to " if iteration else "is ")
                           + f"{at_next:.1e} at the next update")
                print(f"resume: --total-timesteps {args.total_timesteps}, the run started with {started_with}: {how}")
        if args.resume:
            print("resume: a running game's episodes cannot be saved; the games start new ones")
        next_obs, _ = self.envs.reset(seed=args.seed + global_step)
        self.first_iteration, self.first_step = iteration + 1, global_step
        self.mark_boundary(iteration, global_step)
        if args.track:
            start_tracking(args, self.name)
        # A resumed run hides the events its first life logged after the saved boundary
        self.writer = SummaryWriter(self.dir, purge_step=global_step + 1 if args.resume else None)
        if not args.resume:
            self.writer.add_text(
                "hyperparameters",
                "|param|value|\n|-|-|\n" + "\n".join(f"|{k}|{v}|" for k, v in sorted(vars(args).items())),
            )
        self.flags = copy.deepcopy(args)
        self.start_time = self.last_status = self.last_checkpoint = time.time()
        return next_obs, global_step

    def iterations(self):
        """The iterations left, each one rollout and one update; a stop asked for ends them here."""
        for iteration in range(self.first_iteration, self.args.num_iterations + 1):
            if self.stop_requested:
                raise KeyboardInterrupt
            yield iteration
        if self.stop_requested:  # a signal during the last iteration still stops and saves
            raise KeyboardInterrupt

    def end_iteration(self, iteration, global_step):
        """Logs SPS, marks the boundary a stop saves, saves it every --checkpoint-minutes, and prints the
        progress every 10 s and at each of those saves."""
        sps = int((global_step - self.first_step) / (time.time() - self.start_time))
        self.writer.add_scalar("charts/SPS", sps, global_step)
        self.mark_boundary(iteration, global_step)
        saving = self.args.save_model and time.time() - self.last_checkpoint >= 60 * self.args.checkpoint_minutes
        if saving:
            self.writer.flush()  # the logs up to this boundary, which a hard kill would lose
            self.save()  # written beside, then renamed: a kill never leaves half a checkpoint
            self.last_checkpoint = time.time()
        if saving or time.time() - self.last_status > 10 or iteration == self.args.num_iterations:
            self.last_status = time.time()
            iterations_done = iteration - self.first_iteration + 1
            eta = (self.args.num_iterations - iteration) * (self.last_status - self.start_time) / iterations_done
            print(f"[{iteration}/{self.args.num_iterations}] global_step={global_step} SPS={sps} "
                  f"time_left={int(eta) // 60}m{int(eta) % 60:02d}s{self.progress_note()}"
                  f"{' (checkpoint saved)' if saving else ''}")

    def progress_note(self):
        """What a subclass adds to the progress line (nothing here)."""
        return ""

    def mark_boundary(self, iteration, global_step):
        """Where a run that stops on a fault resumes (with new episodes)."""
        self.boundary = {"iteration": iteration, "global_step": global_step, "envs": get_env_state(self.envs)}
        self.global_step = global_step

    def save(self):
        """Every exit keeps the run; returns what it kept, in words: what a resumed run needs to go on
        from the last boundary (with new episodes: a running game's cannot be saved), or, stopped inside
        an update (boundary None), the weights only."""
        resume = None
        if self.boundary is not None:
            rng = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
            if self.args.cuda:
                rng["cuda"] = torch.cuda.get_rng_state()
            resume = {**self.boundary, "optimizer": self.optimizer.state_dict(), "rng": rng}
        if self.kept is not None and (resume is None or resumes_to(resume) < self.kept):
            return (f"{self.model_path} is kept as it was: it resumes from global_step={self.kept}, more than this "
                    f"stop could save")
        kept = save_checkpoint(self.model_path, self.flags, self.agent, resume)
        self.kept = resumes_to(resume)
        unsaved = unsaved_tensors(self.agent)
        if unsaved:
            kept += (f". Not saved: {', '.join(unsaved)} (tensors kept on the agent, not registered with "
                     f"register_buffer or nn.Parameter): a resumed run starts them anew")
        return kept



class GameRun(Run):
    """Run, for a game. A running game's episodes cannot be saved: a resumed run starts new ones. A
    game that dies, freezes or never connects ends the run with one line and exit 1, what was learned
    saved. --onnx-export-path and --gdscript-export-path export the policy at the end, on Ctrl-C or kill, and
    on a game fault.
    The self-play state (SelfPlay, and its Ratings) is kept with each boundary, and restored by --resume."""

    @contextlib.contextmanager
    def guard(self, envs, agent, optimizer, self_play):
        self.self_play = self_play
        with super().guard(envs, agent, optimizer):
            try:
                try:
                    yield self
                finally:  # as in Run.guard
                    self.leaving = True
            except GameError as e:
                print(f"{os.path.basename(__file__)}: error: {e}. {self.save()}", file=sys.stderr)
                if exports(self.args):
                    print(self.export_or_say_why())
                sys.exit(1)
            except KeyboardInterrupt:  # Run saves, then exits 130 or 143
                if exports(self.args):
                    print(self.export_or_say_why())
                raise
        if exports(self.args):
            try:
                print(export_policy(agent, self.args))
            except OSError as e:
                fail(f"exporting the policy failed ({e.strerror or e}). {self.save()}")

    def start(self):
        if self.args.resume:  # before the boundary Run.start marks
            load_self_play_state(self.self_play, pickle.loads(self.checkpoint["resume"])["self_play"])
        try:
            started = super().start()
        except GameError as e:  # before anything was learned
            if not self.args.resume:
                with contextlib.suppress(OSError):  # the run's new log folder, still empty
                    os.rmdir(self.dir)
            fail(str(e))
        self.keep_game_logs()
        return started

    def mark_boundary(self, iteration, global_step):
        super().mark_boundary(iteration, global_step)
        # the pools, the turn, the counters, the ratings and the draws' generator, as at this boundary
        self.boundary["self_play"] = self_play_state(self.self_play)

    def progress_note(self):
        return self.self_play.ratings.progress_note()

    def keep_game_logs(self):
        """Moves each game's own output into the run folder (a resumed run's writes there already), and
        says once where it goes."""
        logs = []
        for game in self.envs.games:
            proc = game.game_proc
            if proc is not None and proc.log_temporary:
                with contextlib.suppress(OSError):  # else it stays where it is, named below
                    os.replace(proc.log_path, f"{self.dir}/game-{game.port}.log")
                    proc.log_path = f"{self.dir}/game-{game.port}.log"
                proc.log_temporary = False  # kept: close_games leaves it
            if proc is not None:
                logs.append(proc.log_path)
        if logs:
            print(f"the game's own output (the engine's lines) goes to {', '.join(logs)}")

    def export_or_say_why(self):
        """The exports on a run's way out, which must not end in a traceback."""
        try:
            return export_policy(self.agent, self.args)
        except OSError as e:
            return f"Exporting the policy failed ({e.strerror or e})"


class Ratings:
    """Self-play's ELO ratings (K 16, from 1200, as ML-Agents), of each policy's learning weights and of
    each snapshot: they shape nothing learned. Each episode end of a learner's agent is a game between it
    and the snapshots in play (their mean rating), scored 1, 0.5 or 0 by --self-play-outcome; the learner
    gains what its opponents lose. The game sends no winner, and says nothing of who plays whom: every
    agent of another policy counts as its opponent."""

    K, INITIAL_RATING = 16.0, 1200.0

    def __init__(self, args, envs, self_play):
        self.args, self.envs, self.self_play = args, envs, self_play
        self.untold = False  # an episode end that terminated=NAME could not score was seen
        self.policy_of = {int(i): name for name, policy in self_play.policies.items() for i in policy.agent_ids}
        self.outcome, _, self.winner = args.self_play_outcome.partition("=")
        # each policy's learning weights, and a frozen policy's, as a player: {"rating"}; a snapshot is one too
        self.players = {name: {"rating": self.INITIAL_RATING} for name in self_play.policies}
        # since the last log: {(learner, "newest" or "older"): [score, games]}, by whether every opponent with a pool
        # plays its newest snapshot: a learner that wins only against old ones is not keeping up
        self.scores = {}

    def rate(self, agent, episodic_return, terminated):
        """An episode of `agent` ended: if it is the learner's, it and the snapshots in play trade rating."""
        name, self_play = self.policy_of[agent], self.self_play
        if name != self_play.learner:
            return
        if self.outcome == "return":
            score = 1.0 if episodic_return > 0 else 0.5 if episodic_return == 0 else 0.0
        elif not self.envs.tells_time_outs[agent]:  # every end looks terminated: it would always be NAME's win
            if not self.untold:
                print(f"{os.path.basename(__file__)}: note: --self-play-outcome {self.args.self_play_outcome}: the "
                      f"game resets agents on the spot (as the plugin does) and sends no terminal_observation, so it "
                      f"cannot say which episode ends are "
                      f"time-outs; those ends are not rated (use --self-play-outcome return)")
            self.untold = True
            return
        else:  # a terminated episode is the winner's; a time-out the others'
            score = 1.0 if bool(terminated) == (name == self.winner) else 0.0
        opponents = [self_play.in_play.get(other, self.players[other]) for other in self_play.policies if other != name]
        newest = all(self_play.in_play.get(other) is pool[-1]
                     for other, pool in self_play.pools.items() if other != name)
        tally = self.scores.setdefault((name, "newest" if newest else "older"), [0.0, 0])
        tally[0], tally[1] = tally[0] + score, tally[1] + 1
        opponent_rating = np.mean([opponent["rating"] for opponent in opponents])
        expected = 1.0 / (1.0 + 10 ** ((opponent_rating - self.players[name]["rating"]) / 400))
        change = self.K * (score - expected)
        self.players[name]["rating"] += change
        for opponent in opponents:
            opponent["rating"] -= change / len(opponents)

    def log(self, writer, global_step):
        for name, player in self.players.items():
            writer.add_scalar(f"self_play/elo/{name}", player["rating"], global_step)
            writer.add_scalar(f"self_play/learning/{name}", float(name == self.self_play.learner), global_step)
        for (name, opponents), (score, games) in sorted(self.scores.items()):  # the mean score: 1 a win, 0 a loss
            writer.add_scalar(f"self_play/score/{name}/vs_{opponents}", score / games, global_step)
        self.scores.clear()

    def progress_note(self):
        ratings = " ".join(f"{name}={player['rating']:.0f}" for name, player in self.players.items())
        return f" learning={self.self_play.learner} elo: {ratings}"


def self_play_state(self_play):
    """What --resume needs of SelfPlay and its Ratings, as they are now. A copy of each player (its rating),
    whose weights are shared: a snapshot's never change once taken."""
    pools = {name: [dict(snapshot) for snapshot in pool] for name, pool in self_play.pools.items()}
    in_play = {}  # the snapshot's place in its pool, or itself once the window has dropped it
    for name, snapshot in self_play.in_play.items():
        at = [i for i, pooled in enumerate(self_play.pools[name]) if pooled is snapshot]
        in_play[name] = at[0] if at else dict(snapshot)
    ratings = self_play.ratings
    return {"learner": self_play.learner, "since": dict(self_play.since), "untold": ratings.untold, "pools": pools,
            "in_play": in_play, "players": {name: dict(player) for name, player in ratings.players.items()},
            "rng": copy.deepcopy(self_play.rng.bit_generator.state)}


def load_self_play_state(self_play, state):
    self_play.learner, self_play.since = state["learner"], dict(state["since"])
    self_play.ratings.untold = state["untold"]
    self_play.ratings.players = {name: dict(player) for name, player in state["players"].items()}
    self_play.pools = {name: [dict(snapshot) for snapshot in pool] for name, pool in state["pools"].items()}
    self_play.rng.bit_generator.state = state["rng"]
    self_play.agents.playing.clear()
    self_play.in_play = {}
    for name, snapshot in state["in_play"].items():  # its place in the pool, or itself once dropped from it
        self_play.play(name, self_play.pools[name][snapshot] if isinstance(snapshot, int) else dict(snapshot))


def resumes_to(resume):
    """The global_step a checkpoint's resume state continues from, or None: what a later save must not undo."""
    return None if resume is None else resume["global_step"]


def start_tracking(args, run_name):
    """--track: Weights & Biases, as CleanRL has it: the TensorBoard scalars synced, the flags as the
    run's config, the run named like its log folder. The W&B run's id goes into the checkpoint with
    the flags, so a resumed run goes on in the same W&B run. Started before the TensorBoard writer,
    which wandb then follows."""
    import wandb  # only under --track: parse_and_check has checked that it is installed

    wandb_run = wandb.init(project=args.wandb_project_name, entity=args.wandb_entity, name=run_name,
                           id=getattr(args, "wandb_id", None), resume="allow", config=vars(args),
                           sync_tensorboard=True, save_code=True)
    args.wandb_id = wandb_run.id


def stop_tracking():
    import wandb

    wandb.finish()


def unsaved_tensors(agent):
    """Tensors and arrays kept as plain attributes of the agent's modules: state_dict leaves them out."""
    return [f"{type(module).__name__}.{name}" for module in agent.modules() for name, value in vars(module).items()
            if not name.startswith("_") and isinstance(value, (torch.Tensor, np.ndarray))]


def save_checkpoint(path, args, agent, resume):
    """Saves the weights and flags (all that evaluation reads) and, pickled, the state --resume
    needs (None: the weights are not those of an update boundary). Returns what it saved, in words."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    try:  # write beside it, then rename: a save that fails (disk full) leaves the last one whole
        torch.save({"script": os.path.basename(__file__), "model": agent.state_dict(), "args": vars(args),
                    "global_step": resume and resume["global_step"],  # readable without unpickling "resume"
                    "resume": pickle.dumps(resume)}, path + ".tmp")
        with open(path + ".tmp", "rb") as written:  # on the disk before the rename, so a power cut keeps a whole file
            os.fsync(written.fileno())
    except RuntimeError:  # how torch reports a failed write
        with contextlib.suppress(OSError):
            os.remove(path + ".tmp")
        raise OSError(f"cannot write {path}") from None
    os.replace(path + ".tmp", path)
    if resume is None:
        return f"The model is saved to {path} (stopped inside an update: it cannot be resumed)"
    return (f"The state at global_step={resume['global_step']} is saved to {path} "
            f"(continue it with --resume {path})")


def load_checkpoint(path):
    """A checkpoint that this script saved, or one line saying why the file is not one."""
    script = os.path.basename(__file__)
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)  # runs no code from the file
    except FileNotFoundError:
        fail(f"no such checkpoint: {path!r}")
    except OSError as e:  # a folder, a file it may not read
        fail(f"cannot read {path!r} ({e.strerror or e})")
    except Exception as e:
        if not zipfile.is_zipfile(path):  # torch saves zip files: this is another kind (an ONNX model, say)
            onnx = ", not an ONNX export" if path.endswith(".onnx") else ""
            fail(f"{path!r} is not a checkpoint: give the .pt file that a training run of {script} keeps in its "
                 f"log folder (runs/<run>/{script[:-3]}.pt){onnx}")
        lines = str(e).splitlines() or [type(e).__name__]  # torch's first line advises weights_only=False: not here
        reason = next((line for line in lines if "WeightsUnpickler error" in line), lines[0])
        fail(f"{path!r} cannot be read as a checkpoint of {script} ({reason.split('. Please')[0].strip()})")
    if not isinstance(checkpoint, dict) or "script" not in checkpoint:
        fail(f"{path!r} is not a checkpoint of {script} (or one from before checkpoints named their script)")
    # ppo_godot.py's and ppo_godot_multi_policy.py's too: a policy to freeze or to pool, and a self-play run
    # saved when self-play lived in ppo_godot_multi_policy.py
    if checkpoint["script"] not in (script, "ppo_godot.py", "ppo_godot_multi_policy.py"):
        fail(f"{path!r} was saved by {checkpoint['script']}; evaluate or resume it with that script")
    return checkpoint


def load_weights(agent, checkpoint, path):
    """The saved weights into this Agent, or one line naming what does not fit (a module a hack
    added or removed since the checkpoint was saved, or another env's sizes)."""
    try:
        agent.load_state_dict(checkpoint["model"])
    except RuntimeError as e:
        fail(f"{path}: its weights do not fit this Agent ({' '.join(str(e).split())[:300]})")


# ------------------------------------------------------------------------------------------------
# Several policies' checkpoints and ONNX files
# ------------------------------------------------------------------------------------------------
def saved_policies(checkpoint, path):
    """{name: (obs_layout, action_heads, weights)} of a checkpoint, this script's or ppo_godot.py's (whose
    one policy may have no name: ""), or one line if it predates the layouts."""
    saved, model = checkpoint["args"], checkpoint["model"]
    if "policies" in saved and all(key.startswith("agents.") for key in model):  # an Agent per policy
        return {name: (spec["obs_layout"], spec["action_heads"],
                       {key[len(f"agents.{name}."):]: value for key, value in model.items()
                        if key.startswith(f"agents.{name}.")}) for name, spec in saved["policies"].items()}
    if "policies" in saved:  # one Agent, saved by ppo_godot.py under the game's name for its policy
        return {name: (spec["obs_layout"], spec["action_heads"], model) for name, spec in saved["policies"].items()}
    if "action_heads" not in saved:
        fail(f"{path} predates checkpoints that record the game's layout: train it again")
    # a vector key's shape, or its size as a number
    obs_layout = [(key, [shape] if isinstance(shape, int) else shape) for key, shape in saved["obs_layout"]]
    return {"": (obs_layout, saved["action_heads"], model)}


def own_kind(checkpoint, path):
    """One line for a checkpoint that ppo_godot.py resumes, evaluates and exports: its own, of one policy."""
    if checkpoint["script"] == "ppo_godot.py" and len(saved_policies(checkpoint, path)) == 1:
        fail(f"{path} was saved by ppo_godot.py from a game of one policy: resume, evaluate or export it with "
             f"ppo_godot.py (or play it here with --frozen-policy NAME={path})")


def saved_policy(saved, name, path):
    """The saved policy `name`; a file of one policy fits any name (the spaces still must). Else one line
    naming those the file holds."""
    if name in saved or len(saved) == 1:
        return saved.get(name, next(iter(saved.values())))
    fail(f"{path} holds no policy {name!r}: it holds {', '.join(map(repr, saved))}")


def misfit(name, saved, policy, path):
    """Why a saved policy (obs_layout, action_heads, weights) cannot play the game's policy `name`, or None."""
    as_saved = ([(key, tuple(shape)) for key, shape in saved[0]], [tuple(head) for head in saved[1]])
    in_game = ([(key, tuple(shape)) for key, shape in policy.obs_layout], [tuple(h) for h in policy.action_heads])
    if as_saved != in_game:
        return (f"{path}: the saved policy for {name!r} observes {as_saved[0]} and acts {as_saved[1]}, but the "
                f"game's {name!r} observes {in_game[0]} and acts {in_game[1]}")
    try:
        Agent(policy.obs_layout, policy.action_heads).load_state_dict(saved[2])
    except RuntimeError as e:
        return f"{path}: its weights for {name!r} do not fit this Agent ({' '.join(str(e).split())[:300]})"
    return None


def load_policies(agents, checkpoint, path):
    """The saved weights of every policy of the game into AgentPerPolicy, or one line naming a policy the
    file lacks or whose spaces differ. A game and a file of one policy each go together, whatever their names."""
    own_kind(checkpoint, path)
    saved = saved_policies(checkpoint, path)
    for name, policy in agents.policies.items():
        saved_one = saved_policy(saved, name, path)
        problem = misfit(name, saved_one, policy, path)
        if problem:
            fail(problem)
        agents[name].load_state_dict(saved_one[2])


def policy_path(path, name):
    """A policy's file: model.onnx -> model_<name>.onnx, model.gd -> model_<name>.gd."""
    root, extension = os.path.splitext(path)
    return f"{root}_{name}{extension}"


def export_policy(agents, args):
    """Each policy of AgentPerPolicy to its files of --onnx-export-path and --gdscript-export-path (an
    AIController's onnx_model_path names its policy's); says what was written."""
    written = []
    for name, agent in agents.agents.items():
        layout = agents.policies[name]
        if args.onnx_export_path:
            written.append(export_onnx(agent, layout.obs_layout, policy_path(args.onnx_export_path, name)))
        if args.gdscript_export_path:
            trained = (f"{os.path.basename(__file__)} on {args.env_id}, policy {name!r} "
                       f"({action_repeat_note(args.action_repeat)})")
            written.append(export_gdscript(agent, layout.obs_layout, layout.action_heads,
                                           policy_path(args.gdscript_export_path, name), trained))
    return "\n".join(written)


# ------------------------------------------------------------------------------------------------
# The game's connection: each game started by this process, every wait on it guarded
# ------------------------------------------------------------------------------------------------
class GameError(Exception):
    """A game process died, froze or never connected."""


class GuardedGodotEnv(GodotEnv):
    """godot-rl's GodotEnv, which sends the handshake and reads the game's spaces for us, with every
    wait guarded: accepting the connection and each read poll the game process every 0.2 s and end
    at a deadline, so a game that exits, freezes or drops the connection ends the wait at once with
    one line (GameError). GodotEnv's own reads block with no deadline, and spin at 100% CPU on a
    closed connection."""

    POLL = 0.2  # seconds between two looks at the game process

    def __init__(self, listener, proc, connect_timeout):
        self.listener, self.game_proc, self.connect_timeout = listener, proc, connect_timeout
        self.deadline = time.monotonic() + connect_timeout
        port = listener.getsockname()[1]
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # GodotEnv prints the spaces, and "press PLAY"
                super().__init__(env_path=None, port=port)
        except (AssertionError, KeyError, TypeError, ValueError) as e:  # GodotEnv's reading failed
            raise GameError(f"the game on port {port} sent spaces that godot-rl cannot read "
                            f"({type(e).__name__}: {e}): {str(getattr(self, 'env_info', ''))[:200]}") from None
        atexit.unregister(self._close)  # closing is ours: GodotEnv's atexit hook fails on a dead game

    def last_output(self):
        """The last lines the game process printed, quoted for a GameError's line (and where all of it is,
        once the log is in the run folder); empty for a game that printed nothing."""
        if self.game_proc is None:
            return ""
        try:
            with open(self.game_proc.log_path, "rb") as log:
                log.seek(max(0, os.path.getsize(self.game_proc.log_path) - 2000))
                lines = [line.strip() for line in log.read().decode(errors="replace").splitlines() if line.strip()]
        except OSError:
            return ""
        where = "" if self.game_proc.log_temporary else f" (all of it in {self.game_proc.log_path})"
        return f"; its last output: {' | '.join(lines[-3:])!r}{where}" if lines else ""

    def game_exit(self):
        """How the game process ended ("exited with code 3"), or None while it runs."""
        if self.game_proc is None or self.game_proc.poll() is None:
            return None
        code = self.game_proc.returncode
        return f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"

    def raise_if_exited(self, waiting_for):
        if self.game_exit():
            raise GameError(f"the game on port {self.port} {self.game_exit()} while {waiting_for}{self.last_output()}")

    def _start_server(self):  # the socket connect() listens on since before the game started
        self.listener.settimeout(self.POLL)
        while True:
            try:
                connection, _ = self.listener.accept()
                break
            except socket.timeout:
                if self.game_exit():
                    hint = "" if os.environ.get("DISPLAY") or self.game_proc.returncode == 0 else (
                        " (no DISPLAY is set: if the game opens a window, run it under xvfb-run -a)")
                    raise GameError(f"no game connected on port {self.port}: the game "
                                    f"{self.game_exit()}{hint}{self.last_output()}") from None
                if time.monotonic() > self.deadline:
                    raise GameError(f"no game connected on port {self.port} within "
                                    f"{self.connect_timeout:.0f} s{self.last_output()}") from None
        connection.settimeout(self.POLL)
        return connection

    def wait_for_exit(self):
        """A game that closed the connection is exiting: give it a second to say how."""
        if self.game_proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.game_proc.wait(timeout=1)

    def _send_as_json(self, message):
        try:
            super()._send_as_json(message)
        except OSError as e:
            self.wait_for_exit()
            raise GameError(f"the game on port {self.port} {self.game_exit() or 'is gone'} "
                            f"({e.strerror or e}){self.last_output()}") from None

    def _get_json_dict(self):  # the env_info reply, read by GodotEnv.__init__; kept for its key order
        self.env_info = self.receive(self.deadline, "sending its spaces (env_info)",
                                     f"--connect-timeout ({self.connect_timeout:.0f} s)")
        return self.env_info

    def receive(self, deadline, waiting_for, limit):
        """One message, a 4-byte little-endian length and then that many bytes of JSON, by the
        time.monotonic() deadline."""
        def receive_exactly(n):
            data = b""
            while len(data) < n:
                try:
                    chunk = self.connection.recv(n - len(data))
                except socket.timeout:
                    self.raise_if_exited(waiting_for)
                    if time.monotonic() > deadline:
                        raise GameError(f"the game on port {self.port} did not answer for {limit} "
                                        f"while {waiting_for} (frozen?){self.last_output()}") from None
                    continue
                except OSError:  # a connection reset: the game died mid-message
                    chunk = b""
                if not chunk:
                    self.wait_for_exit()
                    self.raise_if_exited(waiting_for)
                    raise GameError(f"the game on port {self.port} closed the connection while "
                                    f"{waiting_for} (crashed or killed){self.last_output()}")
                data += chunk
            return data

        message = receive_exactly(int.from_bytes(receive_exactly(4), "little"))
        try:
            return json.loads(message)
        except ValueError:
            raise GameError(f"the game on port {self.port} sent something that is not JSON while "
                            f"{waiting_for}: {message[:60]!r}") from None


def start_games(args):
    """The --n-parallel games, started and connected (GuardedGodotEnv), and their processes, once the
    agents of each policy name are checked to share the spaces of its first agent."""
    games = argparse.Namespace(games=[], procs=[])
    try:
        for i in range(args.n_parallel):
            if args.port is not None:
                port = args.port + i
            else:  # a free port that connect() has the system pick; the editor's plugin connects to 11008
                port = None if args.env_path else GodotEnv.DEFAULT_PORT
            games.games.append(connect(args, port, args.seed + i, games.procs))
    except BaseException:
        close_games(games)
        raise
    problem = game_problem(games.games)
    if problem:
        close_games(games)
        fail(problem)
    return games.games, games.procs


def game_problem(games):
    """Why the agents of one policy name cannot share a network, or None."""
    first_agent = {}  # each policy name's first agent: (its spaces, where)
    for game in games:
        for agent, (name, *spaces) in enumerate(zip(game.agent_policy_names, game.observation_spaces,
                                                     game.action_spaces)):
            where = f"agent {agent} of the game on port {game.port}"
            if not re.fullmatch(r"[\w-]+", name):
                return (f"{where} has the policy name {name!r}: a policy name names modules and files here, so "
                        f"letters, digits, _ and - only")
            if first_agent.setdefault(name, (spaces, where))[0] != spaces:
                return (f"{where} has other spaces than {first_agent[name][1]} ({spaces[0]}, {spaces[1]} against "
                        f"{first_agent[name][0][0]}, {first_agent[name][0][1]}): agents of one policy name "
                        f"({name!r}) share a network, so they must observe and act alike; give the others a "
                        f"policy name of their own")
            for key, space in spaces[0].items():
                if is_camera(key):
                    return (f"the observation {key!r} is a camera (\"2d\" in its name): {os.path.basename(__file__)} "
                            f"takes vector observations; ppo_godot_camera.py trains a game with cameras")
                if len(space.shape) != 1:
                    return (f"the observation {key!r} is declared with the shape {list(space.shape)}: a vector key "
                            f"needs [size]")
    return None


def is_camera(key):
    """A key whose value is an image: the plugin names its camera sensors' keys with "2d"."""
    return "2d" in key


def connect(args, port, seed, procs):
    """One game, connected. Its socket listens before the game starts, on port or (port None) on a free
    port that the system picks, and the game is told that port: no other run can take it in between."""
    with socket.socket() as listener:  # closed once the game is connected, or is not
        # the port is this run's alone: Windows (where SO_EXCLUSIVEADDRUSE is) lets SO_REUSEADDR share it
        listener.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_EXCLUSIVEADDRUSE", socket.SO_REUSEADDR), 1)
        try:
            listener.bind(("127.0.0.1", port or 0))
        except OSError as e:
            raise GameError(f"port {port} is already in use ({e.strerror}): another training run or game holds "
                            f"it; pick another --port" + (", or leave it out for free ones" if args.env_path else ""))
        listener.listen(1)
        port = listener.getsockname()[1]
        if args.env_path is None:
            print(f"waiting up to {args.connect_timeout:.0f} s on port {port}: press Play in the Godot editor", flush=True)
        else:  # GodotEnv's command line, started here so that this process owns the game
            command = [os.path.abspath(args.env_path), f"--port={port}", f"--env_seed={seed}"]
            if not args.show_window:
                command += ["--disable-render-loop", "--headless" if args.godot_version == 4 else "--no-window"]
            if args.framerate:
                command += ["--fixed-fps", str(args.framerate)]
            if args.action_repeat:
                command.append(f"--action_repeat={args.action_repeat}")
            if args.speedup:
                command.append(f"--speedup={args.speedup:g}")  # 8, not 8.0: as an int flag gave it
            log, log_path, temporary = open_game_log(args, port)
            with log:  # the game writes its own output (the engine's lines) there, not on our console
                procs.append(subprocess.Popen(command, start_new_session=True, stdout=log, stderr=subprocess.STDOUT))
            procs[-1].log_path, procs[-1].log_temporary = log_path, temporary
        game = GuardedGodotEnv(listener, procs[-1] if args.env_path else None, args.connect_timeout)
        if args.env_path is None:  # the editor shows nothing of it: say that the game is in
            print(f"the game connected on port {port}; agents in it: {game.num_envs}", flush=True)
        return game


def open_game_log(args, port):
    """(file, path, temporary) for a game's own output. A resumed run's folder is there to take it; a
    new run's folder is made once the games are up (bad input leaves none), so until GameRun.start
    moves the log in, it waits in --log-dir or the nearest folder above it, and close_games deletes it
    if the run never starts. Evaluation's is temporary too."""
    if args.resume:
        path = f"{os.path.dirname(args.resume) or '.'}/game-{port}.log"
        with contextlib.suppress(OSError):
            return open(path, "ab"), path, False
    folder = tempfile.gettempdir() if args.eval_checkpoint else os.path.abspath(args.log_dir)
    while not os.path.isdir(folder):  # the nearest folder that there is: no run makes one before its games are up
        folder = os.path.dirname(folder)
    try:
        fd, path = tempfile.mkstemp(prefix=f".game-{port}-", suffix=".log", dir=folder)
    except OSError:  # a folder it may not write in
        fd, path = tempfile.mkstemp(prefix=f"game-{port}-", suffix=".log")
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)  # as open() would make it: mkstemp's are the owner's alone
    return os.fdopen(fd, "wb"), path, True


def reset_games(envs, seed):
    """Every game's first observations of new episodes, checked (check_first_observations). Game i started
    with seed --seed + i (--env_seed); another seed (a resumed run's) goes to it as seed + i in the reset
    message, which the demo game reads and a game made with the plugin ignores: Godot RL Agents' protocol
    has none."""
    for i, game in enumerate(envs.games):
        reseed = seed is not None and seed != envs.seed
        game._send_as_json({"type": "reset", "seed": seed + i} if reseed else {"type": "reset"})
    replies = [await_reply(game, envs.step_timeout) for game in envs.games]
    check_first_observations(envs, replies)
    return replies


def step_games(envs, game_actions):
    """Every game's reply to its agents' actions, and every agent's reward, done and info (a game made
    with the plugin sends no info). Every game is sent its actions first, so the games simulate side by
    side."""
    start = 0
    for game in envs.games:
        game._send_as_json({"type": "action", "action": game_actions[start:start + game.num_envs]})
        start += game.num_envs
    replies = [await_reply(game, envs.step_timeout) for game in envs.games]
    reward = np.array([r for reply in replies for r in reply["reward"]], dtype=np.float32)
    done = np.array([d for reply in replies for d in reply["done"]], dtype=bool)
    info = [i for reply in replies for i in reply.get("info", [{}] * len(reply["done"]))]
    return replies, reward, done, info


def await_reply(game, step_timeout):
    """The game's reply to a reset or a step."""
    return game.receive(time.monotonic() + step_timeout, "playing", f"{step_timeout:.0f} s")


def check_first_observations(envs, replies):
    """The plugin feeds every key of get_obs() to an ONNX model: they must be those declared."""
    for (game, agent, obs), policy in zip(agents_of(envs, replies), envs.agent_policy):
        if set(obs) != set(policy.obs_keys):
            raise GameError(f"the game on port {game.port} sends the observation keys {sorted(obs)} but "
                            f"declares {policy.obs_keys} in its observation space (get_obs_space): the two "
                            f"must match, or its ONNX model will refuse the observations in play")
    check_observations(envs, replies)  # each value as declared: later steps are checked only when one cannot be read


def agents_of(envs, replies):
    """(game, agent index in its game, its observation) of every agent, in the vector env's order."""
    return [(game, agent, obs) for game, reply in zip(envs.games, replies) for agent, obs in enumerate(reply["obs"])]


@contextlib.contextmanager
def observation_errors(envs, replies):
    """Observations that cannot be read as declared: one line that names the key (GameError)."""
    try:
        yield
    except (TypeError, ValueError, KeyError):
        check_observations(envs, replies)
        raise GameError(f"the games send observations unlike their spaces: {str(replies[0]['obs'][0])[:200]}")


def check_observations(envs, replies):
    """Each agent sends each key as its space declares it, a list of its size; else one line that names
    the key (GameError)."""
    for (game, agent, obs), policy in zip(agents_of(envs, replies), envs.agent_policy):
        for key, shape in policy.obs_layout:
            value = obs.get(key)
            where = f"agent {agent} of the game on port {game.port} sends {key!r}"
            if not (isinstance(value, list) and len(value) == shape[0]
                    and all(isinstance(v, (int, float)) for v in value)):
                raise GameError(f"{where} as {str(value)[:40]}, but declares a list of {shape[0]} numbers")


def final_observations(envs, replies, info, ends):
    """The final observation each agent sent at these ends (info "terminal_observation": {key: values}), as
    rows of its policy's keys, zero-padded; zeros for the others. One unlike its policy's observation space: one
    line that names the agent and the key (EnvFault: exit 2, the model saved)."""
    rows = np.zeros((len(info),) + envs.single_observation_space.shape, envs.single_observation_space.dtype)
    for i, ((game, agent, _), policy) in enumerate(zip(agents_of(envs, replies), envs.agent_policy)):
        if not ends[i]:
            continue
        final = info[i]["terminal_observation"]
        for key, shape in policy.obs_layout:
            value = final.get(key) if isinstance(final, dict) else None
            if not (isinstance(value, list) and len(value) == shape[0]
                    and all(isinstance(v, (int, float)) for v in value)):
                raise EnvFault(f"agent {agent} of the game on port {game.port} sent {key!r} in its "
                               f"terminal_observation as {str(value)[:40]}, but declares a list of {shape[0]} numbers")
        rows[i, :policy.width] = np.concatenate([final[key] for key in policy.obs_keys])
    return rows


def close_games(envs):
    """Tells each game to close and ends its process group. Ctrl-C or kill while closing would leave
    the games running: they are ignored until it is done."""
    in_main_thread = threading.current_thread() is threading.main_thread()  # where signals can be set
    with stop_signals(signal.SIG_IGN) if in_main_thread else contextlib.nullcontext():
        for game in envs.games:
            with contextlib.suppress(OSError, GameError):
                game._send_as_json({"type": "close"})
                game.connection.close()
        for proc in envs.procs:  # each game runs in its own process group: end all of it
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=2)
            with contextlib.suppress(ProcessLookupError):
                if hasattr(os, "killpg"):
                    os.killpg(proc.pid, signal.SIGKILL)
                else:  # Windows has no process groups: end the game itself
                    proc.kill()
            proc.wait()
            if proc.log_temporary:  # a run that never started, or an evaluation: its errors quoted the log
                with contextlib.suppress(OSError):
                    os.remove(proc.log_path)
        envs.games, envs.procs = [], []


def exit_after_a_stop(code):
    """Ends a run stopped by Ctrl-C or kill, its model saved and exported, its log closed and its games
    ended, without the interpreter's final clean-up. A second Ctrl-C raises KeyboardInterrupt wherever
    the code is, inside a library too, and what that leaves half-done can hang the clean-up (the final
    garbage collection, say)."""
    ignore_stop_signals()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


@contextlib.contextmanager
def stop_signals(handler):
    """Ctrl-C and kill (SIGINT, SIGTERM) go to handler inside the block (signal.SIG_IGN: ignored), and to
    what they went to before, after it."""
    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for stop_signal, before in previous.items():
            signal.signal(stop_signal, before)


def ignore_stop_signals():
    """From here on, Ctrl-C and kill are ignored: the run is ending."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


@contextlib.contextmanager
def game_errors(doing):
    """A game that fails outside training: one line. Ctrl-C or kill ends the games (start_games
    closes what it started), with nothing learned lost."""
    signals_seen = []

    def interrupt(signum, frame):
        signals_seen.append(signum)
        raise KeyboardInterrupt

    try:
        with stop_signals(interrupt):
            yield
    except (GameError, EnvFault) as e:
        fail(str(e))
    except KeyboardInterrupt:
        print(f"interrupted while {doing}", file=sys.stderr)
        sys.exit(128 + (signals_seen[0] if signals_seen else signal.SIGINT))


# ------------------------------------------------------------------------------------------------
# The ONNX export, in the form the Godot RL Agents plugin loads for in-game inference
# ------------------------------------------------------------------------------------------------
class OnnxPolicy(nn.Module):
    """What the plugin's ONNX inference feeds and reads: one input per observation key, named after
    it, float [1, size], plus state_ins; out come `output`, the actions in the game's
    declared order (a discrete action's log probabilities, shifted so that the largest is 1; a continuous
    action's mean, followed by its log std when the game mixes both kinds, as the plugin's ONNX wrapper
    then expects), and
    state_outs (state_ins passed through: the plugin's slot for a recurrent state)."""

    def __init__(self, agent):
        super().__init__()
        self.agent = agent
        kinds = {kind for kind, _ in agent.heads}
        self.with_logstd = kinds == {"discrete", "continuous"}

    def forward(self, *inputs):
        *obs_parts, state_ins = inputs  # the observation keys in training's (sorted) order
        x = torch.cat(obs_parts, dim=-1)  # an observation row, as in training
        output = []
        for (kind, _), dist in zip(self.agent.heads, self.agent.action_distributions(x)):
            if kind == "discrete":
                # log pi + a constant: the logits' argmax and softmax; an older plugin's argmax (before its
                # commit fda220a) starts at 0 and so needs a largest output above 0
                output.append(dist - dist.amax(dim=-1, keepdim=True) + 1.0)
            else:
                output += list(dist) if self.with_logstd else [dist[0]]
        return torch.cat(output, dim=-1), state_ins


def onnx_name_clash(obs_keys):
    """Why these observation keys cannot be ONNX input names, or None."""
    clashes = sorted(set(obs_keys) & {"state_ins", "output", "state_outs"})
    if clashes:
        return (f"the observation key {clashes[0]!r} has the name of an input or output the plugin gives "
                f"the ONNX model itself: rename it in the game's get_obs()")
    return None


def export_onnx(agent, obs_layout, path):
    """Writes the policy for the plugin; ignores Ctrl-C and kill until the file is whole."""
    obs_keys = [key for key, _ in obs_layout]
    if onnx_name_clash(obs_keys):
        fail(onnx_name_clash(obs_keys))
    names = obs_keys + ["state_ins", "output", "state_outs"]
    example = tuple(torch.zeros(1, math.prod(shape)) for _, shape in obs_layout) + (torch.zeros(1),)
    with stop_signals(signal.SIG_IGN), warnings.catch_warnings():
        # the TorchScript exporter calls itself deprecated; the newer one needs onnxscript, not installed here
        warnings.simplefilter("ignore", DeprecationWarning)
        # written beside it, then renamed: an export that fails leaves no half-written model
        torch.onnx.export(OnnxPolicy(agent).cpu().eval(), example, path + ".tmp", input_names=names[:-2],
                          output_names=names[-2:], opset_version=17, dynamo=False,
                          dynamic_axes={name: {0: "batch_size"} for name in names})
        os.replace(path + ".tmp", path)
    return f"The policy is exported to {path}, for the Godot RL Agents plugin"


# ------------------------------------------------------------------------------------------------
# The GDScript export: the policy as one plain GDScript file that any Godot build runs (no .NET, no
# plugin inference, web and mobile too), the same text on Godot 3 and 4
# ------------------------------------------------------------------------------------------------
GDSCRIPT_ACTIVATIONS = {nn.Tanh: "tanh(%s)", nn.ReLU: "max(0.0, %s)"}


def gdscript_problem(obs_layout, action_heads, actor=None):
    """Why the export cannot write this policy as GDScript, or None."""
    for name in [key for key, _ in obs_layout] + [name for name, _, _ in action_heads]:
        if any(ord(c) > 0xFFFF for c in name):  # GDScript 3 reads \\u escapes of four digits only
            return f"--gdscript-export-path: the name {name!r} holds a character beyond U+FFFF: rename it in the game"
    layers = list(actor) if isinstance(actor, nn.Sequential) else [actor]
    writable = [isinstance(layer, nn.Linear)
                or (type(layer) in GDSCRIPT_ACTIVATIONS and i > 0 and isinstance(layers[i - 1], nn.Linear))
                for i, layer in enumerate(layers)]
    if actor is not None and not all(writable):
        return (f"--gdscript-export-path: the actor is {' -> '.join(type(layer).__name__ for layer in layers)}; the "
                f"export writes Linear layers, each one followed by Tanh, ReLU or nothing")
    return None


def gdscript_number(value):
    return repr(float(value))


def gdscript_layers(network, inputs):
    """A stack of layers (the actor; an encoder) as GDScript lines, each layer's outputs written out in full,
    its weights as numbers in the code: 0.34 ms a decision of a 20-64-64-5 MLP in Godot 3.2.3, against
    0.62 ms for loops over arrays of weights. Returns (lines, the output's name)."""
    lines, outputs, layers = [], inputs, list(network)
    for i, layer in enumerate(layers):
        if isinstance(layer, nn.Linear):
            after = layers[i + 1] if i + 1 < len(layers) else None
            activation = GDSCRIPT_ACTIVATIONS.get(type(after), "%s")
            weight, bias = layer.weight.detach().double().cpu().numpy(), layer.bias.detach().double().cpu().numpy()
            lines.append(f"\tvar layer{i} = [")
            for row, b in zip(weight, bias):
                terms = "".join(f" {'-' if w < 0 else '+'} {gdscript_number(abs(w))} * {outputs}[{j}]"
                                for j, w in enumerate(row))
                lines.append(f"\t\t{activation % (gdscript_number(b) + terms)},")
            lines.append("\t]")
            outputs = f"layer{i}"
    return lines, outputs


def gdscript_policy(agent, obs_layout, action_heads, trained):
    """The text of the GDScript file: act(obs) takes the agent's get_obs() dictionary and returns the action
    dictionary set_action() takes, greedy (as the plugin's deterministic inference) or sampled."""
    keys, sizes = [key for key, _ in obs_layout], [shape[0] for _, shape in obs_layout]
    logstd = agent.actor_logstd.detach().double().cpu().flatten().tolist() if hasattr(agent, "actor_logstd") else []
    layers, output = gdscript_layers(agent.actor, "x")
    spaces = ", ".join(f"{json.dumps(key)} {size}" for key, size in zip(keys, sizes))  # a name may hold a newline
    acts = ", ".join(f"{json.dumps(name)} {kind} {size}" for name, kind, size in action_heads)
    text = [
        f"# A policy trained by {trained}, exported as plain GDScript: Godot 3 and 4, any build, no .NET.",
        "#   var policy = load(\"res://this_file.gd\").new()",
        "#   controller.set_action(policy.act(controller.get_obs()))  # once per action, as in training",
        "# act(obs) plays the most likely action; act(obs, true) draws one from the policy (call randomize()",
        "# once in Godot 3, whose random numbers otherwise repeat). A missing or short key: an error, and {}.",
        f"# Observes: {spaces}. Acts: {acts}.",
        f"const OBS_KEYS = [{', '.join(json.dumps(key) for key in keys)}]",
        f"const OBS_SIZES = [{', '.join(map(str, sizes))}]",
        f"const LOG_STD = [{', '.join(map(gdscript_number, logstd))}]",
        "",
        "",
        "func act(obs: Dictionary, sample = false) -> Dictionary:",
        "\tvar x = []",
        "\tfor k in range(len(OBS_KEYS)):",
        "\t\tif not obs.has(OBS_KEYS[k]) or len(obs[OBS_KEYS[k]]) != OBS_SIZES[k]:",
        "\t\t\tpush_error(\"policy: get_obs() needs the key %s with %d values\" % [OBS_KEYS[k], OBS_SIZES[k]])",
        "\t\t\treturn {}",
        "\t\tfor value in obs[OBS_KEYS[k]]:",
        "\t\t\tx.append(float(value))",
        *layers,
        "\tvar action = {}",
    ]
    column, std_column = 0, 0
    for name, kind, size in action_heads:
        if kind == "discrete":
            text.append(f"\taction[{json.dumps(name)}] = choose({output}, {column}, {size}, sample)")
        else:
            text.append(f"\taction[{json.dumps(name)}] = gaussian({output}, {column}, {size}, {std_column}, sample)")
            std_column += size
        column += size
    text += [
        "\treturn action",
        "",
        "",
        "# A discrete action: the first largest logit, or a draw from their softmax",
        "func choose(logits, start, n, sample):",
        "\tvar best = 0",
        "\tfor i in range(1, n):",
        "\t\tif logits[start + i] > logits[start + best]:",
        "\t\t\tbest = i",
        "\tif not sample:",
        "\t\treturn best",
        "\tvar weights = []",
        "\tvar total = 0.0",
        "\tfor i in range(n):",
        "\t\tweights.append(exp(logits[start + i] - logits[start + best]))",
        "\t\ttotal += weights[i]",
        "\tvar u = randf() * total",
        "\tfor i in range(n):",
        "\t\tu -= weights[i]",
        "\t\tif u < 0.0:",
        "\t\t\treturn i",
        "\treturn best",
        "",
        "",
        "# A continuous action: the mean, or mean + std * z with z ~ N(0, 1) (Box-Muller), clipped to [-1, 1]",
        "func gaussian(means, start, n, std_start, sample):",
        "\tvar values = []",
        "\tfor i in range(n):",
        "\t\tvar value = means[start + i]",
        "\t\tif sample:",
        "\t\t\tvalue += exp(LOG_STD[std_start + i]) * sqrt(-2.0 * log(1.0 - randf())) * cos(2.0 * PI * randf())",
        "\t\tvalues.append(clamp(value, -1.0, 1.0))",
        "\treturn values",
    ]
    return "\n".join(text) + "\n"


def export_gdscript(agent, obs_layout, action_heads, path, trained):
    """Writes the policy as GDScript; ignores Ctrl-C and kill until the file is whole."""
    problem = gdscript_problem(obs_layout, action_heads, agent.actor)
    if problem:
        fail(problem)
    for name, weights in agent.named_parameters():  # what the file holds: the actor's, and its log std
        if name.startswith("actor") and not torch.isfinite(weights).all():
            value = weights[~torch.isfinite(weights)][0].item()
            fail(f"--gdscript-export-path: the policy's {name} holds {value}: nothing to export")
    text = gdscript_policy(agent, obs_layout, action_heads, trained)
    with stop_signals(signal.SIG_IGN), open(path + ".tmp", "w", encoding="utf-8") as f:  # beside it, then renamed
        f.write(text)
    os.replace(path + ".tmp", path)
    return f"The policy is exported to {path}, as GDScript for any Godot build"



def exports(args):
    return bool(args.onnx_export_path or args.gdscript_export_path)


def action_repeat_note(action_repeat):
    return f"--action-repeat {action_repeat}" if action_repeat else "the game's own action repeat"


def export_checkpoint(checkpoint_path, args):
    """--export-checkpoint: a saved model to ONNX and GDScript, a file per policy, with no game running."""
    checkpoint = load_checkpoint(checkpoint_path)
    own_kind(checkpoint, checkpoint_path)
    saved = argparse.Namespace(**checkpoint["args"])
    args.env_id, args.action_repeat = getattr(saved, "env_id", "a Godot game"), getattr(saved, "action_repeat", None)
    agents = argparse.Namespace(agents={}, policies={})
    for name, (obs_layout, action_heads, weights) in saved_policies(checkpoint, checkpoint_path).items():
        agent = Agent(obs_layout, action_heads)
        try:
            agent.load_state_dict(weights)
        except (KeyError, RuntimeError):
            fail(f"{checkpoint_path}: its weights do not fit the game layout it records")
        agents.agents[name] = agent
        agents.policies[name] = argparse.Namespace(obs_layout=obs_layout, action_heads=action_heads)
    print(export_policy(agents, args))


if __name__ == "__main__":
    args = parse_args()
    if args.export_checkpoint:
        export_checkpoint(args.export_checkpoint, args)
    elif args.eval_checkpoint:  # the two can differ a lot: the greedy policy never explores
        for greedy in (True, False):
            for name, returns in evaluate(args, greedy).items():
                print(f"{'greedy' if greedy else 'sampled'} policy {name}: mean_return={np.mean(returns):.1f} "
                      f"+- {np.std(returns):.1f} over {len(returns)} episodes")
    else:
        try:
            train(args)
        except SystemExit as stop:
            if stop.code in (128 + signal.SIGINT, 128 + signal.SIGTERM):
                exit_after_a_stop(stop.code)
            raise
        finally:  # saved, and every game ended: a late Ctrl-C must not break the interpreter's exit
            ignore_stop_signals()
