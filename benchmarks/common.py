"""What the benchmark scripts share: where results go, and how a run's scalars are read."""
from pathlib import Path

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

REPO = Path(__file__).resolve().parent.parent


def read_run(run_dir):
    """An EventAccumulator holding every scalar and text event of the run."""
    acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    return acc


def write_table(name, lines):
    """Print the result and keep it in benchmarks/results/<name>.md (benchmarks/README.md quotes it)."""
    table = "\n".join(lines)
    out = REPO / "benchmarks" / "results" / f"{name}.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(table + "\n")
    print(table)
