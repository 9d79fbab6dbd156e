"""Writes the reading guide of course/README.md: for each topic of a PPO lecture, the lines of each
script where it lives.

    python course/reading_guide.py          # rewrite the table in course/README.md
    python course/reading_guide.py --check  # exit 1 if the table is out of date (the tests run this)

Each topic is anchored on a line of each script: a comment or a definition that names it. A range
runs from its anchor to the end of the anchor's block (a whole function or class; otherwise up to
a blank line after which the code goes back to the anchor's indentation), or to the line before
the next anchor, whichever comes first. When code moves, the anchors move with it and the table is rewritten from them.
"""
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "course" / "README.md"
SCRIPTS = ["ppo.py", "ppo_continuous_action.py", "ppo_godot.py", "ppo_godot_camera.py", "ppo_godot_bc.py",
           "ppo_godot_multi_policy.py", "ppo_godot_self_play.py", "ppo_lstm.py", "ppo_godot_lstm.py",
           "ppo_scratch_skeleton.py"]
TRAINING = SCRIPTS[:-1]
GODOT = ["ppo_godot.py", "ppo_godot_camera.py", "ppo_godot_bc.py", "ppo_godot_multi_policy.py", "ppo_godot_self_play.py",
         "ppo_godot_lstm.py"]
SEVERAL = ["ppo_godot_multi_policy.py", "ppo_godot_self_play.py"]

# topic: {script: the anchor lines' text (a start of the stripped line), in the order they come}
TOPICS = {
    "arguments": {s: ["def parse_args("] for s in SCRIPTS},
    "env factory and vector envs": {"ppo.py": ["def make_env(", "def make_envs("],
                                    "ppo_continuous_action.py": ["def make_env(", "def wrap_envs(", "def make_envs("],
                                    **{s: ["class GodotVecEnv:", "def read_layouts(", "def to_game_action(",
                                           "def make_envs("] for s in ("ppo_godot.py", "ppo_godot_camera.py", "ppo_godot_bc.py",
                                                                       "ppo_godot_lstm.py")},
                                    **{s: ["class GodotVecEnv:", "def read_layouts(", "def read_policies(",
                                           "def to_game_action(", "def make_envs("] for s in SEVERAL},
                                    "ppo_lstm.py": ["class CartPoleNoVel(", "def make_env(", "def make_envs(",
                                                    "def wrap_envs("],
                                    "ppo_scratch_skeleton.py": ["def make_env(", "def make_envs("]},
    "actor/critic network and its initialisation": {s: ["def layer_init(", "class Agent("] for s in SCRIPTS},
    "a camera's pixels: decoded, then a CNN before the actor and critic": {
        "ppo_godot_camera.py": ["def observations(", "def is_camera(", "def camera_encoder(", "def encode("]},
    "rollout storage": {s: ["def make_storage("] for s in SCRIPTS},
    "the rollout and next-step autoreset": {s: ["def collect_rollout("] for s in SCRIPTS},
    "the LSTM state: carried step to step, zero where an episode starts": {
        "ppo_lstm.py": ["def initial_state(", "def memory(", "def forget(",
                        "next_lstm_state = agent.initial_state(args.num_envs)"],
        "ppo_godot_lstm.py": ["new_episode = autoreset", "def initial_state(", "def memory(", "def forget(",
                              "next_lstm_state = agent.initial_state(args.num_envs)"]},
    "GAE, delta_t and A_t": {**{s: ["def rollout_logprobs_and_values(", "def compute_gae("] for s in SCRIPTS},
                             # a Godot script's plugin time-outs: gamma V(s_final) into r_t before GAE
                             **{s: ["def rollout_logprobs_and_values(", "def bootstrap_reset_on_the_spot(",
                                    "def compute_gae("] for s in GODOT},
                             "ppo_lstm.py": ["def bootstrap_value(", "def compute_gae("],
                             "ppo_godot_lstm.py": ["def bootstrap_value(", "def bootstrap_reset_on_the_spot(",
                                                   "def compute_gae("]},
    "minibatches of whole env sequences": {s: ["def sequence_minibatches("]
                                           for s in ("ppo_lstm.py", "ppo_godot_lstm.py")},
    "the update's replay of each sequence through the LSTM": {s: ["def replay("] for s in ("ppo_lstm.py",
                                                                                           "ppo_godot_lstm.py")},
    "the ratio r_t": {**{s: ["logratio = newlogprob"] for s in TRAINING},
                      "ppo_scratch_skeleton.py": ["# TODO 5"]},
    "L^CLIP": {**{s: ["# ALGO: L^CLIP"] for s in TRAINING}, "ppo_scratch_skeleton.py": ["# TODO 6"]},
    "L^VF and its clipping": {**{s: ["# ALGO: L^VF"] for s in TRAINING},
                              "ppo_scratch_skeleton.py": ["def value_loss("]},
    "entropy bonus": {"ppo.py": ["entropy = -(log_pi.exp()"],
                      "ppo_continuous_action.py": ["entropy = (0.5 + 0.5 * math.log"],
                      **{s: ["entropy = entropy - (log_pi.exp()", "entropy = entropy + (0.5 + 0.5"] for s in GODOT},
                      "ppo_lstm.py": ["entropy = -(log_pi.exp()"],
                      "ppo_scratch_skeleton.py": ["# TODO 2"]},
    "the total loss": {**{s: ["# ALGO: loss = -L^CLIP"] for s in TRAINING},
                       "ppo_scratch_skeleton.py": ["# TODO 8", "# ALGO: loss = -L^CLIP"]},
    "gradient clipping": {**{s: ["grad_norm = nn.utils.clip_grad_norm_"] for s in TRAINING},
                          "ppo_scratch_skeleton.py": ["# TODO 9"]},
    "approx_kl and clipfrac": {s: ["# KL(pi_old || pi_theta)"] for s in SCRIPTS},
    "target_kl": {s: ["if args.target_kl is not None"] for s in SCRIPTS},
    "advantage normalisation": {s: ["mb_advantages = b_advantages[mb_inds]"] for s in SCRIPTS},
    "learning-rate annealing": {s: ["if args.anneal_lr:"] for s in SCRIPTS},
    "the training loop": {s: ["def train("] for s in SCRIPTS},
    "several policies in one game: an Agent per policy name, each learning from its own agents' rows": {
        s: ["def read_policies(", "class AgentPerPolicy(", "def policy_share(",
            "for name, policy in envs.policies.items():  # "] for s in SEVERAL},
    "learning from demonstrations: behaviour cloning first, the critic's warm-up, a fading BC loss": {
        "ppo_godot_bc.py": ["# ALGO: loss = -L^CLIP", "def bc_loss(", "def behaviour_cloning(",
                            "if not args.resume:  # ALGO: behaviour cloning", "bc_coef = args.bc_strength"]},
    "self-play: one policy learns at a time, the others play snapshots from their pools": {
        "ppo_godot_self_play.py": ["its_agent = self.playing.get(", "class SelfPlay:",
                                   "if name != self_play.learner:  # not its turn", "self_play.end_iteration("]},
    "logging": {**{s: ['return {"losses/explained_variance"'] for s in SCRIPTS},
                "ppo_godot_bc.py": ['stats = {"losses/explained_variance"']},
    "evaluation and checkpoints": {**{s: ["def evaluate(", "def save_checkpoint(", "def load_checkpoint("]
                                      for s in TRAINING},
                                   "ppo_scratch_skeleton.py": ["except KeyboardInterrupt:"]},
}


def indent(line):
    return len(line) - len(line.lstrip())


def anchor_lines(lines, script):
    """{(topic, anchor): 0-based line}; each anchor must start exactly one line."""
    found = {}
    for topic, by_script in TOPICS.items():
        for anchor in by_script.get(script, []):
            hits = [i for i, line in enumerate(lines) if line.strip().startswith(anchor)]
            if len(hits) != 1:
                raise SystemExit(f"{script}: the anchor {anchor!r} of {topic!r} starts {len(hits)} lines, not 1")
            found[(topic, anchor)] = hits[0]
    return found


def block_end(lines, start):
    """The line after the anchor's block: a whole function or class; otherwise the lines up to a
    blank line that the anchor's own indentation (or less) follows."""
    own = indent(lines[start])
    definition = re.match(r"\s*(def|class) ", lines[start])
    for i in range(start + 1, len(lines)):
        if not lines[i].strip():
            continue
        if indent(lines[i]) < own or (indent(lines[i]) == own and (definition or not lines[i - 1].strip())):
            return i
    return len(lines)


def ranges(script):
    """{topic: [(first, last), ...]} in 1-based line numbers."""
    lines = (REPO / script).read_text().splitlines()
    anchors = anchor_lines(lines, script)
    starts = sorted(anchors.values())
    out = {}
    for (topic, _), start in anchors.items():
        following = [s for s in starts if s > start]
        end = min([block_end(lines, start)] + following[:1])
        while end > start + 1 and re.fullmatch(r"\s*(#\s*-*)?\s*", lines[end - 1]):
            end -= 1  # no trailing blank or ruler lines
        out.setdefault(topic, []).append((start + 1, end))
    return out


def table():
    by_script = {script: ranges(script) for script in SCRIPTS}
    rows = ["| topic | " + " | ".join(f"`{s}`" for s in SCRIPTS) + " |", "|---" * (len(SCRIPTS) + 1) + "|"]
    for topic in TOPICS:
        cells = []
        for script in SCRIPTS:
            spans = by_script[script].get(topic, [])
            cells.append(", ".join(f"[{a}-{b}](../{script}#L{a}-L{b})" for a, b in spans) or "not in it")
        rows.append(f"| {topic} | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


BEGIN, END = "<!-- reading guide: written by course/reading_guide.py -->\n", "<!-- end of reading guide -->\n"


def page_with(text, guide):
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[:start] + guide + text[end:]


if __name__ == "__main__":
    text = PAGE.read_text()
    updated = page_with(text, table())
    if "--check" in sys.argv[1:]:
        if updated != text:
            sys.exit("course/README.md: the reading guide is out of date; run python course/reading_guide.py")
    else:
        PAGE.write_text(updated)
