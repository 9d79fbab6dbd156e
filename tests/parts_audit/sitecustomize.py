"""Notes each test that imports an optional package (Ray, W&B), in pytest's process or in any Python process a
test starts, as conftest.needs_part notes a test that says what it needs: then .ci/run's bare pass
(tests/bare_install.py) runs it without the package, and a test that forgot to skip is seen failing there.
conftest puts this folder on PYTHONPATH when $PPO_TESTS_NEEDING_PARTS names the folder of the lists."""
import os
import sys

OPTIONAL_PACKAGES = {"ray": "ray", "wandb": "wandb"}  # top-level module: the part conftest.needs_part names


def note_imports(event, args):
    if event != "import" or args[0] not in OPTIONAL_PACKAGES:
        return
    test = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]
    if test and (test, args[0]) not in noted:  # not at collection
        noted.add((test, args[0]))
        try:  # never the import's failure
            with open(os.path.join(os.environ["PPO_TESTS_NEEDING_PARTS"], f"imports-{os.getpid()}.tsv"), "a") as f:
                f.write(f"{test}\t{OPTIONAL_PACKAGES[args[0]]}\n")
        except OSError as e:
            print(f"parts_audit: {e}", file=sys.stderr)


noted = set()
if os.environ.get("PPO_TESTS_NEEDING_PARTS"):
    sys.addaudithook(note_imports)
