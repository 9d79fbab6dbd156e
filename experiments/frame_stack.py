"""CartPoleNoVel-v1 with its last 4 observations stacked: the classic way to give a policy without
memory the speeds it cannot see (DQN stacked 4 Atari frames for the same reason). For ppo.py:

    python ppo.py --env-id experiments.frame_stack:CartPoleNoVelStack4-v1

(gymnasium's `module:EnvId` form imports this module, which registers the env; run from the repo's root.)
"""
import gymnasium as gym

import ppo_lstm  # noqa: F401 (registers CartPoleNoVel-v1)


def stacked(stack_size=4, **kwargs):
    """(x, theta) of the last stack_size steps, oldest first, as one flat vector; at an episode's
    start the missing ones repeat the first observation."""
    env = gym.wrappers.FrameStackObservation(gym.make("CartPoleNoVel-v1", **kwargs), stack_size, padding_type="reset")
    return gym.wrappers.FlattenObservation(env)


gym.register("CartPoleNoVelStack4-v1", entry_point=stacked)
