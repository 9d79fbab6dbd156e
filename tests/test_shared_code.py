"""The README's promise that what the training scripts share is textually identical, so that a diff
between two scripts shows only what truly differs: whole functions and classes, from the lesson to
the plumbing, each script's declared differences aside."""
import ast
import difflib
import functools
import re

import pytest

from conftest import REPO

SCRIPTS = ["ppo.py", "ppo_continuous_action.py", "ppo_godot.py"]
GYM_SCRIPTS = SCRIPTS[:2]
SHARED_BY_ALL = ["layer_init", "rollout_logprobs_and_values", "compute_gae",
                 "ppo_update", "str2bool", "minibatch_problem", "resumed_args", "fail", "EnvFault",
                 "check_env_output", "unsaved_tensors", "load_checkpoint", "load_weights", "start_tracking",
                 "stop_tracking"]
SHARED_BY_GYM = ["make_storage", "collect_rollout", "NormalizeReward", "parse_and_check", "env_errors", "find_wrapper", "save_episodes",
                 "restore_episodes", "track_videos", "Run"]
# The lines each script writes its own way: (definition, words of the line, why)
DECLARED = {
    ("Run", "save_checkpoint("): "ppo_continuous_action.py's checkpoint also holds the observation statistics",
}


@functools.cache
def lesson_definitions(script):
    """{name: source} of the script's top-level functions and classes above its plumbing banner."""
    text = (REPO / script).read_text()
    banner = text[:text.index("\n# 9. Plumbing")].count("\n") + 2
    return {node.name: definitions(script)[node.name] for node in top_level(script) if node.lineno < banner}


@functools.cache
def top_level(script):
    """The script's top-level functions and classes, as ast nodes, in order."""
    return [node for node in ast.parse((REPO / script).read_text()).body
            if isinstance(node, (ast.FunctionDef, ast.ClassDef))]


@functools.cache
def definitions(script):
    """{name: source} of the script's top-level functions and classes (ast.get_source_segment's text, the file
    split once: that function splits the whole file at each call)."""
    lines = (REPO / script).read_text().splitlines(keepends=True)
    return {node.name: "".join(lines[node.lineno - 1:node.end_lineno - 1])
            + lines[node.end_lineno - 1].encode()[:node.end_col_offset].decode() for node in top_level(script)}


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


def differing_lines(reference, source):
    """The lines that one of two definitions has and the other has not, as difflib aligns them, each
    stripped: a line moved into a loop, indented once more, is the same line."""
    return [line[2:] for line in difflib.ndiff([line.strip() for line in reference.splitlines()],
                                               [line.strip() for line in source.splitlines()])
            if line[:1] in "+-" and line[2:]]


def assert_differs_only_as_declared(name, reference, source, declared):
    """declared: {why: words}. Each differing line holds one of the words, and each of the words is in a
    differing line (a declaration that no longer declares anything is removed)."""
    differing = differing_lines(reference, source)
    words = [word for why in declared for word in declared[why]]
    assert differing, f"{name} is identical: declare nothing for it"
    undeclared = [line for line in differing if not any(word in line for word in words)]
    assert not undeclared, f"{name}: lines no declaration names: {undeclared}"
    unused = [word for word in words if not any(word in line for line in differing)]
    assert not unused, f"{name}: declared words no differing line holds: {unused}"


# ppo_godot.py's Run is ppo.py's but for what a running game cannot do
GODOT_RUN = {
    "a game records no videos, so none are tracked": ("videos", "if self.args.track:"),
    "a running game's episodes cannot be saved: every save keeps the same state (no exact stop to tell "
    "apart), and a resumed run starts new episodes": (
        "self.save(", "def save(", "exact", "episodes", "random generators", 'saved["next_obs"]', "else:",
        "boundary", "Every exit keeps the run", "kept as it was", "stop could save", "start new ones"),
    "so nothing of the episodes under way is carried to a boundary: no next_obs, no next_done": (
        "next_done", "next_obs", "def end_iteration(", "def mark_boundary(", "self.global_step = ", '"rng": rng'),
}
# ppo_godot.py's rollout is ppo.py's but for what the game's reply tells
GODOT_ROLLOUT = {
    "the game's reply says which steps only reset an agent, so next_done is not carried from one step to the "
    "next": ("is_transition[step] = ", "next_done", "returns (next_obs", "next_obs, global_step"),
    "a game that resets an agent on the spot returns the next episode's first observation after a time-out: "
    "V of the final one it sent is kept instead": ("bootstraps_from_final", "final_value", "torch.inference_mode()"),
}
GODOT_STORAGE = {"a time-out whose agent the game reset on the spot bootstraps from V(s_final), kept in the "
                 "rollout": ("bootstraps_from_final=", "final_values=")}


def test_ppo_godot_rollout_differs_from_ppo_s_only_where_the_game_tells_more():
    assert_differs_only_as_declared("collect_rollout", definitions("ppo.py")["collect_rollout"],
                                    definitions("ppo_godot.py")["collect_rollout"], GODOT_ROLLOUT)


def test_ppo_godot_storage_differs_from_ppo_s_only_by_the_time_outs_reset_on_the_spot():
    assert_differs_only_as_declared("make_storage", definitions("ppo.py")["make_storage"],
                                    definitions("ppo_godot.py")["make_storage"], GODOT_STORAGE)


def test_ppo_godot_run_differs_from_ppo_s_only_where_a_game_cannot_do_the_same():
    assert_differs_only_as_declared("Run", definitions("ppo.py")["Run"], definitions("ppo_godot.py")["Run"], GODOT_RUN)


@pytest.mark.parametrize("script", SCRIPTS[1:])
def test_train_differs_only_in_the_agent_and_the_game(script):
    """train() is ppo.py's but for the Agent's sizes and, in ppo_godot.py, the game's Run, its envs (no
    videos, so no run name), the batch sized from the game's agents and the game's checks, and the time-outs of a
    game that resets an agent on the spot."""
    reference = {line.strip() for line in definitions("ppo.py")["train"].splitlines()}
    lines = {line.strip() for line in definitions(script)["train"].splitlines()}
    differing = reference ^ lines
    allowed = ("Agent(", "int(np.prod(envs.single_action_space.shape))", "Run(args)", "make_envs(args",
               "args.num_envs = ", "args.batch_size = ", "args.num_iterations = ", "check_game(")
    if script == "ppo_godot.py":  # a game's episodes cannot be saved: a resumed run starts new ones, and the
        # game's reply says which steps only reset an agent: no next_done is carried
        allowed += ("# s_0: new episodes", "run.start()", "collect_rollout(", "envs, agent, storage, next_obs",
                    "run.end_iteration(")
        # and a plugin time-out (the game reset the agent on the spot) bootstraps through compute_gae's own r_t
        allowed += ("bootstrap_reset_on_the_spot(", "gae_rewards, gae_terminations = ",
                    "terminations = storage.terminations", "terminations = np.maximum(", "if args.bootstrap_truncation:",
                    "if not args.bootstrap_truncation:", "else:  # CleanRL's way", "advantages, returns = compute_gae(")
    assert differing and all(any(words in line for words in allowed) for line in differing), differing


# ppo_godot_multi_policy.py is ppo_godot.py but for what several policies change: each definition the two
# both have differs only in lines holding the words declared for it, and each definition of one alone is
# declared, with why
MULTI_POLICY = {
    "parse_args": {"--eval-episodes counts each policy's episodes": ("of each policy", "--eval-checkpoint, as many"),
                   "the comment names the flags section 9 adds": ("# section 9 adds", "--frozen-policy",
                                                                  "--resume takes")},
    "GodotVecEnv": {
        "each agent's row holds its own policy's keys, zero-padded to the widest policy's row; each action row "
        "its own policy's columns, floats for all": (
            "polic", "read_layouts", "obs_keys", "width =", "floats", "columns", "self.num_envs =",
            "Every agent's row", "agents_obs", 'reply["obs"]', "dtype=self.single_observation_space.dtype",
            "to_game_action")},
    "NormalizeReward": {"a statistic per policy: each policy's rewards have a scale of their own": (
        "polic", "return_rms", "std", "autoreset", "transition) is left out", "mid_episode",
        "does not)")},
    "collect_rollout": {"an episode's tags and its printed line end in its agent's policy name": (
        "tag", "charts/episodic_", "global_step={global_step}, episodic_return"),
                        "the whole rollout, all agents' observations and the agents are named as train names them, "
                        "apart from one policy's storage, next_obs and agent": (
                            "storage", "rollout", "next_obs", "all_obs", "agent")},
    "train": {"an Agent per policy name, and each policy's update from its own agents' rows, in a loop over the "
              "policies whose lines are ppo_godot.py's": (
                  "polic", "frozen", "agents", "all_obs", "rollout", "agent = ", "storage", "Agent(", "check_game",
                  "optimizer", "run.start()", "continue", "add_scalar")},
    "evaluate": {"each policy's returns, and the line of each episode names its policy; the checkpoint's kind is "
                 "checked by load_policies": ("polic", "returns", "agent", "pi(.|s)", "short ones", "load_checkpoint")},
    "check_game": {"each policy's batch, keys and layouts; --frozen-policy's name, file and spaces checked, and "
                   "its weights returned": (
                       "polic", "frozen", "problem", "batch", "minibatches", "own names", "layouts go", "n_agents",
                       "agents x --num-steps", "into the checkpoint", "misfit", "saved", "args.obs_layout",
                       "args.resume", "else:", "load_checkpoint", "gdscript_export_path",
                       "checkpoint holds them", "SystemExit", "raise", "envs.close()", "export without a game",
                       "weight_sources")},
    "parse_and_check": {"--frozen-policy NAME=CHECKPOINT, and the checkpoint of one policy that ppo_godot.py "
                        "resumes refused with one line": ("frozen", "polic", "NAME=CHECKPOINT", "fail(", "own_kind",
                                                          "saved_layout", "--frozen-policy", "ppo_godot.py",
                                                          "name_and_checkpoint", "from their checkpoint",
                                                          "spelling"),
                        "a self-play run, saved by ppo_godot_self_play.py or by this script before self-play moved "
                        "there, is refused to --resume with one line naming that file": ("self-play", "self_play")},
    "set_env_state": {"a statistic per policy": ("return_rms", "rms", "NormalizeReward")},
    "load_checkpoint": {"ppo_godot.py's and ppo_godot_self_play.py's checkpoints are read too: a policy to freeze, "
                        "or a game of several that ppo_godot.py once trained": (
                            'checkpoint["script"]', "ppo_godot.py's and", "several policies")},
    "check_first_observations": {"each agent's keys are its policy's": ("polic", "obs_keys", "agents_of")},
    "check_observations": {"each agent's keys are its policy's": ("polic", "obs_layout", "agents_of")},
    "final_observations": {"each agent's keys are its policy's, its row padded": (
        "polic", "agents_of", "line that names", "rows[i", "obs_layout"),
        "(ppo_godot.py's docstring, rewrapped)": ("rows; zeros for the others", "(EnvFault: exit 2")},
    "start_games": {"agents of one policy name share spaces": ("agent", "polic", "started and connected")},
    "game_problem": {"several policy names are the point here; a name names files, so its characters are "
                     "checked; agents of one name share spaces": (
                         "polic", "agent", "where", "name", "spaces", "for key, space in", "alike", "letters, digits")},
    "export_checkpoint": {"a file per policy, each an Agent built from its saved layouts": (
        "polic", "own_kind", "saved_agent", "weights", "saved model to ONNX", "Agent(", "try:", "except",
        "saved_layout(", "agents.agents[name]")},
    "export_policy": {"a file per policy, named after it": ("agents", "polic", "name", "trained", "layout",
                                                            "AIController", "action_repeat_note")},
}
ONLY_IN_PPO_GODOT = {
    "saved_layout": "a checkpoint's one policy (a checkpoint of several gets one line naming "
                    "ppo_godot_multi_policy.py)",
    "saved_agent": "the checkpoint's one Agent, with its weights; the sibling's load_policies loads each",
    "check_plays": "one line if the saved Agent cannot play the game; the sibling's misfit checks each policy",
}
ONLY_IN_MULTI_POLICY = {
    "read_policies": "the game's policy names and each one's layouts and agents",
    "AgentPerPolicy": "an Agent per policy, each playing its own agents' rows",
    "policy_share": "a policy's share of the rollout: what it learns from",
    "saved_policies": "each policy of a checkpoint, this script's or ppo_godot.py's",
    "own_kind": "a checkpoint that ppo_godot.py owns gets one line naming it",
    "saved_policy": "one policy of a checkpoint, for --frozen-policy",
    "misfit": "why a saved policy cannot play the game's",
    "where_saved": "the line that says which file, run and step a frozen policy comes from",
    "load_policies": "every policy's weights from a checkpoint",
    "policy_path": "a file per policy",
    "name_and_checkpoint": "--frozen-policy's NAME=CHECKPOINT",
}


# ppo_godot_self_play.py is ppo_godot_multi_policy.py but for self-play: a snapshot plays for each waiting policy,
# only the learner updates, and below the banner the ratings, the settings and the state a checkpoint keeps
SELF_PLAY = {
    "AgentPerPolicy": {"a waiting policy's agents play a snapshot of its past weights": (
        "playing", "its_agent", "self.agents[name].get_action(", "past weights", "learn.", "never learn.")},
    "train": {"who learns, and which snapshots play (the rollout's call takes self_play)": (
        "self_play", "check_game(", "section 9", "One policy learns", "past weights", "continue",
        "run.guard(", "collect_rollout(", "run.writer, device", "learns from its own agents' rows alone",
        "learns from its own (")},
    "collect_rollout": {"each episode end of a learner's agent moves the ELO ratings": (
        "self_play", "def collect_rollout(")},
    "GodotVecEnv": {"--self-play-outcome terminated=NAME needs to know which ends a game could call time-outs": (
        "tells_time_outs", "which ends timed out")},
    "parse_args": {"the comment names the flags section 9 adds": ("self-play's settings",)},
    "parse_and_check": {"self-play's settings, and --self-play-pool's NAME=CHECKPOINT; a run saved without "
                        "self-play is refused to --resume with one line naming its script": (
                            "self-play", "self_play", "ML-Agents", "save_steps", "swap_steps", "demo,", "snapshot",
                            "return", "opponents'", "marks time-outs", "saved_by", "--frozen-policy", "pool",
                            "team_change", "window", "learning policy", "uniformly", "repeat it", "NAME=CHECKPOINT")},
    "check_game": {"--self-play-pool's names and files are checked as --frozen-policy's, and the game's policies": (
        "self_play", "self-play", "pool", "flag", "frozen", "fits", "weights", "saved", "--self-play-pool",
        "team_change_note", "else:", "checkpoint holds", "weight_sources", "where_saved", "each file read once",
        "the checkpoint, for")},
    "where_saved": {"a saved opponent's file is named as a frozen policy's": ("a frozen policy",)},
    "name_and_checkpoint": {"--self-play-pool takes NAME=CHECKPOINT too": ("NAME=CHECKPOINT, or one line",)},
    "load_checkpoint": {"ppo_godot_multi_policy.py's checkpoints are read too: a policy to freeze or to pool, and a "
                        "self-play run saved there before self-play moved here": (
                            'checkpoint["script"]', "ppo_godot.py's and", "several policies", "self-play lived")},
    "GameRun": {"the self-play state goes into each boundary and comes back on --resume; its ratings into the "
                "progress line": ("self_play", "self-play", "on a game fault.", "def guard(", "mark_boundary",
                                  "progress_note", "load_self_play_state", "self.args.resume", "generator")},
}
ONLY_IN_SELF_PLAY = {
    "SelfPlay": "the pools, whose turn it is to learn, and which snapshot each waiting policy plays",
    "Ratings": "each policy's and snapshot's ELO rating, which shapes nothing",
    "self_play_state": "what --resume needs of the self-play state",
    "load_self_play_state": "that state put back",
    "self_play_problem": "a self-play setting that cannot work",
    "self_play_game_problem": "a game where self-play cannot work",
    "team_change_note": "a note for a self-play turn shorter than a rollout",
}


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


# A page's claim of what a diff between two siblings shows, in one form a reader can check by eye and this test by
# computing it: "`diff A B` changes these definitions of the lesson: `x`, `y`; and adds `z`."
DIFF_CLAIM = re.compile(r"`diff (\S+) (\S+)` changes these definitions of the lesson: (.+?); and adds (.+?)\.(?:\s|$)")
CLAIMED_DIFFS = {("ppo_godot.py", "ppo_godot_multi_policy.py"), ("ppo_godot_multi_policy.py", "ppo_godot_self_play.py"),
                 ("ppo_godot.py", "ppo_godot_bc.py"), ("ppo_godot.py", "ppo_godot_camera.py")}


def test_each_page_s_diff_claim_names_what_the_diff_changes_above_the_banner():
    pages = [REPO / "README.md", REPO / "course" / "README.md", *sorted((REPO / "docs").glob("*.md")),
             *(REPO / script for script in ("ppo_godot_multi_policy.py", "ppo_godot_self_play.py",
                                            "ppo_godot_bc.py", "ppo_godot_camera.py"))]
    claims = [(page.name, claim) for page in pages for claim in DIFF_CLAIM.finditer(" ".join(page.read_text().split()))]
    assert {(claim[1], claim[2]) for _, claim in claims} >= CLAIMED_DIFFS
    assert {page for page, _ in claims} >= {"ppo_godot_multi_policy.py", "ppo_godot_self_play.py", "ppo_godot_bc.py",
                                            "ppo_godot_camera.py"}
    for page, claim in claims:
        old, new = lesson_definitions(claim[1]), lesson_definitions(claim[2])
        changed = [name for name in new if name in old and new[name] != old[name]]
        added = [name for name in new if name not in old]
        assert not [name for name in old if name not in new], f"{page}: the claim cannot say what {claim[2]} drops"
        assert re.findall(r"`(\w+)`", claim[3]) == changed, f"{page}: {claim[0]}"
        assert re.findall(r"`(\w+)`", claim[4]) == added, f"{page}: {claim[0]}"


# ppo_godot_bc.py is ppo_godot.py but for what learning from demonstrations changes
BEHAVIOUR_CLONING = {
    "parse_args": {"the demonstrations' flags, each default with where it comes from": (
        "--demos", "--bc-", "--critic-warmup", "Demonstrations", "demonstrations", "actions] per episode",
        "imitation tutorial", "batch_size", "the actor kept as cloned", "strength", "example", "help=",
        "learning-from-")},
    "ppo_update": {"the critic's warm-up, and beta_t L^BC on a minibatch of demonstrations beside PPO's loss": (
        "def ppo_update(", "critic_only", "bc", "minibatch's losses", "# ALGO: loss", "loss = v_loss * args.vf_coef"),
                   "TensorBoard gets what the update's loss held: no policy loss or entropy in the warm-up, L^BC "
                   "where beta_t weighs it": ("losses/explained_variance", "stats[", "return stats")},
    "train": {"the demonstrations read, cloned before the first rollout, and beta_t and the warm-up each update": (
        "demos", "behaviour_cloning", "mark_boundary", "bc_coef", "critic_only", "args.resume",
        "stats = ppo_update(", "beta_t")},
    "parse_and_check": {"--demos needed to train, refused otherwise; each file read before a game starts; the BC "
                        "flags' bounds": (
                            "demos", "bc_", "critic_warmup", "must be", "training", "fail(", "getattr(args, name)"),
                        "this script's checkpoints hold one policy (saved_layout)": ("saved_layout(",)},
    "GameRun": {"the demonstrations, and their arrays in each boundary for an exact --resume": (
        "demos", "demonstrations", "def mark_boundary(", "super().mark_boundary(", "a resumed run's",
        "self.args.resume", "else:", "actions=torch", "demo_arrays")},
    "saved_layout": {"this script's checkpoints hold one policy and no camera (load_checkpoint refuses another "
                     "script's)": ("polic", "camera", "of the game a checkpoint played")},
}
ONLY_IN_BEHAVIOUR_CLONING = {
    "bc_loss": "L^BC, the demonstrated actions' negative log-likelihood",
    "demo_minibatch": "a minibatch of demonstration steps",
    "behaviour_cloning": "the cloning before the first rollout",
    "demo_accuracy": "the share of demonstrated actions the greedy policy takes",
    "column_heads": "the head of each action column: which are discrete (the accuracy), what each may hold (the files)",
    "read_demos": "a demonstrations file's episodes, or one line",
    "demo_steps": "the files' steps as arrays, checked against the game's spaces",
    "demo_problem": "why an episode does not fit the game",
}


# ppo_godot_camera.py is ppo_godot.py but for cameras: each camera key's hex frames read as bytes, a CNN per
# camera, a window to render in; the checks a camera needs, and the camera checkpoints ppo_godot.py saved before
CAMERA = {
    "GodotVecEnv": {"a camera's hex string is its bytes; a row of cameras alone is uint8": (
        "is_camera", "uint8", "dtype", "width = sum(math.prod", "gym.spaces.Box(low, high", "Every agent's row",
        "into its bytes", "obs[key] for key in self.obs_keys", "np.concatenate([obs[key]", "no blank camera",
        "float32", "width = sum(", "gym.spaces.Box(", "reset_games(self, seed)")},
    "read_layouts": {"a camera's shape as its bytes come, (H, W, C)": (
        "with its shape", "(H, W, C)", "obs_layout = [(key,", "for key in sorted(space.spaces)")},
    "Agent": {"a CNN per camera before the actor and critic (encode)": (
        "obs_layout: the row's keys", "cameras", "obs_dim", "encode", "return x", "parts", "images", "shape in self",
        "return torch.cat(parts", "hidden", "action_distributions(self, x)", "pi(.|s)'s parameters",
        "action's log pi of every choice", "use them)", "self.critic(x)", "self.actor(x)",
        "self.action_distributions(x)", "Observation rows", "enumerate(self.obs_layout)")},
    "parse_and_check": {"--show-window says a camera needs it": ("--show-window", "a camera needs one")},
    "load_checkpoint": {"a camera game's checkpoint saved by ppo_godot.py before cameras moved here": (
        "saved_by_ppo_godot", "is_camera(key) for key", 'if checkpoint["script"] != script')},
    "saved_layout": {"ppo_godot.py refuses such a checkpoint with one line naming this file": (
        "cameras", "ppo_godot_camera.py", "fail(")},
    "game_problem": {"ppo_godot.py refuses a camera game; here a camera's declared shape and size are checked": (
        "a camera", "is_camera", "shape", "36 x 36", "ppo_godot_camera.py", "for key, space in agent_0", "needs [")},
    "check_first_observations": {"a camera that renders nothing is refused in one line": (
        "A camera", "renders nothing", "check_observations(envs, replies)", "obs_rows", "column", "shape",
        "pixels", "is_camera", "blank", "every agent", "--show-window", "they must be those declared")},
    "final_observations": {"a camera key's value is the hex of its bytes, checked": (
        "camera", "values", "fits", "declared", "try:", "except (TypeError, ValueError)", "rows[i] = np.concatenate(",
        "one line that names", "rows; zeros for the others", "(EnvFault: exit 2",
        "else:", "and all(isinstance", "but declares", "if not (isinstance")},
    "check_observations": {"a camera key's value is checked to be the hex of its bytes": (
        "camera", "value", "isinstance", "raise GameError", "f\"bytes", "n_bytes", "except ValueError",
        "declared", "try:", "the key (GameError)", "a list of its size", "bytes (H x W x C")},
    "OnnxPolicy": {"the plugin feeds a camera's pixels as floats, which the model reshapes": (
        "float [1, size]", "reshaped and scaled", "action_distributions(")},
    "gdscript_problem": {"a CNN is no job for GDScript: a camera policy ships as ONNX": (
        "cameras", "GDScript (36 x 36", "camera policy")},
}
ONLY_IN_CAMERA = {"camera_encoder": "the CNN of one camera"}


class Merged:
    """A definition made of two scripts' lines: each line it adds to the parent's is the other script's same
    definition's, or holds one of the declared words (each used)."""

    def __init__(self, other, declared):
        self.other, self.declared = other, declared

    def check(self, name, reference, source):
        theirs = {line.strip() for line in definitions(self.other)[name].splitlines()}
        words = [word for why in self.declared for word in self.declared[why]]
        own, parents = ({line.strip() for line in text.splitlines()} for text in (source, reference))
        # its new lines: neither removed ones nor the parent's own lines in another order
        differing = [line for line in differing_lines(reference, source) if line in own and line not in parents]
        undeclared = [line for line in differing if line not in theirs and not any(word in line for word in words)]
        assert not undeclared, f"{name}: lines neither {self.other}'s nor declared: {undeclared}"
        unused = [word for word in words if not any(word in line for line in differing)]
        assert not unused, f"{name}: declared words no differing line holds: {unused}"


# ppo_godot_lstm.py is ppo_godot.py but for memory, and takes from ppo_lstm.py what memory needs, line for line
GODOT_LSTM = {
    "parse_args": {"the LSTM's size, small for the exported GDScript's cost; a minibatch takes whole agent "
                   "sequences": ("--lstm-hidden-size", "--num-minibatches", "whole agent sequences", "LSTM's state",
                                 "pays for every unit")},
    "GodotVecEnv": {"the step says which observations start an episode, where the state is zero": (
        "new_episode", "starts an episode", '"bootstraps_from_final": sent_final & timed_out')},
    # ppo_lstm.py's Agent with ppo_godot.py's action heads on h_t: every differing line is ppo_lstm.py's Agent's,
    # or one of these
    "Agent": Merged("ppo_lstm.py", {
        "the docstring names both": ("far: the LSTM's state", "obs_layout: the row's keys"),
        "the heads read h_t, an action's log pi comes with the rollout's draw, H[pi] is the update's alone": (
            "def __init__(self, obs_layout, action_heads, lstm_hidden_size):", "nn.Linear(lstm_hidden_size, n_outputs)",
            "def action_distributions(self, hidden):", "pi(.|h_t)'s parameters", "self.actor(hidden).split(",
            "def get_action(self, x, lstm_state, greedy=False):", "Rollout-time: a_t ~ pi(.|h_t) as a row",
            "V(h_t) and the next state", "update. A Gaussian samples", "E ~ Exp(1): the Gumbel-max",
            "dists = self.action_distributions(hidden)", "zip(self.heads, dists", "action = torch.cat(per_head",
            "log_prob_and_entropy(", "return action, logprob,", "return logprob, entropy",
            "from action_distributions' dists")}),
    "make_storage": {"ppo_lstm.py's kept state, log pi_old and V; and where an observation starts an episode": (
        "initial_lstm_state", "logprobs=", "values=", "new_episode=", "next row's state")},
    "collect_rollout": {"ppo_lstm.py's state carried through the rollout and kept at its start; zeroed for each "
                        "observation that starts an episode": (
                            "lstm_state", "LSTM", "h_t", "no_grad", "inference_mode", "logprob", "value",
                            "new_episode", "Fills storage", "memory of them", "last rollout", "return next_obs",
                            "a_t ~ pi(.|s_t)", "torch.as_tensor(next_obs", "update's backward",
                            "def collect_rollout(", "bootstraps_from_final", "V(s_final) is kept instead",
                            "fed the ended episode's state", "final_value")},
    "ppo_update": {"ppo_lstm.py's: minibatches of whole agent sequences, replayed from their states": (
        "def batch(", "return torch.as_tensor(", "sequence_minibatches", "whole sequences", "a new order every epoch",
        "epoch would take", "tensor_split", "agent.evaluate_actions(", "lstm_state, run_starts)")},
    "train": {"the state carried from one rollout to the next, zero for the new episodes; log pi_old and V from the "
              "rollout (ppo_lstm.py's bootstrap_value)": (
                  "Agent(", "lstm_state", "collect_rollout(", "global_step, run.writer, device)",
                  "rollout_logprobs_and_values", "bootstrap_value", "compute_gae(", "ppo_update(", "returns, device)")},
    "evaluate": {"each agent's state carried and zeroed as in training": (
        "lstm_state", "pi(.|s)", "pi(.|h_t)", "agent's first episodes", "state carried", "(counting the first",
        "agent.get_action(")},
    "parse_and_check": {"--lstm-hidden-size checked; a sequence of at least 2 steps": (
        "lstm_hidden_size", "step_timeout", "num_steps < 2", "needs sequences"),
                        "this script's checkpoints hold one policy (saved_layout)": ("saved_layout(",)},
    "saved_layout": {"this script's checkpoints hold one policy and no camera (load_checkpoint refuses another "
                     "script's)": ("polic", "camera", "of the game a checkpoint played")},
    "check_game": {"the agents must split into minibatches of whole sequences": (
        "minibatches", "the observation keys", "and the GDScript", "agents do not divide", "whole agent sequences",
        "export must be able", "without a game")},
    "saved_agent": {"the LSTM's size from the checkpoint's flags": ("Agent(",)},
    "OnnxPolicy": {"the LSTM's state in and out, h then c": (
        "state_outs", "state_ins", "hidden", "h, c", "return torch.cat(", "zeros where an episode starts",
        "feed each agent's", "self.agent.action_distributions(", "own controller", "a-recurrent-policy")},
    "export_onnx": {"state_ins is the LSTM's state": ("example = ", "torch.zeros(1, 2 *")},
    "gdscript_policy": {"the state per instance, reset(), and the LSTM cell written out": (
        "LSTM", "state", "remembers", "reset", "HIDDEN", "h = ", "c = ", "gates", "encode", "head", "w_ih",
        "functions", "layers, output", "sigmoid", "one per agent", "_init", "output = ", "var out", "Zero memory",
        "for _k", "h.append", "c.append", "with torch.no_grad():", "written out as sums", "dictionary set_action()",
        "this_file.gd", "*layers", "\"\",", "for name, module in", "[i f g o]", "c[k]", "h[k]", "return 1.0")},
    "export_gdscript": {"the file holds all but the critic's weights": ("what the file holds", "isfinite"),
                        "gdscript_problem checks each network the file writes": ("gdscript_problem(",)},
    "gdscript_problem": {"the file writes the encoder and the actor layer by layer, the LSTM's gates as one layer: "
                         "each is checked by name": (
                             "def gdscript_problem(", "Why the export cannot write", "network", "part", "layers",
                             "writable", "Linear layers", "LSTM's gates", "return (f\"--gdscript-export-path")},
}
ONLY_IN_GODOT_LSTM = {"forget": "the state zeroed where an observation starts an episode",
                      "bootstrap_value": "ppo_lstm.py's V(next_obs) from the state the rollout ended with",
                      "sequence_minibatches": "ppo_lstm.py's minibatches of whole sequences, runs cut where the "
                                              "game says an episode starts"}
ONLY_IN_PPO_GODOT_NOT_LSTM = {"rollout_logprobs_and_values": "the rollout keeps log pi_old and V itself"}


# Each sibling is its parent but for its idea: (parent, child): (the declared differences of the definitions both
# have, what the child alone defines, what the parent alone defines)
SIBLINGS = {
    ("ppo_godot.py", "ppo_godot_multi_policy.py"): (MULTI_POLICY, ONLY_IN_MULTI_POLICY, ONLY_IN_PPO_GODOT),
    ("ppo_godot_multi_policy.py", "ppo_godot_self_play.py"): (SELF_PLAY, ONLY_IN_SELF_PLAY, {}),
    ("ppo_godot.py", "ppo_godot_bc.py"): (BEHAVIOUR_CLONING, ONLY_IN_BEHAVIOUR_CLONING, {}),
    ("ppo_godot.py", "ppo_godot_camera.py"): (CAMERA, ONLY_IN_CAMERA, {}),
    ("ppo_godot.py", "ppo_godot_lstm.py"): (GODOT_LSTM, ONLY_IN_GODOT_LSTM, ONLY_IN_PPO_GODOT_NOT_LSTM),
}


@pytest.mark.parametrize("parent, child, name", [(parent, child, name) for parent, child in SIBLINGS for name in
                                                 sorted(set(definitions(parent)) & set(definitions(child)))])
def test_a_sibling_differs_from_its_parent_only_where_its_idea_does(parent, child, name):
    reference, source = definitions(parent)[name], definitions(child)[name]
    declared = SIBLINGS[parent, child][0]
    if name not in declared:
        assert source == reference, f"{child}'s {name} differs: declare it, or make it {parent}'s"
    elif isinstance(declared[name], Merged):
        declared[name].check(name, reference, source)
    else:
        assert_differs_only_as_declared(name, reference, source, declared[name])


@pytest.mark.parametrize("parent, child", SIBLINGS)
def test_what_only_one_of_two_siblings_defines_is_declared(parent, child):
    _, only_in_child, only_in_parent = SIBLINGS[parent, child]
    in_parent, in_child = set(definitions(parent)), set(definitions(child))
    assert in_child - in_parent == set(only_in_child) and in_parent - in_child == set(only_in_parent)


def methods(script, class_name):
    """{name: source} of a class's methods."""
    text = (REPO / script).read_text()
    (node,) = [node for node in ast.parse(text).body if getattr(node, "name", None) == class_name]
    return {item.name: ast.get_source_segment(text, item) for item in node.body if isinstance(item, ast.FunctionDef)}


@pytest.mark.parametrize("name", ["bootstrap_value", "compute_gae", "ppo_update", "layer_init"])
def test_ppo_godot_lstm_takes_what_memory_needs_from_ppo_lstm_line_for_line(name):
    assert definitions("ppo_godot_lstm.py")[name] == definitions("ppo_lstm.py")[name]


@pytest.mark.parametrize("name", ["initial_state", "memory", "get_value", "replay"])
def test_ppo_godot_lstm_agent_steps_and_replays_the_lstm_as_ppo_lstm_does(name):
    assert methods("ppo_godot_lstm.py", "Agent")[name] == methods("ppo_lstm.py", "Agent")[name]


def test_ppo_godot_lstm_cuts_sequences_where_the_game_says_an_episode_starts():
    """sequence_minibatches is ppo_lstm.py's but for where a run starts: after a row that returned a new episode's
    first observation, which a plugin-like game's episode end does too, not only an autoreset row."""
    assert_differs_only_as_declared("sequence_minibatches", definitions("ppo_lstm.py")["sequence_minibatches"],
                                    definitions("ppo_godot_lstm.py")["sequence_minibatches"],
                                    {"where a run starts": ("a run of steps starts at row 0", "after_reset[:, 1:]",
                                                            "first observation (from h = 0)")})
