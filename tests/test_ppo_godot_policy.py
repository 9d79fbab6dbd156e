"""ppo_godot.py's policy without a game: one place defines pi(.|s) (policy()), and sampling, the
update's log-probs and entropies, and the greedy action agree with torch.distributions, for
discrete, continuous and mixed actions."""
import torch
from torch.distributions import Categorical, Normal

import ppo_godot


def test_discrete_heads_match_categorical():
    torch.manual_seed(0)
    agent = ppo_godot.Agent([("obs", (5,))], [("jump", "discrete", 3), ("crouch", "discrete", 2)])
    with torch.no_grad():
        agent.actor[-1].weight.normal_()  # a policy far from uniform
    x = torch.randn(64, 5)
    heads = [Categorical(logits=logits) for logits in agent.actor(x).split([3, 2], dim=-1)]

    torch.manual_seed(1)
    action = agent.get_action(x)
    torch.manual_seed(1)  # torch.multinomial's draw from the same RNG state, head by head
    expected = torch.stack([torch.multinomial(h.probs, 1).squeeze(-1) for h in heads], dim=-1)
    assert torch.equal(action, expected.float())  # each index as a float, as the game's action rows hold it

    logprob, entropy, value = agent.evaluate_actions(x, action)
    torch.testing.assert_close(logprob, sum(h.log_prob(action[:, i]) for i, h in enumerate(heads)))
    torch.testing.assert_close(entropy, sum(h.entropy() for h in heads))
    torch.testing.assert_close(value, agent.critic(x))
    assert torch.equal(agent.get_action(x, greedy=True), torch.stack([h.probs.argmax(-1) for h in heads], dim=-1).float())


def test_continuous_matches_normal():
    torch.manual_seed(0)
    agent = ppo_godot.Agent([("obs", (4,))], [("move", "continuous", 2)])
    with torch.no_grad():
        agent.actor_logstd.copy_(torch.tensor([[0.3, -0.8]]))
    x = torch.randn(16, 4)
    normal = Normal(agent.actor(x), agent.actor_logstd.exp())
    action = agent.get_action(x)
    logprob, entropy, _ = agent.evaluate_actions(x, action)
    torch.testing.assert_close(logprob, normal.log_prob(action).sum(-1))
    torch.testing.assert_close(entropy, normal.entropy().sum(-1))
    assert torch.equal(agent.get_action(x, greedy=True), agent.actor(x))


def test_mixed_actions_in_declared_order():
    """A discrete action between two continuous ones: each takes its slice of the actor's output
    and of the action row (one column per discrete action), in the order given."""
    torch.manual_seed(0)
    agent = ppo_godot.Agent([("obs", (6,))], [("move", "continuous", 2), ("weapon", "discrete", 3), ("aim", "continuous", 1)])
    with torch.no_grad():
        agent.actor[-1].weight.normal_()
        agent.actor_logstd.copy_(torch.tensor([[0.3, -0.8, -0.2]]))
    x = torch.randn(32, 6)
    move_mean, weapon_logits, aim_mean = agent.actor(x).split([2, 3, 1], dim=-1)
    move = Normal(move_mean, agent.actor_logstd[:, :2].exp())
    weapon = Categorical(logits=weapon_logits)
    aim = Normal(aim_mean, agent.actor_logstd[:, 2:].exp())

    action = agent.get_action(x)
    assert action.shape == (32, 4) and action.dtype == torch.float32
    assert set(action[:, 2].tolist()) <= {0.0, 1.0, 2.0}
    logprob, entropy, _ = agent.evaluate_actions(x, action)
    torch.testing.assert_close(logprob, move.log_prob(action[:, :2]).sum(-1) + weapon.log_prob(action[:, 2])
                               + aim.log_prob(action[:, 3:]).sum(-1))
    torch.testing.assert_close(entropy, move.entropy().sum(-1) + weapon.entropy() + aim.entropy().sum(-1))
    greedy = agent.get_action(x, greedy=True)
    torch.testing.assert_close(greedy, torch.cat([move_mean, weapon.probs.argmax(-1, keepdim=True).float(),
                                                  aim_mean], dim=-1))
