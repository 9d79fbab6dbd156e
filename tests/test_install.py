"""The install files: requirements-godot.txt, the game maker's lighter install, pins what requirements.txt
pins, and holds a package for every third-party module the Godot scripts import or call into; the
pages' CPU-wheel command takes the pinned torch from PyTorch's CPU-only index. Reads files only: nothing is
installed."""
import ast
import re
import sys

import pytest

from conftest import REPO

GODOT_SCRIPTS = sorted(REPO.glob("ppo_godot*.py")) + [REPO / "godot" / "play_in_browser.py"]
# the import name of each third-party module the Godot scripts use -> the package that provides it
PACKAGE_OF_MODULE = {"torch": "torch", "gymnasium": "gymnasium", "godot_rl": "godot-rl", "numpy": "numpy",
                     "tensorboard": "tensorboard", "onnx": "onnx", "wandb": "wandb"}
# torch parts that need a package torch itself does not require
PACKAGE_OF_TORCH_PART = {"torch.utils.tensorboard": "tensorboard",  # SummaryWriter imports tensorboard
                         "torch.onnx": "onnx"}  # the TorchScript exporter: "Module onnx is not installed!"
# imported inside a function, behind a flag, from an optional requirements file of their own
OPTIONAL = {"wandb": "requirements-track.txt"}


def requirements(name):
    """{normalised package name: its version specifier ('' when unpinned)} of a requirements file."""
    found = {}
    for line in (REPO / name).read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            package, spec = re.fullmatch(r"([A-Za-z0-9._-]+)(?:\[[^\]]*\])?\s*(.*)", line).groups()
            found[re.sub(r"[-_.]+", "-", package).lower()] = spec.replace(" ", "")
    return found


def third_party_uses(path):
    """(dotted name, imported at module level) for each third-party module a script imports, and each
    torch.<part> it reaches through attributes (torch.onnx.export)."""
    tree = ast.parse(path.read_text())
    module_level = {id(node) for node in tree.body}
    uses = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Attribute):
            dotted = ast.unparse(node)
            names = [dotted] if re.fullmatch(r"torch(\.\w+)+", dotted) else []
            uses |= {(name, True) for name in names}
            continue
        else:
            continue
        uses |= {(name, id(node) in module_level) for name in names
                 if name.split(".")[0] not in sys.stdlib_module_names and not is_local(name)}
    return uses


def is_local(dotted):
    """A script of this repository (the siblings import ppo_godot), not a package."""
    return (REPO / f"{dotted.split('.')[0]}.py").exists()


def package_for(dotted):
    for part, package in PACKAGE_OF_TORCH_PART.items():
        if dotted == part or dotted.startswith(part + "."):
            return package
    return PACKAGE_OF_MODULE.get(dotted.split(".")[0])


def test_the_godot_install_pins_what_the_full_install_pins():
    full, godot = requirements("requirements.txt"), requirements("requirements-godot.txt")
    shared = full.keys() & godot.keys()
    assert {"torch", "gymnasium", "godot-rl"} <= shared
    assert {name: godot[name] for name in shared} == {name: full[name] for name in shared}


def test_the_godot_install_leaves_out_the_course_packages():
    godot = requirements("requirements-godot.txt")
    assert not godot.keys() & {"mujoco", "box2d", "pygame", "moviepy", "sb3-contrib", "matplotlib", "pytest",
                               "pytest-xdist", "imageio"}


@pytest.mark.parametrize("script", GODOT_SCRIPTS, ids=lambda path: path.name)
def test_the_godot_install_provides_every_module_the_script_uses(script):
    godot = requirements("requirements-godot.txt")
    missing = []
    for dotted, module_level in sorted(third_party_uses(script)):
        package = package_for(dotted)
        assert package, f"{script.name} uses {dotted}: add its package to PACKAGE_OF_MODULE and requirements-godot.txt"
        optional = OPTIONAL.get(package)
        if optional and not module_level:
            assert package in requirements(optional), f"{dotted} is meant to come from {optional}"
        elif package not in godot:
            missing.append(f"{dotted} ({package})")
    assert not missing, f"{script.name} uses what requirements-godot.txt does not install: {missing}"


def test_the_imports_are_found():
    """The parse itself: ppo_godot.py's imports and its torch.onnx call are seen, wandb as a function's import."""
    uses = third_party_uses(REPO / "ppo_godot.py")
    assert {("torch", True), ("godot_rl.core.godot_env", True), ("torch.utils.tensorboard", True),
            ("torch.onnx.export", True), ("wandb", False)} <= uses
    assert not any(name.split(".")[0] in {"os", "ppo_godot"} for name, _ in uses)


@pytest.mark.parametrize("page", ["docs/using-the-scripts.md", "requirements.txt", "requirements-godot.txt"])
def test_the_cpu_wheel_command_takes_the_pinned_torch_from_the_cpu_only_index(page):
    """PyTorch's CPU-only wheels (their versions end in +cpu) come from its index /whl/cpu, the one source the
    command names: pip then takes the pin's +cpu build, which the page says it installs."""
    version = requirements("requirements.txt")["torch"].removeprefix("==")
    text = (REPO / page).read_text()
    assert re.findall(r"pip install torch\S*[^\n,`]*", text) == [
        f"pip install torch=={version} --index-url https://download.pytorch.org/whl/cpu"]
    if page.endswith(".md"):
        assert f"The first line installs `torch {version}+cpu`" in text


@pytest.mark.parametrize("page", ["README.md", "docs/using-the-scripts.md", "requirements.txt",
                                  "requirements-godot.txt"])
def test_the_pages_name_the_pinned_torch(page):
    pin = requirements("requirements.txt")["torch"]
    named = re.findall(r"torch(==[0-9][^\s`]*)", (REPO / page).read_text())
    assert named and set(named) == {pin}
