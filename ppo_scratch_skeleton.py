"""Implement PPO yourself: fill in the 8 TODOs, then train CartPole-v1 to a return of 500.

    python ppo_scratch_skeleton.py                       # stops at the first TODO not done yet
    python -m pytest tests/test_grader.py --solution ppo_scratch_skeleton.py   # grade your file

Everything around the TODOs (envs, storage, rollout, logging to runs/, the update loop) is done
and correct; it follows ppo.py, so you can compare your answers with it afterwards. The TODOs come
in the order the program reaches them:
  1  ActorCritic.get_action_and_value   sample a_t ~ pi(.|s_t)              (the policy)
  2  compute_gae                        delta_t, the TD error               (advantages)
  3  compute_gae                        A_t, the backward GAE recursion     (advantages)
  4  clipped_policy_loss                r_t(theta), the probability ratio   (the PPO objective)
  5  clipped_policy_loss                -L^CLIP                             (the PPO objective)
  6  value_loss                         L^VF                                (the critic)
  7  total_loss                         -L^CLIP + c1 L^VF - c2 H[pi]        (the full loss)
  8  ppo_update                         gradient clipping                   (the update)
The grader checks each TODO on its own and names the mistake when one is wrong.
"""
import sys
import time

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
from torch.distributions.categorical import Categorical
from torch.utils.tensorboard import SummaryWriter

# ================================================================================================
# Hyperparameters (ppo.py's defaults)
# ================================================================================================
ENV_ID = "CartPole-v1"
SEED = 1
TOTAL_TIMESTEPS = 500_000
NUM_ENVS = 4
NUM_STEPS = 128  # steps per env per rollout: a batch of 512 rows
NUM_MINIBATCHES = 4
UPDATE_EPOCHS = 4
LEARNING_RATE = 2.5e-4
GAMMA = 0.99
GAE_LAMBDA = 0.95
CLIP_COEF = 0.2
ENT_COEF = 0.01
VF_COEF = 0.5
MAX_GRAD_NORM = 0.5


class TodoNotDone(NotImplementedError):
    pass


def todo(number, where):
    raise TodoNotDone(f"TODO {number} is not done yet: {where}. Read the comment above it in "
                      f"{__file__}, and the topic it names in the reading guide (course/README.md).")


# ================================================================================================
# Environment
# ================================================================================================
def make_envs(num_envs=NUM_ENVS):
    """N CartPoles stepped in turn. RecordEpisodeStatistics puts finished episodes in infos."""
    return gym.vector.SyncVectorEnv(
        [lambda: gym.wrappers.RecordEpisodeStatistics(gym.make(ENV_ID)) for _ in range(num_envs)])


# ================================================================================================
# Network: separate actor and critic, 64-64 tanh MLPs
# ================================================================================================
def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class ActorCritic(nn.Module):
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

    def get_action_and_value(self, x, action=None):
        # TODO 1 (reading guide: actor/critic network and its initialisation). The actor outputs
        # logits; pi(.|s) = softmax(logits).
        # Build `probs = Categorical(logits=...)`. If `action` is None, sample one: a_t ~ pi(.|s_t).
        # Return (action, log pi(action|s), entropy H[pi(.|s)], V(s)), the last from self.critic.
        todo(1, "ActorCritic.get_action_and_value")


# ================================================================================================
# Rollout: NUM_STEPS steps of every env with the current policy
# ================================================================================================
def collect_rollout(envs, agent, next_obs, next_done, writer, global_step):
    """Returns the rollout storage and the (next_obs, next_done, global_step) to carry over.

    The envs are NOT reset here: each rollout continues the episodes where the last one stopped
    (resetting every rollout would cap every episode at NUM_STEPS steps, so CartPole's 500 could
    never be reached). gymnasium 1.0 resets a finished env on its *next* step, which ignores the
    action and returns the new first observation with reward 0: that row is not a transition,
    and `is_transition` marks it so the update can leave it out.
    """
    num_envs = envs.num_envs
    obs = np.zeros((NUM_STEPS, num_envs) + envs.single_observation_space.shape, dtype=np.float32)
    actions = np.zeros((NUM_STEPS, num_envs), dtype=np.int64)
    logprobs = np.zeros((NUM_STEPS, num_envs), dtype=np.float32)
    values = np.zeros((NUM_STEPS, num_envs), dtype=np.float32)
    rewards = np.zeros((NUM_STEPS, num_envs), dtype=np.float32)
    terminations = np.zeros((NUM_STEPS, num_envs), dtype=np.float32)
    truncations = np.zeros((NUM_STEPS, num_envs), dtype=np.float32)
    is_transition = np.zeros((NUM_STEPS, num_envs), dtype=bool)

    for step in range(NUM_STEPS):
        global_step += num_envs
        obs[step] = next_obs
        is_transition[step] = ~next_done  # after an episode end, this step only resets

        with torch.no_grad():
            action, logprob, _, value = agent.get_action_and_value(torch.as_tensor(next_obs))
        actions[step] = action.numpy()
        logprobs[step] = logprob.numpy()
        values[step] = value.flatten().numpy()

        next_obs, reward, terminated, truncated, infos = envs.step(action.numpy())
        rewards[step] = reward
        terminations[step] = terminated
        truncations[step] = truncated
        next_done = terminated | truncated

        if "episode" in infos:  # RecordEpisodeStatistics: episodes that ended this step
            for i in np.nonzero(infos["_episode"])[0]:
                episodic_return = float(infos["episode"]["r"][i])
                print(f"global_step={global_step}, episodic_return={episodic_return:.1f}")
                writer.add_scalar("charts/episodic_return", episodic_return, global_step)
                writer.add_scalar("charts/episodic_length", infos["episode"]["l"][i], global_step)

    with torch.no_grad():
        next_value = agent.get_value(torch.as_tensor(next_obs)).flatten().numpy()
    storage = dict(obs=obs, actions=actions, logprobs=logprobs, values=values, rewards=rewards,
                   terminations=terminations, truncations=truncations, is_transition=is_transition,
                   next_value=next_value)
    return storage, next_obs, next_done, global_step


# ================================================================================================
# Generalized Advantage Estimation
# ================================================================================================
def compute_gae(rewards, values, terminations, truncations, next_value, gamma, gae_lambda):
    """Backward GAE over a (num_steps, num_envs) rollout; returns (advantages, returns).

    values[t+1] (next_value at the last step) is the value of the observation that step t
    returned. When step t ends an episode that observation is the episode's final one.
    """
    num_steps = rewards.shape[0]
    advantages = np.zeros_like(rewards)
    dones = np.maximum(terminations, truncations)
    lastgaelam = 0.0
    for t in reversed(range(num_steps)):
        nextvalues = next_value if t == num_steps - 1 else values[t + 1]
        # TODO 2 (reading guide: GAE, delta_t and A_t). The TD error
        #     delta_t = r_t + gamma * V(s_{t+1}) * (1 - terminated_t) - V(s_t)
        # with V(s_{t+1}) = nextvalues. Only a real termination zeroes the future value: a
        # truncated episode (time limit) still had a future, worth V(s_{t+1}).
        todo(2, "delta_t in compute_gae")
        # TODO 3 (reading guide: GAE, delta_t and A_t). The backward recursion
        #     A_t = delta_t + gamma * lambda * (1 - done_t) * A_{t+1}
        # where A_{t+1} is `lastgaelam` from the previous iteration and done_t = dones[t]: any
        # episode end (terminated or truncated) cuts the chain. Store A_t in advantages[t] and
        # keep it in `lastgaelam` for the next (earlier) t.
        todo(3, "the A_t recursion in compute_gae")
    return advantages, advantages + values  # A_t, and the value targets R_t = A_t + V(s_t)


# ================================================================================================
# The losses
# ================================================================================================
def clipped_policy_loss(newlogprob, oldlogprob, advantages, clip_coef):
    """Returns (pg_loss, ratio): pg_loss = -L^CLIP, to be minimised."""
    # TODO 4 (reading guide: the ratio r_t). The probability ratio
    #     r_t(theta) = pi_theta(a_t|s_t) / pi_old(a_t|s_t) = exp(log pi_theta - log pi_old)
    # from newlogprob (log pi_theta) and oldlogprob (log pi_old), elementwise.
    todo(4, "the ratio r_t in clipped_policy_loss")
    # TODO 5 (reading guide: L^CLIP). The clipped surrogate
    #     L^CLIP = mean(min(r_t * A_t, clip(r_t, 1 - eps, 1 + eps) * A_t)),   eps = clip_coef
    # We minimise, so return pg_loss = -L^CLIP. Careful: -min(a, b) = max(-a, -b).
    todo(5, "-L^CLIP in clipped_policy_loss")
    return pg_loss, ratio


def value_loss(newvalue, returns):
    # TODO 6 (reading guide: L^VF and its clipping). L^VF = 0.5 * mean((V(s_t) - R_t)^2), with
    # newvalue = V(s_t) of shape (batch,) and returns = R_t.
    todo(6, "L^VF in value_loss")


def total_loss(pg_loss, v_loss, entropy, vf_coef, ent_coef):
    # TODO 7 (reading guide: the total loss). loss = -L^CLIP + c1 * L^VF - c2 * H[pi],
    # with pg_loss = -L^CLIP, c1 = vf_coef, c2 = ent_coef and H[pi] = entropy.mean(). The entropy
    # is a bonus: more entropy must give a lower loss, to keep the policy exploring.
    todo(7, "the combined loss in total_loss")


# ================================================================================================
# The update: UPDATE_EPOCHS passes of minibatch gradient steps over the real transitions
# ================================================================================================
def ppo_update(agent, optimizer, storage, advantages, returns, max_grad_norm=MAX_GRAD_NORM):
    keep = storage["is_transition"].reshape(-1)  # leave out the autoreset rows

    def batch(x):  # (num_steps, num_envs, ...) -> (n_transitions, ...) tensor
        return torch.as_tensor(x.reshape((-1,) + x.shape[2:])[keep])

    b_obs, b_actions, b_logprobs = batch(storage["obs"]), batch(storage["actions"]), batch(storage["logprobs"])
    b_advantages, b_returns = batch(advantages), batch(returns)

    for epoch in range(UPDATE_EPOCHS):
        for mb_inds in torch.randperm(len(b_obs)).tensor_split(NUM_MINIBATCHES):
            _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb_inds], b_actions[mb_inds])
            mb_advantages = b_advantages[mb_inds]
            mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)

            pg_loss, ratio = clipped_policy_loss(newlogprob, b_logprobs[mb_inds], mb_advantages, CLIP_COEF)
            v_loss = value_loss(newvalue.flatten(), b_returns[mb_inds])
            loss = total_loss(pg_loss, v_loss, entropy, VF_COEF, ENT_COEF)
            if loss.numel() != 1:
                raise ValueError(f"TODOs 5-7: the loss has shape {tuple(loss.shape)}, not one number: check their means")
            if not torch.isfinite(loss):  # stop before a NaN reaches the weights
                raise FloatingPointError(f"the loss is {loss.item()}: check TODOs 4 to 7")

            optimizer.zero_grad()
            loss.backward()
            # TODO 8 (reading guide: gradient clipping). Clip the global norm of all the agent's
            # gradients to max_grad_norm before the step (torch.nn.utils has the function).
            todo(8, "gradient clipping in ppo_update")
            optimizer.step()
    return pg_loss.item(), v_loss.item(), entropy.mean().item()


# ================================================================================================
# Main loop
# ================================================================================================
def train(total_timesteps=TOTAL_TIMESTEPS, seed=SEED, run_name=None):
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    run_name = run_name or f"{ENV_ID}__ppo_scratch__{seed}__{int(time.time())}"
    run_dir = f"runs/{run_name}"
    writer = SummaryWriter(run_dir)
    envs = make_envs()
    agent = ActorCritic(envs.single_observation_space.shape[0], envs.single_action_space.n)
    optimizer = torch.optim.Adam(agent.parameters(), lr=LEARNING_RATE, eps=1e-5)

    next_obs, _ = envs.reset(seed=seed)
    next_done = np.zeros(envs.num_envs, dtype=bool)
    global_step = 0
    num_iterations = total_timesteps // (NUM_ENVS * NUM_STEPS)
    try:
        for iteration in range(1, num_iterations + 1):
            optimizer.param_groups[0]["lr"] = (1.0 - (iteration - 1.0) / num_iterations) * LEARNING_RATE
            storage, next_obs, next_done, global_step = collect_rollout(
                envs, agent, next_obs, next_done, writer, global_step)
            advantages, returns = compute_gae(storage["rewards"], storage["values"], storage["terminations"],
                                              storage["truncations"], storage["next_value"], GAMMA, GAE_LAMBDA)
            pg_loss, v_loss, entropy = ppo_update(agent, optimizer, storage, advantages, returns)
            writer.add_scalar("losses/policy_loss", pg_loss, global_step)
            writer.add_scalar("losses/value_loss", v_loss, global_step)
            writer.add_scalar("losses/entropy", entropy, global_step)
    except KeyboardInterrupt:  # Ctrl-C: keep what was learned
        torch.save(agent.state_dict(), f"{run_dir}/ppo_scratch.pt")
        print(f"interrupted at global_step={global_step}; weights saved to {run_dir}/ppo_scratch.pt")
        sys.exit(130)
    finally:
        envs.close()
        writer.close()
    return agent


if __name__ == "__main__":
    try:
        train()
    except TodoNotDone as e:
        sys.exit(str(e))
    except (FloatingPointError, ValueError, OSError) as e:  # a loss that is NaN or not one number, runs/ not writable
        sys.exit(f"ppo_scratch_skeleton.py: error: {e}")
