"""The README's promise that what the training scripts share is textually identical, so that a diff
between two scripts shows only what truly differs: whole functions and classes, from the lesson to
the plumbing, each script's declared differences aside."""
import ast
import functools

import pytest

from conftest import REPO

SCRIPTS = ["ppo.py", "ppo_continuous_action.py", "ppo_godot.py"]
GYM_SCRIPTS = SCRIPTS[:2]
SHARED_BY_ALL = ["layer_init", "make_storage", "collect_rollout", "rollout_logprobs_and_values", "compute_gae",
                 "ppo_update", "str2bool", "minibatch_problem", "resumed_args", "fail", "EnvFault",
                 "check_env_output", "Run", "unsaved_tensors", "load_checkpoint", "load_weights", "start_tracking",
                 "stop_tracking"]
SHARED_BY_GYM = ["NormalizeReward", "parse_and_check", "env_errors", "find_wrapper", "save_episodes",
                 "restore_episodes", "track_videos"]
# The lines each script writes its own way: (definition, words of the line, why)
DECLARED = {
    ("collect_rollout", "is_transition[step] = "):
        "ppo_godot.py knows from the game's reply, not from next_done, which steps only reset an agent",
    ("Run", "save_checkpoint("): "ppo_continuous_action.py's checkpoint also holds the observation statistics",
    ("collect_rollout", 'writer.add_scalar("charts/episodic_return"'):
        "ppo_godot.py's tag carries the agent's policy name when the game has several",
    ("collect_rollout", 'writer.add_scalar("charts/episodic_length"'):
        "ppo_godot.py's tag carries the agent's policy name when the game has several",
}


@functools.cache
def definitions(script):
    """{name: source} of the script's top-level functions and classes."""
    text = (REPO / script).read_text()
    return {node.name: ast.get_source_segment(text, node, padded=True)
            for node in ast.parse(text).body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def without_declared(name, source):
    lines = source.splitlines()
    for (declared_in, words), _ in DECLARED.items():
        if declared_in == name:
            assert sum(words in line for line in lines) == 1, f"{name}: one {words!r} line expected"
            lines = [line for line in lines if words not in line]
    return lines


@pytest.mark.parametrize("name", SHARED_BY_ALL + SHARED_BY_GYM)
def test_shared_definitions_are_textually_identical(name):
    scripts = SCRIPTS if name in SHARED_BY_ALL else GYM_SCRIPTS
    reference = without_declared(name, definitions(scripts[0])[name])
    assert len(reference) >= 2  # a real definition, not an empty match
    for script in scripts[1:]:
        assert name in definitions(script), f"{script} has no {name}"
        assert without_declared(name, definitions(script)[name]) == reference, f"{script}'s {name} differs"


# ppo_godot.py's train() names the objects of every agent apart from each policy's, which keep ppo.py's names
GODOT_RENAMES = [("agent.parameters()", "agents.parameters()"), ("(envs, agent, optimizer)", "(envs, agents, optimizer)"),
                 ("envs, agent, storage, next_obs,", "envs, agents, rollout, all_obs,"),
                 ("storage = make_storage", "rollout = make_storage"), ("next_obs, next_done, global_step =", "all_obs, "
                 "next_done, global_step ="), ("add_scalar(tag,", "add_scalar(tag + policy_tag,"),
                 ("end_iteration(iteration, next_obs", "end_iteration(iteration, all_obs")]


@pytest.mark.parametrize("script", SCRIPTS[1:])
def test_train_differs_only_in_the_agent_and_the_game(script):
    """train() is ppo.py's but for the Agent's sizes and, in ppo_godot.py, the game's Run, its envs (no
    videos, so no run name), the batch sized from the game's agents, and the loop over the game's policies
    around the advantages and the update, whose lines are ppo.py's, indented once more."""
    reference = definitions("ppo.py")["train"]
    if script == "ppo_godot.py":  # one Agent per policy, and the rollout of all agents, under names of their own
        for name, renamed in GODOT_RENAMES:
            reference = reference.replace(name, renamed)
    reference = {line.strip() for line in reference.splitlines()}
    lines = {line.strip() for line in definitions(script)["train"].splitlines()}
    differing = reference ^ lines
    allowed = ("Agent(", "int(np.prod(envs.single_action_space.shape))", "Run(args)", "make_envs(args",
               "args.num_envs = ", "args.batch_size = ", "args.num_iterations = ", "check_game(")
    if script == "ppo_godot.py":  # the loop over the policies, and the comments on it and on the optimizer
        allowed += ("AgentPerPolicy(", "agents.learners(rollout, all_obs)", "# Each policy learns", "# One Adam for all")
    assert differing and all(any(words in line for words in allowed) for line in differing), differing


# ppo_lstm.py takes ppo.py's definitions where memory changes nothing, and ppo_continuous_action.py's
# observation normalisation with its statistics in the checkpoint
LSTM_SHARES = {
    "ppo.py": ["make_env", "NormalizeReward", "layer_init", "compute_gae", "str2bool", "minibatch_problem",
               "resumed_args", "fail", "env_errors", "EnvFault", "check_env_output", "find_wrapper",
               "unsaved_tensors", "load_checkpoint", "load_weights", "save_episodes", "restore_episodes",
               "start_tracking", "track_videos", "stop_tracking"],
    "ppo_continuous_action.py": ["make_envs", "get_env_state", "set_env_state", "save_checkpoint"],
}


@pytest.mark.parametrize("name, reference", [(name, script) for script, names in LSTM_SHARES.items()
                                             for name in names])
def test_ppo_lstm_shares_what_memory_does_not_change(name, reference):
    assert definitions("ppo_lstm.py")[name] == definitions(reference)[name], f"ppo_lstm.py's {name} differs"


def test_ppo_lstm_train_differs_only_in_the_lstm_state():
    """train() is ppo.py's but for the LSTM's size and the state carried from one call to the next."""
    reference, lines = definitions("ppo.py")["train"].splitlines(), definitions("ppo_lstm.py")["train"].splitlines()
    added, removed = set(lines) - set(reference), set(reference) - set(lines)
    assert added and all("lstm" in line.lower() or "Agent(" in line or line.endswith("(") or "storage.logprobs, storage.values"
                         in line for line in added), added
    # the lines that pass the state on, from ppo.py, and nothing else
    calls = ("Agent(", "run.start()", "collect_rollout(", "next_done, global_step", "rollout_logprobs_and_values(",
             "run.end_iteration(")
    assert all(any(call in line for call in calls) for line in removed), removed
