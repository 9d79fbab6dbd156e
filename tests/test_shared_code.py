"""The README's promise that the blocks the three training scripts share are textually identical,
so that a diff between two scripts shows only what truly differs."""
import pytest

from conftest import REPO

SCRIPTS = ["ppo.py", "ppo_continuous_action.py", "ppo_godot.py"]
SHARED = [  # (first line of the block, the text that ends it)
    ("def str2bool(", "\n\n\n"),
    ("def fail(", "\n\n\n"),
    ("class EnvFault(", "\n\n\n"),
    ("def layer_init(", "\n\n\n"),
    ("def resumed_args(", "\n\n\n"),
    ("def compute_gae(", "\n\n\n"),
    ("def load_checkpoint(", "\n\n\n"),
    ("    # Ctrl-C and kill (SIGTERM)", "\n\n    "),
    # ppo_godot.py knows from the game's reply, not from next_done, which steps only reset an agent
    ("            # Rollout: num_steps steps", "            # Advantages (section 4)", "is_transition[step] = "),
    ("            # Advantages (section 4)", "            # Logging\n"),
    ("            # Logging\n", "    except KeyboardInterrupt:"),
]


def block(script, start, end, may_differ=None):
    """The block's lines, without the one line (holding may_differ) that each script writes its own way."""
    text = (REPO / script).read_text()
    assert text.count(start) == 1, f"{script}: {start.strip()!r} should start exactly one block"
    i = text.index(start)
    lines = text[i:text.index(end, i + len(start))].splitlines()
    if may_differ is None:
        return lines
    assert sum(may_differ in line for line in lines) == 1, f"{script}: one {may_differ!r} line expected"
    return [line for line in lines if may_differ not in line]


@pytest.mark.parametrize("shared", SHARED, ids=[shared[0].strip()[:30] for shared in SHARED])
def test_shared_blocks_are_textually_identical(shared):
    reference = block(SCRIPTS[0], *shared)
    assert len(reference) >= 2  # a real block, not an empty match
    for script in SCRIPTS[1:]:
        assert block(script, *shared) == reference, f"{script} differs from {SCRIPTS[0]}"
