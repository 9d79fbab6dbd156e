"""The reference completion of ppo_scratch_skeleton.py, and the mistakes the grader must catch.

    python tests/scratch_reference.py > ppo_scratch_solved.py     # write the completed file

SOLUTIONS holds the code for each TODO, ppo.py's own lines wherever ppo.py has them; `complete()`
puts it in place of the skeleton's `todo(N, ...)` lines, so the reference always matches the current
skeleton. Each mutant is the reference with one mistake, and words the grader's message must have.
"""
import re
import sys
from pathlib import Path

SKELETON = Path(__file__).resolve().parent.parent / "ppo_scratch_skeleton.py"

SOLUTIONS = {
    1: """probs = self.policy(x).exp()
return (probs / torch.empty_like(probs).exponential_()).argmax(dim=-1)""",
    2: """log_pi = self.policy(x)
logprob = log_pi.gather(-1, action.unsqueeze(-1)).squeeze(-1)
entropy = -(log_pi.exp() * log_pi).sum(-1)
return logprob, entropy, self.critic(x)""",
    3: "delta = rewards[t] + gamma * nextvalues * (1.0 - terminations[t]) - values[t]",
    4: """lastgaelam = delta + gamma * gae_lambda * (1.0 - dones[t]) * lastgaelam
advantages[t] = lastgaelam""",
    5: "ratio = (newlogprob - oldlogprob).exp()",
    6: """pg_loss1 = -advantages * ratio
pg_loss2 = -advantages * torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef)
pg_loss = torch.max(pg_loss1, pg_loss2).mean()""",
    7: """if clip_vloss:
    v_loss_unclipped = (newvalue - returns) ** 2
    v_clipped = oldvalue + torch.clamp(newvalue - oldvalue, -clip_coef, clip_coef)
    v_loss_clipped = (v_clipped - returns) ** 2
    return 0.5 * torch.max(v_loss_unclipped, v_loss_clipped).mean()
return 0.5 * ((newvalue - returns) ** 2).mean()""",
    8: "return pg_loss - ent_coef * entropy.mean() + v_loss * vf_coef",
    9: "grad_norm = nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)",
}


def evaluate_actions(logprob="log_pi.gather(-1, action.unsqueeze(-1)).squeeze(-1)",
                     entropy="-(log_pi.exp() * log_pi).sum(-1)", returned="logprob, entropy, self.critic(x)",
                     log_pi="self.policy(x)"):
    """TODO 2's answer with one part changed."""
    return f"log_pi = {log_pi}\nlogprob = {logprob}\nentropy = {entropy}\nreturn {returned}"


def value_loss(squared=lambda e: f"({e}) ** 2", half="0.5 * ", larger="torch.max", clip="clip_vloss",
               around="oldvalue"):
    """TODO 7's answer with one part changed, in both branches where it is in both."""
    return f"""if {clip}:
    v_loss_unclipped = {squared("newvalue - returns")}
    v_clipped = {around} + torch.clamp(newvalue - {around}, -clip_coef, clip_coef)
    v_loss_clipped = {squared("v_clipped - returns")}
    return {half}{larger}(v_loss_unclipped, v_loss_clipped).mean()
return {half}({squared("newvalue - returns")}).mean()"""


assert evaluate_actions() == SOLUTIONS[2] and value_loss() == SOLUTIONS[7]

# name: (the TODO it changes, its wrong code, words the grader's failure message must contain)
MUTANTS = {
    # TODO 1: a_t ~ pi(.|s_t)
    "argmax_instead_of_sampling": (1, "return self.policy(x).argmax(dim=-1)", "must sample"),
    "uniform_sampling": (1, "return torch.randint(0, self.policy(x).shape[-1], x.shape[:-1])",
                         "do not follow pi"),
    "sample_keeps_a_dimension": (1, "return torch.multinomial(self.policy(x).exp(), 1)",
                                 "TODO 1: return one action per observation"),
    "same_draw_every_call": (1, """generator = torch.Generator().manual_seed(0)
probs = self.policy(x).exp()
return (probs / torch.empty_like(probs).exponential_(generator=generator)).argmax(dim=-1)""",
                             "drew the same actions"),
    # TODO 2: log pi(a|s), H[pi(.|s)], V(s)
    "logits_as_probs": (2, """dist = torch.distributions.Categorical(probs=self.actor(x))
return dist.log_prob(action), dist.entropy(), self.critic(x)""", "TODO 2: ValueError"),
    "logits_as_log_probs": (2, evaluate_actions(log_pi="self.actor(x)"), "not normalised"),
    "value_not_returned": (2, evaluate_actions(returned="logprob, entropy"), "TODO 2: return three things"),
    # a student who reads "a_t ~ pi" into TODO 2 as well: the log-prob of a new sample, not of the given action
    "given_action_ignored": (
        2, evaluate_actions(logprob="log_pi.gather(-1, self.get_action(x).unsqueeze(-1)).squeeze(-1)"),
        "of the given action"),
    "entropy_averaged": (2, evaluate_actions(entropy="-(log_pi.exp() * log_pi).sum(-1).mean()"),
                         "TODO 2: return one log-prob and entropy per observation"),
    "entropy_sign_flipped": (2, evaluate_actions(entropy="(log_pi.exp() * log_pi).sum(-1)"),
                             "TODO 2: the entropy must be H[pi(.|s)]"),
    "value_from_actor": (2, evaluate_actions(returned="logprob, entropy, self.actor(x)"), "V(s) = self.critic(x)"),
    "evaluated_without_gradient": (2, """with torch.no_grad():
    log_pi = self.policy(x)
    logprob = log_pi.gather(-1, action.unsqueeze(-1)).squeeze(-1)
    entropy = -(log_pi.exp() * log_pi).sum(-1)
return logprob, entropy, self.critic(x)""", "with their gradients"),
    # TODO 3: delta_t
    "bootstrap_across_episode_end": (3, "delta = rewards[t] + gamma * nextvalues - values[t]",
                                     "bootstraps across a termination"),
    "truncation_as_termination": (3, "delta = rewards[t] + gamma * nextvalues * (1.0 - dones[t]) - values[t]",
                                  "truncated episode must still bootstrap"),
    "delta_without_gamma": (3, "delta = rewards[t] + nextvalues * (1.0 - terminations[t]) - values[t]",
                            "TODO 3: with lambda = 0"),
    "delta_reads_past_the_rollout": (
        3, "delta = rewards[t] + gamma * values[t + 1] * (1.0 - terminations[t]) - values[t]", "TODOs 3-4: IndexError"),
    # TODO 4: A_t
    "gae_without_done_mask": (4, """lastgaelam = delta + gamma * gae_lambda * lastgaelam
advantages[t] = lastgaelam""", "(1 - done_t) in the A_t recursion"),
    "recursion_cut_at_terminations_only": (
        4, """lastgaelam = delta + gamma * gae_lambda * (1.0 - terminations[t]) * lastgaelam
advantages[t] = lastgaelam""", "leaked across a time limit"),
    "advantage_not_stored": (4, "lastgaelam = delta + gamma * gae_lambda * (1.0 - dones[t]) * lastgaelam",
                             "store A_t in advantages[t]"),
    "recursion_without_gamma": (4, """lastgaelam = delta + gae_lambda * (1.0 - dones[t]) * lastgaelam
advantages[t] = lastgaelam""", "TODO 4: A_t = delta_t + gamma lambda"),
    "values_overwritten": (4, """lastgaelam = delta + gamma * gae_lambda * (1.0 - dones[t]) * lastgaelam
advantages[t] = lastgaelam
values[t] = lastgaelam + values[t]""", "changed its input"),
    # TODO 5: r_t
    "ratio_without_exp": (5, "ratio = newlogprob - oldlogprob", "forgot the exp"),
    "ratio_wrong_sign": (5, "ratio = (oldlogprob - newlogprob).exp()", "sign is flipped"),
    "ratio_detached": (5, "ratio = (newlogprob.detach() - oldlogprob).exp()", "carries no gradient"),
    # TODO 6: -L^CLIP
    "min_instead_of_max": (6, """pg_loss1 = -advantages * ratio
pg_loss2 = -advantages * torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef)
pg_loss = torch.min(pg_loss1, pg_loss2).mean()""", "min where -L^CLIP needs max"),
    "no_clipping": (6, "pg_loss = (-advantages * ratio).mean()", "does not clip"),
    "advantages_clipped": (6, """pg_loss1 = -advantages * ratio
pg_loss2 = -torch.clamp(advantages, 1 - clip_coef, 1 + clip_coef) * ratio
pg_loss = torch.max(pg_loss1, pg_loss2).mean()""", "does not clip the ratio"),
    "policy_loss_not_averaged": (6, """pg_loss1 = -advantages * ratio
pg_loss2 = -advantages * torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef)
pg_loss = torch.max(pg_loss1, pg_loss2)""", "TODO 6: pg_loss must be one number"),
    "fixed_clip_range": (6, """pg_loss1 = -advantages * ratio
pg_loss2 = -advantages * torch.clamp(ratio, 0.8, 1.2)
pg_loss = torch.max(pg_loss1, pg_loss2).mean()""", "not a fixed 0.2"),
    "unclipped_side_detached": (6, """pg_loss1 = -advantages * ratio
pg_loss2 = -advantages * torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef)
pg_loss = torch.max(pg_loss1.detach(), pg_loss2).mean()""", "not its gradient"),
    # TODO 7: L^VF
    "value_loss_not_squared": (7, value_loss(squared=lambda e: e), "L^VF"),
    "value_loss_without_half": (7, value_loss(half=""), "the 0.5 is missing"),
    "value_clip_with_min": (7, value_loss(larger="torch.min"), "the larger of the two"),
    "value_clip_ignored": (7, value_loss(clip="False"), "with clip_vloss"),
    "value_clipped_around_returns": (7, value_loss(around="returns"), "around the rollout's V(s_t)"),
    # TODO 8: the total loss
    "entropy_as_penalty": (8, "return pg_loss + ent_coef * entropy.mean() + v_loss * vf_coef", "entropy is a bonus"),
    "entropy_not_averaged": (8, "return pg_loss - ent_coef * entropy + v_loss * vf_coef",
                             "TODO 8: the loss must be one number"),
    "value_loss_left_out": (8, "return pg_loss - ent_coef * entropy.mean()", "TODO 8: loss ="),
    "loss_as_a_number": (8, "return (pg_loss - ent_coef * entropy.mean() + v_loss * vf_coef).item()",
                         "TODO 8: the loss must be a torch tensor"),
    # TODO 9: gradient clipping
    "no_gradient_clipping": (9, "grad_norm = torch.stack([p.grad.norm() for p in agent.parameters()]).norm()",
                             "gradients are not clipped"),
    "grad_norm_not_kept": (9, "nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)",
                           "TODO 9: NameError"),
    "clipped_to_a_constant": (9, "grad_norm = nn.utils.clip_grad_norm_(agent.parameters(), 0.5)",
                              "not to args.max_grad_norm"),
    "actor_gradients_only": (9, "grad_norm = nn.utils.clip_grad_norm_(agent.actor.parameters(), args.max_grad_norm)",
                             "only some of the gradients"),
}

# Mistakes that every test of one TODO passes and only the short run catches ("no better than random"):
# name: (TODO, wrong code, words its failure must contain)
LEARNING_ONLY = {
    # the probabilities of the first call's states, kept on the agent: the rollout never follows the
    # policy being learned (the test of TODO 1 makes its two calls on the same states)
    "policy_kept_from_the_first_call": (1, """if not hasattr(self, "first_probs"):
    self.first_probs = self.policy(x).exp()
probs = self.first_probs
return (probs / torch.empty_like(probs).exponential_()).argmax(dim=-1)""", "TODO 1 above all"),
}

# A mistake in the scaffolding rather than a TODO: the seed's own bug, envs reset every rollout
RESET_EVERY_ROLLOUT = (
    "    for step in range(len(storage.obs)):\n",
    "    next_obs, _ = envs.reset()\n    next_done = np.zeros(envs.num_envs, dtype=bool)\n"
    "    for step in range(len(storage.obs)):\n",
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
    assert reference.count(RESET_EVERY_ROLLOUT[0]) == 1
    out["reset_every_rollout"] = (reference.replace(*RESET_EVERY_ROLLOUT), "must not reset the envs")
    return out


def learning_only_mutants():
    """{name: (file text, words its learning-test failure must contain)}"""
    return {name: (complete({**SOLUTIONS, todo: code}), words) for name, (todo, code, words) in LEARNING_ONLY.items()}


if __name__ == "__main__":
    sys.stdout.write(complete())
