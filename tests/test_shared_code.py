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
    ("            # Rollout: num_steps steps", "            # Advantages (section 4)"),
    ("            # Advantages (section 4)", "            # Logging\n"),
    ("            # Logging\n", "    except KeyboardInterrupt:"),
]


def block(script, start, end):
    text = (REPO / script).read_text()
    assert text.count(start) == 1, f"{script}: {start.strip()!r} should start exactly one block"
    i = text.index(start)
    return text[i:text.index(end, i + len(start))]


@pytest.mark.parametrize("start, end", SHARED, ids=[start.strip()[:30] for start, _ in SHARED])
def test_shared_blocks_are_textually_identical(start, end):
    reference = block(SCRIPTS[0], start, end)
    assert len(reference.splitlines()) >= 2  # a real block, not an empty match
    for script in SCRIPTS[1:]:
        assert block(script, start, end) == reference, f"{script} differs from {SCRIPTS[0]}"
