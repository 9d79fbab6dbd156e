"""Implement PPO yourself: fill in the 9 TODOs, then train CartPole-v1 to a return of 500.

    python ppo_scratch_skeleton.py                       # stops at the first TODO not done yet
    python -m pytest tests/test_grader.py --solution ppo_scratch_skeleton.py   # grade your file

This file mirrors the lesson part of ppo.py (its sections 1-7) function by function: the same
sections, functions, signatures, flags and defaults, and the same code wherever no TODO takes its
place. Everything around the TODOs is done and correct. Once you are done, `diff
ppo_scratch_skeleton.py ppo.py` shows the TODOs' comments and your answers, the three loss functions
the grader checks one by one (ppo.py computes them inline in ppo_update), and ppo.py's plumbing (bad
input, checkpoints, stop and resume, evaluation), which this file leaves out. The TODOs, in the
order the program reaches them:
  1  Agent.get_action          sample a_t ~ pi(.|s_t)                           (the policy)
  2  Agent.evaluate_actions    log pi(a_t|s_t), entropy H[pi(.|s_t)], V(s_t)    (policy and critic)
  3  compute_gae               delta_t, the TD error                            (advantages)
  4  compute_gae               A_t, the backward GAE recursion                  (advantages)
  5  clipped_policy_loss       r_t(theta), the probability ratio                (the PPO objective)
  6  clipped_policy_loss       -L^CLIP                                          (the PPO objective)
  7  value_loss                L^VF, clipped around the old V(s_t)              (the critic)
  8  total_loss                -L^CLIP + c1 L^VF - c2 H[pi]                     (the full loss)
  9  ppo_update                gradient clipping                                (the update)
The grader checks each TODO on its own and names the mistake when one is wrong.
"""
import argparse
import os
import random
import signal
import sys
import time

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
from torch.utils.tensorboard import SummaryWriter


# ================================================================================================
# 1. Arguments
# ================================================================================================
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)  # --help shows defaults
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
    p.add_argument("--save-model", default=True, **flag,
                   help="save the weights to {log_dir}/{run_name}/{exp_name}.pt at the end (Ctrl-C always does)")
    # Algorithm
    p.add_argument("--env-id", default="CartPole-v1", help="a gymnasium env id with Discrete actions")
    p.add_argument("--total-timesteps", type=int, default=500000, help="env steps over all envs")
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
    args = p.parse_args(argv)
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
    envs = gym.vector.SyncVectorEnv([make_env(args.env_id, i, args.capture_video, run_name)
                                     for i in range(args.num_envs)])
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
        """Rollout-time sampling only: a_t ~ pi(.|s_t), one action per row of x."""
        # TODO 1 (reading guide: actor/critic network and its initialisation). self.policy(x) is
        # log pi(.|s) of every action, shape (batch, n_actions). Return one action per row, shape
        # (batch,), drawn at random with the policy's probabilities: a_t ~ pi(.|s_t), not the most
        # likely action (the agent must explore). torch.distributions.Categorical(logits=...).sample()
        # does it, or torch.multinomial on the probabilities pi(.|s) = self.policy(x).exp().
        todo(1, "Agent.get_action")

    def evaluate_actions(self, x, action):
        """log pi(a_t|s_t), the entropy H[pi(.|s_t)] and V(s_t) (CleanRL's get_action_and_value)."""
        # TODO 2 (reading guide: actor/critic network and its initialisation), the entropy too
        # (reading guide: entropy bonus).
        # From log_pi = self.policy(x), return (logprob, entropy, value), one of each per row of x:
        #   logprob = log pi(a|s) of the action given, a = action[i] for row i (the one the rollout
        #             took: do not sample a new one), shape (batch,). log_pi.gather(...) picks it.
        #   entropy = H[pi(.|s)] = -sum_a pi(a|s) log pi(a|s), shape (batch,)
        #   value   = V(s) = self.critic(x)
        # Keep them torch tensors with their gradients: the update trains the network through them.
        todo(2, "Agent.evaluate_actions")


# ================================================================================================
# 4. Rollout: num_steps steps of every env with the current policy
# ================================================================================================
def make_storage(args, envs):
    """One row per (step, env). Numpy, the envs' own format, where CleanRL keeps torch tensors: a
    row write costs ~0.5 us in numpy against ~4 us in torch, and torch sees the rollout once, after it."""
    rows = (args.num_steps, args.num_envs)
    return argparse.Namespace(
        obs=np.zeros(rows + envs.single_observation_space.shape, dtype=np.float32),
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
    """Backward GAE over a (num_steps, num_envs) rollout. values[t+1] (next_value at the last step)
    is V of the observation step t returned: when step t ends an episode, its final observation, so a
    truncated episode bootstraps from V(s_final) at no extra cost."""
    num_steps = rewards.shape[0]
    advantages = np.zeros_like(rewards)
    dones = np.maximum(terminations, truncations)
    lastgaelam = 0.0
    for t in reversed(range(num_steps)):
        nextvalues = next_value if t == num_steps - 1 else values[t + 1]
        # TODO 3 (reading guide: GAE, delta_t and A_t). The TD error
        #     delta_t = r_t + gamma * V(s_{t+1}) * (1 - terminated_t) - V(s_t)
        # with V(s_{t+1}) = nextvalues. Only a real termination zeroes the future value: a
        # truncated episode (time limit) still had a future, worth V(s_{t+1}).
        todo(3, "delta_t in compute_gae")
        # TODO 4 (reading guide: GAE, delta_t and A_t). The backward recursion
        #     A_t = delta_t + gamma * lambda * (1 - done_t) * A_{t+1}
        # where A_{t+1} is `lastgaelam` from the previous iteration and done_t = dones[t]: any
        # episode end (terminated or truncated) cuts the chain. Store A_t in advantages[t] and
        # keep it in `lastgaelam` for the next (earlier) t.
        todo(4, "the A_t recursion in compute_gae")
    return advantages, advantages + values  # A_t, and the value targets R_t = A_t + V(s_t)


# ================================================================================================
# 6. Update: update_epochs passes of minibatch gradient steps on the clipped objective
# ================================================================================================
# The three losses, each a function of its own so that the grader can check it alone (ppo.py
# computes them inline in ppo_update)
def clipped_policy_loss(newlogprob, oldlogprob, advantages, clip_coef):
    """Returns (pg_loss, ratio): pg_loss = -L^CLIP, to be minimised, and r_t(theta) of every row."""
    # TODO 5 (reading guide: the ratio r_t). The probability ratio
    #     r_t(theta) = pi_theta(a_t|s_t) / pi_old(a_t|s_t) = exp(log pi_theta - log pi_old)
    # from newlogprob (log pi_theta) and oldlogprob (log pi_old), elementwise.
    todo(5, "the ratio r_t in clipped_policy_loss")
    # TODO 6 (reading guide: L^CLIP). The clipped surrogate
    #     L^CLIP = mean(min(r_t * A_t, clip(r_t, 1 - eps, 1 + eps) * A_t)),   eps = clip_coef
    # We minimise, so return pg_loss = -L^CLIP. Careful: -min(a, b) = max(-a, -b).
    todo(6, "-L^CLIP in clipped_policy_loss")
    return pg_loss, ratio


def value_loss(newvalue, returns, oldvalue, clip_coef, clip_vloss):
    """L^VF, to be minimised. newvalue = V(s_t), returns = R_t and oldvalue = the rollout's V(s_t)
    are of shape (batch,)."""
    # TODO 7 (reading guide: L^VF and its clipping). L^VF = 0.5 * mean((V(s_t) - R_t)^2). With
    # clip_vloss (the default), an update may move V(s_t) at most clip_coef away from the rollout's
    # V_old = oldvalue, as L^CLIP does r_t, and the larger error counts:
    #     V_clipped = V_old + clip(V(s_t) - V_old, -eps, eps),   eps = clip_coef
    #     L^VF = 0.5 * mean(max((V(s_t) - R_t)^2, (V_clipped - R_t)^2))
    todo(7, "L^VF in value_loss")


def total_loss(pg_loss, v_loss, entropy, vf_coef, ent_coef):
    # TODO 8 (reading guide: the total loss). loss = -L^CLIP + c1 * L^VF - c2 * H[pi],
    # with pg_loss = -L^CLIP, c1 = vf_coef, c2 = ent_coef and H[pi] = entropy.mean(). The entropy
    # is a bonus: more entropy must give a lower loss, to keep the policy exploring.
    todo(8, "the combined loss in total_loss")


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

            mb_advantages = b_advantages[mb_inds]
            # dropping the autoreset rows can leave a 1-row minibatch, which has no std
            if args.norm_adv and len(mb_advantages) > 1:
                mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)

            # ALGO: L^CLIP = E[min(r_t A_t, clip(r_t, 1-eps, 1+eps) A_t)]; we minimise -L^CLIP
            pg_loss, ratio = clipped_policy_loss(newlogprob, b_logprobs[mb_inds], mb_advantages, args.clip_coef)

            with torch.no_grad():
                # KL(pi_old || pi_theta) estimators, http://joschu.net/blog/kl-approx.html
                logratio = ratio.log()
                old_approx_kl = (-logratio).mean()
                approx_kl = ((ratio - 1) - logratio).mean()
                clipfracs.append(((ratio - 1.0).abs() > args.clip_coef).float().mean())

            # ALGO: L^VF = 0.5 (V(s_t) - R_t)^2, optionally clipped around the old V(s_t)
            newvalue = newvalue.flatten()
            mb_returns, mb_values = b_returns[mb_inds], b_values[mb_inds]
            v_loss = value_loss(newvalue, mb_returns, mb_values, args.clip_coef, args.clip_vloss)

            # ALGO: loss = -L^CLIP + c1 L^VF - c2 H[pi]
            entropy_loss = entropy.mean()
            loss = total_loss(pg_loss, v_loss, entropy, args.vf_coef, args.ent_coef)
            check_loss(loss)  # this file's own check: a loss that is not one finite number names its TODOs

            optimizer.zero_grad()
            loss.backward()
            # TODO 9 (reading guide: gradient clipping). Clip the global norm of all the agent's
            # gradients to args.max_grad_norm, and keep their norm before clipping in grad_norm
            # (TensorBoard's diagnostics/grad_norm): one function of torch.nn.utils does both.
            todo(9, "gradient clipping in ppo_update")
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

    run_name = f"{args.env_id}__{args.exp_name}__{args.seed}__{int(time.time())}"
    run_dir = f"{args.log_dir}/{run_name}"
    writer = SummaryWriter(run_dir)  # ppo.py's Run (its plumbing) does this and much more
    envs = make_envs(args, run_name)
    agent = Agent(int(np.prod(envs.single_observation_space.shape)), envs.single_action_space.n).to(device)
    # fused=True: Adam's arithmetic in one fused kernel instead of several small ops per tensor (~30% faster here)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5, fused=True)
    storage = make_storage(args, envs)

    next_obs, _ = envs.reset(seed=args.seed)
    next_done = np.zeros(args.num_envs, dtype=bool)
    global_step = 0
    ctrl_c = CtrlC()  # section 8: Ctrl-C stops the loop between two updates, and the weights are kept
    try:
        for iteration in range(1, args.num_iterations + 1):
            if args.anneal_lr:  # linearly: --learning-rate at the first update, 1/num_iterations of it at the last
                optimizer.param_groups[0]["lr"] = (1.0 - (iteration - 1.0) / args.num_iterations) * args.learning_rate

            next_obs, next_done, global_step = collect_rollout(
                envs, agent, storage, next_obs, next_done, global_step, writer, device)
            logprobs, values, next_value = rollout_logprobs_and_values(agent, storage, next_obs, device)
            terminations = storage.terminations
            if not args.bootstrap_truncation:  # CleanRL's way: a time-limit end counts as terminal
                terminations = np.maximum(storage.terminations, storage.truncations)
            advantages, returns = compute_gae(storage.rewards, values, terminations, storage.truncations,
                                              next_value, args.gamma, args.gae_lambda)
            stats = ppo_update(args, agent, optimizer, storage, logprobs, values, advantages, returns, device)
            stats["charts/learning_rate"] = optimizer.param_groups[0]["lr"]
            for tag, value in stats.items():
                writer.add_scalar(tag, value, global_step)
            ctrl_c.stop_if_pressed()
        if args.save_model:
            torch.save(agent.state_dict(), f"{run_dir}/{args.exp_name}.pt")
            print(f"Done. The weights are saved to {run_dir}/{args.exp_name}.pt")
    except KeyboardInterrupt:
        torch.save(agent.state_dict(), f"{run_dir}/{args.exp_name}.pt")
        print(f"interrupted at global_step={global_step}; the weights are saved to {run_dir}/{args.exp_name}.pt")
        sys.exit(130)
    finally:
        envs.close()
        writer.close()
        ctrl_c.restore()
    return run_dir


# ================================================================================================
# 8. Plumbing of the exercise: its messages. Nothing below changes what is learned
# ================================================================================================
class TodoNotDone(NotImplementedError):
    """A TODO not done yet: the run stops at it, with one line naming it."""


def todo(number, where):
    raise TodoNotDone(f"TODO {number} is not done yet: {where}. Read the comment above it in "
                      f"{__file__}, and the topic it names in the reading guide (course/README.md).")


def check_loss(loss):
    """A loss that is not one finite number stops the run before the step, naming the TODOs to check."""
    if not isinstance(loss, torch.Tensor):
        raise ValueError(f"TODOs 6-8: the loss is a {type(loss).__name__}, not a torch tensor: keep the losses "
                         f"in torch (no .item() or numpy), or no gradient reaches the network")
    if loss.numel() != 1:
        raise ValueError(f"TODOs 6-8: the loss has shape {tuple(loss.shape)}, not one number: check their means")
    if not torch.isfinite(loss):
        raise FloatingPointError(f"the loss is {loss.item()}: check TODOs 5 to 8 (and TODO 2's log-probs and "
                                 f"entropy)")


class CtrlC:
    """Ctrl-C as the training loop takes it. The first press asks the loop to stop at the end of the
    iteration under way: a KeyboardInterrupt raised inside a library can leave it broken (one inside
    the TensorBoard writer's queue once left writer.close() waiting over a minute on its thread).
    A second press stops at once, unless the run is already saving and closing: then presses only
    count, so that nothing is cut short."""

    def __init__(self):
        self.pressed, self.leaving = 0, False
        self.previous = signal.signal(signal.SIGINT, self.press)

    def press(self, signum, frame):
        self.pressed += 1
        if self.pressed >= 2 and not self.leaving:
            self.leaving = True
            raise KeyboardInterrupt

    def stop_if_pressed(self):
        if self.pressed:
            self.leaving = True
            raise KeyboardInterrupt

    def restore(self):
        signal.signal(signal.SIGINT, self.previous)


def str2bool(value):
    if value.lower() in ("true", "yes", "1"):
        return True
    if value.lower() in ("false", "no", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {value!r}")


if __name__ == "__main__":
    try:
        train(parse_args())
    except TodoNotDone as e:
        sys.exit(str(e))
    except (FloatingPointError, ValueError, OSError) as e:  # a loss that is NaN or not one number, runs/ not writable
        sys.exit(f"{os.path.basename(__file__)}: error: {e}")
