"""PPO for discrete actions, in one file (default env: CartPole-v1).

    python ppo.py --env-id CartPole-v1            # train; logs go to runs/
    tensorboard --logdir runs                     # watch charts/episodic_return climb to 500
    python ppo.py --eval-checkpoint runs/<run>/ppo.pt --capture-video   # watch the trained agent

Read it top to bottom, down to the plumbing banner (section 9): arguments, environment, network,
rollout, advantages, update, the training loop and evaluation, in the order a PPO lecture takes
them. A comment marked ALGO gives the equation its line computes. Below the banner is what keeps a
run safe (bad input, checkpoints, stop and resume, faults); nothing there changes what is learned.
Two things differ from most PPO scripts written before gymnasium 1.0:
  1. gymnasium 1.0 resets a finished sub-env on the *next* step(), which ignores the action and
     returns the new episode's first observation with reward 0: no transition, so its row is dropped.
  2. An episode cut by a time limit (truncated) is not a terminal state: its advantage bootstraps
     from V(final observation). Only a real termination zeroes the future value.
"""
import argparse
import contextlib
import copy
import importlib.util
import os
import pickle
import random
import signal
import sys
import threading
import time
import zipfile

import cloudpickle
import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
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
    p.add_argument("--capture-video", default=False, **flag, help="save videos of env 0 to videos/{run_name}")
    # Algorithm
    p.add_argument("--env-id", default="CartPole-v1", help="a gymnasium env id with Discrete actions")
    p.add_argument("--total-timesteps", type=int, default=500000,
                   help="env steps over all envs; a new total given with --resume respreads --anneal-lr's decay over it")
    p.add_argument("--learning-rate", type=float, default=2.5e-4, help="Adam step size")
    p.add_argument("--num-envs", type=int, default=4, help="parallel envs (one process, in turn)")
    p.add_argument("--num-steps", type=int, default=128, help="steps per env per rollout")
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
    p.add_argument("--norm-reward", default=False, **flag,
                   help="scale rewards by a running std of the discounted return (NormalizeReward)")
    p.add_argument("--bootstrap-truncation", default=True, **flag,
                   help="bootstrap V(final obs) on time-limit ends; false: terminal, as in CleanRL")
    # Evaluation
    p.add_argument("--eval-checkpoint", default=None, help="evaluate this saved model instead of training")
    p.add_argument("--eval-episodes", type=int, default=10, help="episodes for --eval-checkpoint")
    # section 9 adds the run's own flags (--save-model, --checkpoint-minutes, --resume, --track and W&B's),
    # then checks the values (a bad one ends the run in one line); --resume takes the saved run's flags
    args = parse_and_check(p, flag, sys.argv[1:] if argv is None else argv)
    args.batch_size = args.num_envs * args.num_steps  # rows per rollout
    args.num_iterations = max(1, args.total_timesteps // args.batch_size)  # rollouts, each then an update
    return args


# ================================================================================================
# 2. Environment
# ================================================================================================
def make_env(env_id, idx, capture_video, run_name):
    def thunk():
        if capture_video and idx == 0:
            env = gym.make(env_id, render_mode="rgb_array")
            env = gym.wrappers.RecordVideo(env, f"videos/{run_name}")
        else:
            env = gym.make(env_id)
        env = gym.wrappers.RecordEpisodeStatistics(env)  # raw returns, before any reward scaling
        return env

    return thunk


def make_envs(args, run_name):
    """N copies of the env stepped in turn in this process (fastest for cheap envs)."""
    with env_errors(args.env_id):  # section 9: an env that cannot be made, or not learned here: one line
        envs = gym.vector.SyncVectorEnv([make_env(args.env_id, i, args.capture_video, run_name)
                                         for i in range(args.num_envs)])
        check_spaces(envs, args.env_id)
    if args.norm_reward:  # one running statistic shared by all N envs
        envs = NormalizeReward(envs, gamma=args.gamma)
    return envs


class NormalizeReward(gym.wrappers.vector.NormalizeReward):
    """Rewards divided by a running std of the discounted return G_t = r_t + gamma G_{t-1}. gymnasium's
    wrapper restarts G at terminations only (on envs that end by time limit alone, like Pendulum, G
    runs on forever) and counts the autoreset step; here G restarts at every end, without that step."""

    def __init__(self, envs, gamma):
        super().__init__(envs, gamma=gamma)
        self.autoreset = np.zeros(self.num_envs, dtype=bool)  # this step only resets these envs

    def reset(self, **kwargs):
        self.accumulated_reward[:] = 0.0
        self.autoreset[:] = False
        return self.env.reset(**kwargs)

    def step(self, actions):
        obs, reward, terminated, truncated, info = self.env.step(actions)
        transition = ~self.autoreset
        self.accumulated_reward = np.where(transition, self.accumulated_reward * self.gamma + reward, 0.0)
        if self.update_running_mean and transition.any():
            self.return_rms.update(self.accumulated_reward[transition])
        self.autoreset = terminated | truncated
        return obs, reward / np.sqrt(self.return_rms.var + self.epsilon), terminated, truncated, info


# ================================================================================================
# 3. Network: separate actor and critic, 64-64 tanh MLPs
# ================================================================================================
def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, obs_dim, n_actions):
        super().__init__()
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
            layer_init(nn.Linear(64, n_actions), std=0.01),  # near-uniform policy at the start
        )

    def get_value(self, x):
        return self.critic(x)

    def policy(self, x):
        """log pi(.|s) for every action: the one place the policy's distribution is defined.
        Rollout sampling, the update and evaluation all use it, so an edit here changes all three."""
        return torch.log_softmax(self.actor(x), dim=-1)

    def get_action(self, x):
        """Rollout-time sampling only: a_t ~ pi(.|s_t) as argmax_a pi(a|s) / E_a, E_a ~ Exp(1), the Gumbel-max
        trick's exponential-race form: torch.multinomial's draw (so Categorical.sample's) without its input
        checks, which cost more than the forward."""
        probs = self.policy(x).exp()
        return (probs / torch.empty_like(probs).exponential_()).argmax(dim=-1)

    def evaluate_actions(self, x, action):
        """log pi(a_t|s_t), the entropy H[pi(.|s_t)] and V(s_t) (CleanRL's get_action_and_value)."""
        log_pi = self.policy(x)
        logprob = log_pi.gather(-1, action.unsqueeze(-1)).squeeze(-1)
        entropy = -(log_pi.exp() * log_pi).sum(-1)
        return logprob, entropy, self.critic(x)


# ================================================================================================
# 4. Rollout: num_steps steps of every env with the current policy
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
    )


def collect_rollout(envs, agent, storage, next_obs, next_done, global_step, writer, device):
    """Fills storage; returns (next_obs, next_done, global_step). No reset: the episodes go on from the
    last rollout (a reset here would cap every episode at num_steps steps)."""
    for step in range(len(storage.obs)):
        global_step += envs.num_envs
        storage.obs[step] = next_obs
        storage.is_transition[step] = ~next_done  # after an episode end, this step only resets

        # ALGO: a_t ~ pi(.|s_t). inference_mode: no autograd bookkeeping at all
        with torch.inference_mode():
            action = agent.get_action(torch.as_tensor(next_obs, dtype=torch.float32, device=device))
        action = action.cpu().numpy()
        storage.actions[step] = action

        next_obs, reward, terminated, truncated, infos = envs.step(action)
        storage.rewards[step] = reward
        storage.terminations[step] = terminated
        storage.truncations[step] = truncated
        next_done = terminated | truncated

        if "episode" in infos:  # the episodes that ended this step, with their raw returns
            for i in np.nonzero(infos["_episode"])[0]:
                episodic_return = float(infos["episode"]["r"][i])
                print(f"global_step={global_step}, episodic_return={episodic_return:.1f}")
                writer.add_scalar("charts/episodic_return", episodic_return, global_step)
                writer.add_scalar("charts/episodic_length", infos["episode"]["l"][i], global_step)
    check_env_output(storage, next_obs, global_step)  # section 9: a NaN or inf from the env stops here
    return next_obs, next_done, global_step


# ================================================================================================
# 5. Advantages: log pi_old and V of the rollout, then Generalized Advantage Estimation
# ================================================================================================
def rollout_logprobs_and_values(agent, storage, next_obs, device):
    """log pi_old(a_t|s_t), V(s_t) of every row, and V(next_obs). CleanRL computes them in the rollout, step
    by step; the policy has not changed since, so one batched forward over all rows gives the same, in less time."""
    with torch.inference_mode():
        logprobs, _, values = agent.evaluate_actions(
            torch.as_tensor(storage.obs, device=device), torch.as_tensor(storage.actions, device=device))
        next_value = agent.get_value(torch.as_tensor(next_obs, dtype=torch.float32, device=device))
    return logprobs.cpu().numpy(), values.squeeze(-1).cpu().numpy(), next_value.flatten().cpu().numpy()


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
# 7. The training loop: rollout, advantages, update, logging
# ================================================================================================
def train(args):
    # TRY NOT TO MODIFY: seeding, threads, device
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = args.torch_deterministic
    torch.set_num_threads(args.torch_threads)
    device = torch.device("cuda" if args.cuda else "cpu")

    run = Run(args)  # section 9: the log folder (a new one, or the resumed run's), checkpoints, stops
    envs = make_envs(args, run.name)
    agent = Agent(int(np.prod(envs.single_observation_space.shape)), envs.single_action_space.n).to(device)
    # fused=True: Adam's arithmetic in one fused kernel instead of several small ops per tensor (~30% faster here)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5, fused=True)
    storage = make_storage(args, envs)

    # Leaving this block saves the run: at the end (unless --save-model false), on Ctrl-C, kill, a fault or a crash
    with run.guard(envs, agent, optimizer):
        # s_0: new episodes from envs.reset(seed=args.seed + global_step), or those --resume saved
        next_obs, next_done, global_step = run.start()
        for iteration in run.iterations():  # Ctrl-C and kill stop here, between two updates
            if args.anneal_lr:  # linearly: --learning-rate at the first update, 1/num_iterations of it at the last
                optimizer.param_groups[0]["lr"] = (1.0 - (iteration - 1.0) / args.num_iterations) * args.learning_rate

            next_obs, next_done, global_step = collect_rollout(
                envs, agent, storage, next_obs, next_done, global_step, run.writer, device)
            logprobs, values, next_value = rollout_logprobs_and_values(agent, storage, next_obs, device)
            terminations = storage.terminations
            if not args.bootstrap_truncation:  # CleanRL's way: a time-limit end counts as terminal
                terminations = np.maximum(storage.terminations, storage.truncations)
            advantages, returns = compute_gae(storage.rewards, values, terminations, storage.truncations,
                                              next_value, args.gamma, args.gae_lambda)
            stats = ppo_update(args, agent, optimizer, storage, logprobs, values, advantages, returns, device)
            stats["charts/learning_rate"] = optimizer.param_groups[0]["lr"]
            for tag, value in stats.items():
                run.writer.add_scalar(tag, value, global_step)
            run.end_iteration(iteration, next_obs, next_done, global_step)  # SPS; where a stop resumes
    return run.dir


# ================================================================================================
# 8. Evaluation: load a checkpoint and play episodes, greedy or sampled
# ================================================================================================
def evaluate(checkpoint_path, eval_episodes, seed=1, capture_video=False, greedy=True):
    """Episode returns of the saved policy: greedy plays the most likely action, else a ~ pi(.|s)."""
    checkpoint = load_checkpoint(checkpoint_path)
    env_id = checkpoint["args"]["env_id"]
    mode = "greedy" if greedy else "sampled"
    run_name = f"{os.path.basename(os.path.dirname(os.path.abspath(checkpoint_path)))}-eval-{mode}"
    envs = gym.vector.SyncVectorEnv([make_env(env_id, 0, capture_video, run_name)])
    agent = Agent(int(np.prod(envs.single_observation_space.shape)), envs.single_action_space.n)
    load_weights(agent, checkpoint, checkpoint_path)

    episodic_returns = []
    torch.manual_seed(seed)  # the sampled actions repeat for the same seed
    obs, _ = envs.reset(seed=seed)
    while len(episodic_returns) < eval_episodes:
        with torch.inference_mode():
            obs_tensor = torch.as_tensor(obs, dtype=torch.float32)
            action = agent.policy(obs_tensor).argmax(dim=-1) if greedy else agent.get_action(obs_tensor)
        obs, _, terminated, _, infos = envs.step(action.numpy())
        if "episode" in infos and infos["_episode"][0]:  # the env resets itself on the next step
            episodic_returns.append(float(infos["episode"]["r"][0]))
            ended = "terminated" if terminated[0] else "time-out"
            print(f"{mode} eval_episode={len(episodic_returns)}, episodic_return={episodic_returns[-1]:.1f}, "
                  f"episodic_length={infos['episode']['l'][0]} ({ended})")
    envs.close()
    return episodic_returns


# ================================================================================================
# 9. Plumbing: bad input, checkpoints, stop and resume, faults. How the update learns is decided above; below
#    is what a run starts from: Run.start's first reset (seed: args.seed + global_step) or what --resume saved
# ================================================================================================
def str2bool(value):
    if value.lower() in ("true", "yes", "1"):
        return True
    if value.lower() in ("false", "no", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {value!r}")


# A resumed run keeps its flags, but for these: a longer run (the learning rate's decay is then
# spread over the new total), and how it saves
RESUME_FLAGS = ["--total-timesteps", "--save-model", "--checkpoint-minutes", "--track"]


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
                        "TensorBoard scalars, its flags, its videos")
    p.add_argument("--wandb-project-name", default="single-file-ppo", help="the W&B project of --track")
    p.add_argument("--wandb-entity", default=None, help="the W&B team or user of --track (unset: yours)")
    p.add_argument("--resume", default=None,
                   help=f"continue the run saved in this checkpoint, in its log folder with its flags (but "
                        f"{', '.join(RESUME_FLAGS)}); it unpickles the saved envs: resume your own checkpoints only")
    args = p.parse_args(argv)
    if not args.checkpoint_minutes >= 0:  # nan too
        fail(f"--checkpoint-minutes must be 0 (after every update) or more, got {args.checkpoint_minutes}")
    for name in ("total_timesteps", "num_envs", "num_steps", "num_minibatches", "update_epochs",
                 "torch_threads", "eval_episodes"):
        if getattr(args, name) <= 0:
            fail(f"--{name.replace('_', '-')} must be positive, got {getattr(args, name)}")
    if args.cuda and not torch.cuda.is_available():
        fail(f"--cuda: torch {torch.__version__} sees no CUDA GPU (leave --cuda out to train on the CPU)")
    if args.track and importlib.util.find_spec("wandb") is None:
        fail("--track needs the wandb package: pip install -r requirements-track.txt")
    problem = minibatch_problem(args.num_envs * args.num_steps, args.num_minibatches,
                                f"--num-envs x --num-steps = {args.num_envs * args.num_steps}")
    if problem:
        fail(problem)
    if args.total_timesteps % (args.num_envs * args.num_steps) and not (args.resume or args.eval_checkpoint):
        budget_note(args.total_timesteps, args.num_envs * args.num_steps,
                    f"--num-envs x --num-steps = {args.num_envs * args.num_steps}")
    return resumed_args(args, argv) if args.resume else args


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


@contextlib.contextmanager
def env_errors(env_id):
    try:
        yield
    except (gym.error.Error, ImportError) as e:  # unknown id, or a "module:Env" whose module fails
        fail(f"cannot make env {env_id!r}: {e}")


def check_spaces(envs, env_id):
    if not isinstance(envs.single_action_space, gym.spaces.Discrete):
        envs.close()
        fail(f"ppo.py needs a Discrete action space; {env_id} has {envs.single_action_space} "
             f"(use ppo_continuous_action.py for Box actions)")
    if not isinstance(envs.single_observation_space, gym.spaces.Box):
        envs.close()
        fail(f"ppo.py needs vector (Box) observations; {env_id} has {envs.single_observation_space} "
             f"(wrap it in gym.wrappers.FlattenObservation in make_env)")


class EnvFault(Exception):
    """The env returned a NaN or inf: its fault, not the learning's."""


def check_env_output(storage, next_obs, global_step):
    """A NaN or inf from the env would reach every loss: name it, before any update sees it."""
    if not (np.isfinite(storage.obs).all() and np.isfinite(next_obs).all()):
        raise EnvFault(f"the env returned a non-finite observation before global_step={global_step}")
    if not np.isfinite(storage.rewards).all():
        raise EnvFault(f"the env returned a non-finite reward before global_step={global_step}")


def find_wrapper(envs, wrapper_class):
    """The wrapper of this class inside `envs`, or None."""
    while isinstance(envs, gym.vector.VectorWrapper):
        if isinstance(envs, wrapper_class):
            return envs
        envs = envs.env
    return None


def get_env_state(envs):
    """A copy of the envs' running statistics (NormalizeReward's), for --resume."""
    reward_normalizer = find_wrapper(envs, NormalizeReward)
    if reward_normalizer is None:
        return {"reward_stats": None}
    return {"reward_stats": copy.deepcopy(
        (reward_normalizer.return_rms, reward_normalizer.accumulated_reward, reward_normalizer.autoreset))}


def set_env_state(envs, state):
    """Put back the statistics get_env_state saved."""
    reward_normalizer = find_wrapper(envs, NormalizeReward)
    if reward_normalizer is not None:
        (reward_normalizer.return_rms, reward_normalizer.accumulated_reward,
         reward_normalizer.autoreset) = state["reward_stats"]


def save_episodes(envs):
    """The sub-envs, pickled, and which of them reset on the next step; empty when they cannot be
    saved. cloudpickle (gymnasium's own) also saves the lambdas of wrappers. EzPickle envs (MuJoCo,
    Box2D) pickle as freshly made ones: their state cannot be saved."""
    vector_env = envs.unwrapped
    if any(isinstance(env.unwrapped, gym.utils.EzPickle) for env in vector_env.envs):
        return {}
    with contextlib.suppress(Exception):  # an env that does not pickle at all (a video recorder)
        return {"sub_envs": cloudpickle.dumps(vector_env.envs), "autoreset": vector_env._autoreset_envs.copy()}
    return {}


def restore_episodes(envs, state):
    """Put back the sub-envs save_episodes saved; False when there are none."""
    if state.get("sub_envs") is None:
        return False
    vector_env = envs.unwrapped
    for env in vector_env.envs:
        env.close()
    vector_env.envs = pickle.loads(state["sub_envs"])
    vector_env._autoreset_envs = state["autoreset"]  # gymnasium has no public way to set it
    return True


class Run:
    """What keeps a run safe, around train()'s loop: the log folder and TensorBoard writer, --resume,
    checkpoints, Ctrl-C and kill, faults. Whatever a hack adds as a module of Agent, or to the
    optimizer, is saved and resumed with it (state_dict); a tensor kept elsewhere on the agent is
    named when the run saves, since it is not saved.

    Between two updates (a boundary) the run can stop and be resumed exactly. The first Ctrl-C or
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
        self.videos_tracked = set()

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
            kept = self.save(exact=True) if self.args.save_model else "No model is saved (--save-model false)."
            print(f"Done. The logs are in {self.dir}: watch them with `tensorboard --logdir {self.dir}`. {kept}")
        except KeyboardInterrupt:  # the first Ctrl-C or kill, seen between two updates, stops exactly
            how = " at once (a second signal): the iteration under way is dropped" if self.stopped_at_once else ""
            print(f"interrupted{how}. {self.save(exact=not self.stopped_at_once)}")
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
                    track_videos(self.args, self.name, self.videos_tracked)  # a video the envs' closing ended
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
        """(next_obs, next_done, global_step) to start from: new episodes, or for --resume the saved
        run's weights, optimizer, random generators and, where they were saved, episodes."""
        args, iteration, global_step = self.args, 0, 0
        next_done = np.zeros(args.num_envs, dtype=bool)
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
        if saved is not None and restore_episodes(self.envs, saved["envs"]):
            next_obs, next_done = saved["next_obs"], saved["next_done"]
        else:
            if args.resume:
                print(f"resume: the episodes under way were not saved ({args.env_id} cannot be, or the run "
                      f"stopped on a fault); the envs start new ones")
            next_obs, _ = self.envs.reset(seed=args.seed + global_step)
        self.first_iteration, self.first_step = iteration + 1, global_step
        self.mark_boundary(iteration, next_obs, next_done, global_step)
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
        return next_obs, next_done, global_step

    def iterations(self):
        """The iterations left, each one rollout and one update; a stop asked for ends them here."""
        for iteration in range(self.first_iteration, self.args.num_iterations + 1):
            if self.stop_requested:
                raise KeyboardInterrupt
            yield iteration
        if self.stop_requested:  # a signal during the last iteration still stops and saves
            raise KeyboardInterrupt

    def end_iteration(self, iteration, next_obs, next_done, global_step):
        """Logs SPS, marks the boundary a stop saves, saves it every --checkpoint-minutes, and prints the
        progress every 10 s and at each of those saves."""
        sps = int((global_step - self.first_step) / (time.time() - self.start_time))
        self.writer.add_scalar("charts/SPS", sps, global_step)
        if self.args.track:
            track_videos(self.args, self.name, self.videos_tracked)
        self.mark_boundary(iteration, next_obs, next_done, global_step)
        saving = self.args.save_model and time.time() - self.last_checkpoint >= 60 * self.args.checkpoint_minutes
        if saving:
            self.writer.flush()  # the logs up to this boundary, which a hard kill would lose
            self.save(exact=True)  # written beside, then renamed: a kill never leaves half a checkpoint
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

    def mark_boundary(self, iteration, next_obs, next_done, global_step):
        """Where a run that stops on a fault resumes (with new episodes)."""
        self.boundary = {"iteration": iteration, "global_step": global_step, "envs": get_env_state(self.envs)}
        self.next_obs, self.next_done, self.global_step = next_obs, next_done, global_step

    def save(self, exact=False):
        """Every exit keeps the run; returns what it kept, in words. Stopped between two updates
        (exact), it keeps everything; after a fault, what a resumed run needs to go on with new
        episodes from the last boundary; inside an update (boundary None), the weights only."""
        resume = None
        if self.boundary is not None:
            rng = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
            if self.args.cuda:
                rng["cuda"] = torch.cuda.get_rng_state()
            resume = {**self.boundary, "optimizer": self.optimizer.state_dict(), "rng": rng,
                      "next_obs": self.next_obs, "next_done": self.next_done}
            if exact:
                resume["envs"] = {**get_env_state(self.envs), **save_episodes(self.envs)}
        if self.kept is not None and (resume is None or resumes_to(resume) < self.kept):
            return (f"{self.model_path} is kept as it was: it resumes from global_step={self.kept[0]}"
                    f"{' with its episodes' if self.kept[1] else ''}, more than this stop could save")
        kept = save_checkpoint(self.model_path, self.flags, self.agent, resume)
        self.kept = resumes_to(resume)
        unsaved = unsaved_tensors(self.agent)
        if unsaved:
            kept += (f". Not saved: {', '.join(unsaved)} (tensors kept on the agent, not registered with "
                     f"register_buffer or nn.Parameter): a resumed run starts them anew")
        return kept



def resumes_to(resume):
    """(global_step, episodes too) of a checkpoint's resume state, or None: what a later save must not undo."""
    return None if resume is None else (resume["global_step"], "sub_envs" in resume["envs"])


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


def track_videos(args, run_name, logged):
    """The videos --capture-video has finished since the last call, logged to the W&B run."""
    import wandb

    folder = f"videos/{run_name}"
    for path in sorted(set(os.listdir(folder)) - logged) if os.path.isdir(folder) else []:
        if path.endswith(".mp4"):
            wandb.log({"videos": wandb.Video(f"{folder}/{path}", format="mp4")})
            logged.add(path)


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
    if checkpoint["script"] != script:
        fail(f"{path!r} was saved by {checkpoint['script']}; evaluate or resume it with that script")
    return checkpoint


def load_weights(agent, checkpoint, path):
    """The saved weights into this Agent, or one line naming what does not fit (a module a hack
    added or removed since the checkpoint was saved, or another env's sizes)."""
    try:
        agent.load_state_dict(checkpoint["model"])
    except RuntimeError as e:
        fail(f"{path}: its weights do not fit this Agent ({' '.join(str(e).split())[:300]})")


if __name__ == "__main__":
    args = parse_args()
    if args.eval_checkpoint:  # the two can differ a lot: the greedy policy never explores
        for greedy in (True, False):
            returns = evaluate(args.eval_checkpoint, args.eval_episodes, args.seed, args.capture_video, greedy)
            print(f"{'greedy' if greedy else 'sampled'} policy: mean_return={np.mean(returns):.1f} "
                  f"+- {np.std(returns):.1f} over {len(returns)} episodes")
    else:
        train(args)
