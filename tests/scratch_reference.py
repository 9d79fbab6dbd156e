"""The reference completion of ppo_scratch_skeleton.py, and the classic mistakes the grader must catch.

    python tests/scratch_reference.py > ppo_scratch_solved.py     # write the completed file

SOLUTIONS holds the code for each TODO; `complete()` puts it in place of the skeleton's
`todo(N, ...)` lines, so the reference always matches the current skeleton. Each mutant is the
reference with one classic bug, and the grader message that must name it.
"""
import re
import sys
from pathlib import Path

SKELETON = Path(__file__).resolve().parent.parent / "ppo_scratch_skeleton.py"

SOLUTIONS = {
    1: """probs = Categorical(logits=self.actor(x))
if action is None:
    action = probs.sample()
return action, probs.log_prob(action), probs.entropy(), self.critic(x)""",
    2: "delta = rewards[t] + gamma * nextvalues * (1.0 - terminations[t]) - values[t]",
    3: """lastgaelam = delta + gamma * gae_lambda * (1.0 - dones[t]) * lastgaelam
advantages[t] = lastgaelam""",
    4: "ratio = (newlogprob - oldlogprob).exp()",
    5: """pg_loss1 = -advantages * ratio
pg_loss2 = -advantages * torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef)
pg_loss = torch.max(pg_loss1, pg_loss2).mean()""",
    6: "return 0.5 * ((newvalue - returns) ** 2).mean()",
    7: "return pg_loss + vf_coef * v_loss - ent_coef * entropy.mean()",
    8: "nn.utils.clip_grad_norm_(agent.parameters(), max_grad_norm)",
}

# name: (the TODO it changes, its wrong code, words the grader's failure message must contain)
MUTANTS = {
    "gae_without_done_mask": (3, """lastgaelam = delta + gamma * gae_lambda * lastgaelam
advantages[t] = lastgaelam""", "(1 - done_t) in the A_t recursion"),
    "bootstrap_across_episode_end": (
        2, "delta = rewards[t] + gamma * nextvalues - values[t]", "bootstraps across a termination"),
    "truncation_as_termination": (
        2, "delta = rewards[t] + gamma * nextvalues * (1.0 - dones[t]) - values[t]",
        "truncated episode must still bootstrap"),
    "ratio_without_exp": (4, "ratio = newlogprob - oldlogprob", "forgot the exp"),
    "ratio_wrong_sign": (4, "ratio = (oldlogprob - newlogprob).exp()", "sign is flipped"),
    "min_instead_of_max": (5, """pg_loss1 = -advantages * ratio
pg_loss2 = -advantages * torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef)
pg_loss = torch.min(pg_loss1, pg_loss2).mean()""", "min where -L^CLIP needs max"),
    "no_clipping": (5, "pg_loss = (-advantages * ratio).mean()", "does not clip"),
    "value_loss_not_squared": (6, "return 0.5 * (newvalue - returns).mean()", "L^VF"),
    "entropy_as_penalty": (
        7, "return pg_loss + vf_coef * v_loss + ent_coef * entropy.mean()", "entropy is a bonus"),
    "no_gradient_clipping": (8, "pass", "gradients are not clipped"),
    "argmax_instead_of_sampling": (1, """probs = Categorical(logits=self.actor(x))
if action is None:
    action = probs.logits.argmax(dim=-1)
return action, probs.log_prob(action), probs.entropy(), self.critic(x)""", "must sample"),
    # the mistakes students make beyond the classic ones: each must still end in a message naming its TODO
    "logits_as_probs": (1, """probs = Categorical(probs=self.actor(x))
if action is None:
    action = probs.sample()
return action, probs.log_prob(action), probs.entropy(), self.critic(x)""", "TODO 1: ValueError"),
    "value_not_returned": (1, """probs = Categorical(logits=self.actor(x))
if action is None:
    action = probs.sample()
return action, probs.log_prob(action), probs.entropy()""", "TODO 1: return four things"),
    "given_action_ignored": (1, """probs = Categorical(logits=self.actor(x))
action = probs.sample()
return action, probs.log_prob(action), probs.entropy(), self.critic(x)""", "when an action is given"),
    "entropy_averaged": (1, """probs = Categorical(logits=self.actor(x))
if action is None:
    action = probs.sample()
return action, probs.log_prob(action), probs.entropy().mean(), self.critic(x)""", "TODO 1: return one action"),
    "value_from_actor": (1, """probs = Categorical(logits=self.actor(x))
if action is None:
    action = probs.sample()
return action, probs.log_prob(action), probs.entropy(), self.actor(x)""", "V(s) = self.critic(x)"),
    "delta_without_gamma": (2, "delta = rewards[t] + nextvalues * (1.0 - terminations[t]) - values[t]",
                            "TODO 2: with lambda = 0"),
    "delta_reads_past_the_rollout": (2, "delta = rewards[t] + gamma * values[t + 1] * (1.0 - terminations[t]) - values[t]",
                                     "TODOs 2-3: IndexError"),
    "recursion_cut_at_terminations_only": (3, """lastgaelam = delta + gamma * gae_lambda * (1.0 - terminations[t]) * lastgaelam
advantages[t] = lastgaelam""", "leaked across a time limit"),
    "advantage_not_stored": (3, "lastgaelam = delta + gamma * gae_lambda * (1.0 - dones[t]) * lastgaelam",
                             "store A_t in advantages[t]"),
    "recursion_without_gamma": (3, """lastgaelam = delta + gae_lambda * (1.0 - dones[t]) * lastgaelam
advantages[t] = lastgaelam""", "TODO 3: A_t = delta_t + gamma lambda"),
    "ratio_detached": (4, "ratio = (newlogprob.detach() - oldlogprob).exp()", "carries no gradient"),
    "advantages_clipped": (5, """pg_loss1 = -advantages * ratio
pg_loss2 = -torch.clamp(advantages, 1 - clip_coef, 1 + clip_coef) * ratio
pg_loss = torch.max(pg_loss1, pg_loss2).mean()""", "does not clip the ratio"),
    "policy_loss_not_averaged": (5, """pg_loss1 = -advantages * ratio
pg_loss2 = -advantages * torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef)
pg_loss = torch.max(pg_loss1, pg_loss2)""", "TODO 5: pg_loss must be one number"),
    "fixed_clip_range": (5, """pg_loss1 = -advantages * ratio
pg_loss2 = -advantages * torch.clamp(ratio, 0.8, 1.2)
pg_loss = torch.max(pg_loss1, pg_loss2).mean()""", "not a fixed 0.2"),
    "value_loss_without_half": (6, "return ((newvalue - returns) ** 2).mean()", "the 0.5 is missing"),
    "entropy_not_averaged": (7, "return pg_loss + vf_coef * v_loss - ent_coef * entropy", "TODO 7: the loss must be one number"),
    "value_loss_left_out": (7, "return pg_loss - ent_coef * entropy.mean()", "TODO 7: loss ="),
    "clipped_to_the_constant": (8, "nn.utils.clip_grad_norm_(agent.parameters(), MAX_GRAD_NORM)",
                                "not to the max_grad_norm argument"),
    "actor_gradients_only": (8, "nn.utils.clip_grad_norm_(agent.actor.parameters(), max_grad_norm)",
                             "gradients are not clipped"),
}

# A mistake in the scaffolding rather than a TODO: the seed's own bug
RESET_EVERY_ROLLOUT = (
    "    num_envs = envs.num_envs\n",
    "    num_envs = envs.num_envs\n    next_obs, _ = envs.reset()\n"
    "    next_done = np.zeros(num_envs, dtype=bool)\n",
)


def complete(solutions=SOLUTIONS, skeleton_text=None):
    """The skeleton with each `todo(N, ...)` line replaced by solutions[N], at its indentation."""
    text = skeleton_text if skeleton_text is not None else SKELETON.read_text()

    def fill(match):
        indent, number = match.group(1), int(match.group(2))
        return "\n".join(indent + line for line in solutions[number].splitlines())

    text, count = re.subn(r"^( *)todo\((\d+), .*\)$", fill, text, flags=re.M)
    assert count == len(solutions), f"expected {len(solutions)} TODOs in the skeleton, found {count}"
    return text


def mutants():
    """{name: (file text, words its grader failure must contain)}"""
    out = {name: (complete({**SOLUTIONS, todo: code}), words)
           for name, (todo, code, words) in MUTANTS.items()}
    reference = complete()
    assert RESET_EVERY_ROLLOUT[0] in reference
    out["reset_every_rollout"] = (reference.replace(*RESET_EVERY_ROLLOUT), "must not reset the envs")
    return out


if __name__ == "__main__":
    sys.stdout.write(complete())
