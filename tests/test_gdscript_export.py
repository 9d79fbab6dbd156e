"""--gdscript-export-path on real engines: Debian's Godot 3.2.3 (godot/run_policy.gd) and Godot 4.6, the
official web template in headless Chromium (tests/godot4_web.py, tests/godot4_run_policies.gd). On each the
exported file acts as the torch policy does on observations recorded from the real game, for each action kind
and for several keys, and its sampled mode draws as the policy says; the demo game plays it alone (no Python)
to the mean return --eval-checkpoint gets. The docs' GDScript snippets run in tests/test_gdscript_snippets.py."""
import json
import re
import subprocess

import numpy as np
import pytest
import torch

import godot4_web
import ppo_godot
import ppo_godot_multi_policy as multi
from conftest import REPO, free_port, needs_godot, run_script

GAMES = {kind: str(REPO / "godot" / "chase" / f"chase_{kind}.x86_64")
         for kind in ("discrete", "multidiscrete", "continuous", "plugin", "tag")}
RUN_POLICY = REPO / "godot" / "run_policy.gd"
UNPACED = ["--fixed-fps", "60"]  # the demo's ticks as fast as they run, not 60 a second: the same episodes


def recorded_game(kind, steps=200):
    """A random policy far from uniform (far_from_uniform) and what its 16 agents observed in the real game over
    `steps` steps, each observation once (an agent pressed into a corner sees the same one until its time-out):
    (agent, layout, actions, rows)."""
    envs = ppo_godot.GodotVecEnv(ppo_godot.parse_args(["--env-path", GAMES[kind], "--port", str(free_port())]))
    try:
        torch.manual_seed(0)
        agent = ppo_godot.Agent(envs.obs_layout, envs.action_heads)
        far_from_uniform(agent.actor[-1], envs.action_heads)
        rows = [envs.reset()[0]]
        for _ in range(steps - 1):
            with torch.no_grad():
                rows.append(envs.step(agent.get_action(torch.as_tensor(rows[-1])).numpy())[0])
    finally:
        envs.close()
    return agent, envs.obs_layout, envs.action_heads, np.unique(np.concatenate(rows), axis=0)


def far_from_uniform(layer, action_heads):
    """The actor's last layer with weights of std 2, a continuous action's rows 0.25 of that (so that its means
    fall inside and outside [-1, 1]): actions that differ from one observation to the next."""
    with torch.no_grad():
        layer.weight.normal_(std=2.0)
        row = 0
        for _, kind, size in action_heads:
            if kind == "continuous":
                layer.weight[row:row + size] *= 0.25
            row += size


def as_get_obs(row, obs_layout):
    """A row split back into the get_obs() dictionary the game sent, its keys in reverse order (act() looks
    them up by name)."""
    sizes = [shape[0] for _, shape in obs_layout]
    parts = np.split(row, np.cumsum(sizes)[:-1])
    return {key: part.tolist() for (key, _), part in reversed(list(zip(obs_layout, parts)))}


def engine_plays(policy_path, observations, folder, *flags):
    """The actions the exported file chose in Godot 3 for each observation, its microseconds a decision, and
    what the engine wrote on stderr."""
    (folder / "obs.json").write_text(json.dumps(observations))
    proc = subprocess.run(["godot3-server", "-s", str(RUN_POLICY), f"--policy={policy_path}",
                           f"--observations={folder / 'obs.json'}", f"--actions={folder / 'actions.json'}", *flags],
                          check=True, capture_output=True, text=True, timeout=120, cwd=folder)
    played = json.loads((folder / "actions.json").read_text())
    return played["actions"], played["usec_per_decision"], proc.stderr


def godot3_plays(path, observations, folder, sample=False, seed=0):
    """The actions the exported file chose in Godot 3.2.3 for each observation."""
    return engine_plays(path, observations, folder, *(["--sample", f"--seed={seed}"] if sample else []))[0]


def godot4_plays(path, observations, folder, sample=False, seed=0):
    """The actions the exported file chose in Godot 4.6 (the web template in Chromium) for each observation."""
    (played,) = godot4_web.play_policies([(path, observations, sample, seed)])
    return played["actions"]


ENGINES = {"godot 3.2.3": godot3_plays, "godot 4.6": godot4_plays}


def needs(engine):
    needs_godot()  # the observations come from the Godot 3 game
    if engine == "godot 4.6":
        godot4_web.needs_godot4()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("kind", ["discrete", "multidiscrete", "continuous", "plugin"])
def test_the_engine_plays_the_exported_file_as_torch_does(kind, engine, tmp_path):
    """plugin: the game as the Godot RL Agents plugin makes it: two keys declared out of alphabetical order,
    a discrete and a continuous action. The observations come from the real game (Godot 3.2.3)."""
    needs(engine)
    agent, obs_layout, action_heads, rows = recorded_game(kind)
    assert len(rows) >= 1000
    path = tmp_path / "policy.gd"
    ppo_godot.export_gdscript(agent, obs_layout, action_heads, str(path), 'the tests, a "quoted" run')
    played = ENGINES[engine](path, [as_get_obs(row, obs_layout) for row in rows], tmp_path)
    with torch.no_grad():
        greedy = agent.get_action(torch.as_tensor(rows), greedy=True).numpy()
    expected = [ppo_godot.to_game_action(action, action_heads) for action in greedy]
    assert len(played) == len(expected)
    inside = []
    for i, (got, want) in enumerate(zip(played, expected)):
        assert list(got) == list(want), i  # the names in declared order, as set_action() reads them
        for name, kind_, _ in action_heads:
            if kind_ == "discrete":
                assert got[name] == want[name], (i, name, got, want)
            else:
                np.testing.assert_allclose(got[name], want[name], rtol=0, atol=1e-5, err_msg=f"{i} {name}")
                inside += [abs(v) < 1 for v in want[name]]
    if inside:  # the test sees means inside [-1, 1], not only clamped ones
        assert 0.1 < np.mean(inside) < 0.9, np.mean(inside)
    if kind == "plugin":
        assert [key for key, _ in obs_layout] == ["position", "to_target"]  # sorted; the game declares to_target first


@pytest.mark.parametrize("engine", ENGINES)
def test_the_sampled_mode_draws_from_the_policy(engine, tmp_path):
    """act(obs, true): a discrete action's choices as often as pi(a|s) says, a continuous one's mean +
    std * N(0, 1) (its observation keeps the mean near 0, away from the clamp)."""
    needs(engine)
    torch.manual_seed(1)
    layout, heads = [("obs", (3,))], [("move", "discrete", 4), ("aim", "continuous", 1)]
    agent = ppo_godot.Agent(layout, heads)
    with torch.no_grad():
        agent.actor[-1].weight[:4].normal_(std=1.0)
        agent.actor[-1].weight[4:].zero_()
        agent.actor[-1].bias.zero_()
        agent.actor_logstd.fill_(np.log(0.2))
    path = tmp_path / "policy.gd"
    ppo_godot.export_gdscript(agent, layout, heads, str(path), "the tests")
    obs = [0.5, -1.0, 2.0]
    n = 4000
    played = ENGINES[engine](path, [{"obs": obs}] * n, tmp_path, sample=True, seed=7)
    with torch.no_grad():
        pi = agent.action_distributions(torch.tensor([obs]))[0].exp()[0].numpy()
    frequencies = np.bincount([a["move"] for a in played], minlength=4) / n
    np.testing.assert_allclose(frequencies, pi, atol=0.03)  # 4 standard errors at most
    aims = np.array([a["aim"][0] for a in played])
    assert abs(aims.mean()) < 0.02 and abs(aims.std() - 0.2) < 0.02
    greedy = ENGINES[engine](path, [{"obs": obs}] * 3, tmp_path)
    assert all(a == {"move": int(pi.argmax()), "aim": [0.0]} for a in greedy)


def played_alone(game, policies, episodes, seed, folder):
    """The demo game run with exported files and no trainer: {policy name: mean return}, from its lines."""
    flags = [f"--policy{'_' + name if name else ''}={path}" for name, path in policies.items()]
    proc = subprocess.run([game, *flags, f"--episodes={episodes}", f"--env_seed={seed}", "--no-window",
                           "--disable-render-loop", *UNPACED], capture_output=True, text=True, timeout=300, cwd=folder)
    assert proc.returncode == 0, proc.stderr
    assert len(re.findall(r"^policy=\S+ agent=\d+ episodic_return=", proc.stdout, flags=re.M)) >= episodes
    means = re.findall(r"^policy=(\S+) mean_return=(\S+) over (\d+) episodes$", proc.stdout, flags=re.M)
    return {name: (float(mean), int(count)) for name, mean, count in means}


@pytest.mark.parametrize("kind", ["discrete", "continuous"])
def test_the_demo_plays_the_exported_file_alone_as_eval_checkpoint_does(kind, tmp_path):
    needs_godot()
    argv = ["--env-path", GAMES[kind], "--num-steps", "32"]
    run_dir = ppo_godot.train(ppo_godot.parse_args(argv + ["--port", str(free_port()), "--total-timesteps", "4096",
                                                           "--save-model", "--log-dir", str(tmp_path)]))
    checkpoint = f"{run_dir}/ppo_godot.pt"
    returns = ppo_godot.evaluate(ppo_godot.parse_args(argv + ["--port", str(free_port()), "--eval-checkpoint",
                                                              checkpoint, "--eval-episodes", "32",
                                                              "--seed", "3"]), greedy=True)
    run_script("ppo_godot.py", "--export-checkpoint", checkpoint, "--gdscript-export-path",
               str(tmp_path / "policy.gd"), cwd=tmp_path)
    means = played_alone(GAMES[kind], {"": tmp_path / "policy.gd"}, 32, 3, tmp_path)
    assert means == {"shared_policy": (pytest.approx(np.mean(returns), abs=1e-4), len(returns))}


def test_the_tag_game_plays_both_exported_policies_alone_as_eval_checkpoint_does(tmp_path):
    needs_godot()
    argv = ["--env-path", GAMES["tag"], "--num-steps", "16"]
    run_dir = multi.train(multi.parse_args(argv + ["--port", str(free_port()), "--total-timesteps", "2048",
                                                   "--save-model", "--log-dir", str(tmp_path)]))
    checkpoint = f"{run_dir}/ppo_godot_multi_policy.pt"
    returns = multi.evaluate(multi.parse_args(argv + ["--port", str(free_port()), "--eval-checkpoint",
                                                      checkpoint, "--eval-episodes", "16", "--seed", "5"]))
    export = run_script("ppo_godot_multi_policy.py", "--export-checkpoint", checkpoint,
                        "--gdscript-export-path", str(tmp_path / "tag.gd"), cwd=tmp_path)
    files = {name: tmp_path / f"tag_{name}.gd" for name in ("chaser", "runner")}
    assert all(str(path) in export.stdout for path in files.values())
    means = played_alone(GAMES["tag"], files, 16, 5, tmp_path)
    assert means == {name: (pytest.approx(np.mean(returns[name]), abs=1e-4), len(returns[name]))
                     for name in ("chaser", "runner")}


def demo_alone(folder, *flags):
    """The discrete demo game run with no trainer, headless."""
    return subprocess.run([GAMES["discrete"], *flags, "--no-window", "--disable-render-loop", *UNPACED],
                          capture_output=True, text=True, timeout=300, cwd=folder)


def new_policy_file(folder):
    layout, heads = [("obs", (4,))], [("move", "discrete", 5)]  # the discrete game's
    ppo_godot.export_gdscript(ppo_godot.Agent(layout, heads), layout, heads, str(folder / "policy.gd"), "the tests")
    return folder / "policy.gd"


@pytest.mark.parametrize("episodes, each", [(None, 7), (17, 2)], ids=["default", "17"])
def test_the_demo_plays_each_agent_the_rounded_up_share_of_the_episodes(episodes, each, tmp_path):
    """--episodes, 100 unless given, over the agents of the policy that has fewest, rounded up: each of
    the game's 16 agents plays 7 episodes by default (6.25), 2 for 17."""
    needs_godot()
    proc = demo_alone(tmp_path, f"--policy={new_policy_file(tmp_path)}", "--max_steps=10",  # short time-outs
                      *([f"--episodes={episodes}"] if episodes else []))
    assert proc.returncode == 0, proc.stderr
    agents = re.findall(r"^policy=shared_policy agent=(\d+) episodic_return=", proc.stdout, flags=re.M)
    assert sorted(agents.count(str(i)) for i in range(16)) == [each] * 16
    assert re.search(rf"^policy=shared_policy mean_return=\S+ over {16 * each} episodes$", proc.stdout, flags=re.M)


@pytest.mark.parametrize("flags, line", [
    (["--observation=camera", "--policy={policy}"],
     "chase: --policy plays vector observations only (camera policies ship as ONNX)"),
    (["--policy={folder}/missing.gd"],
     "chase: no policy for shared_policy: give --policy=PATH or --policy_shared_policy=PATH (a .gd file)"),
], ids=["camera", "missing file"])
def test_the_demo_refuses_in_one_line_what_it_cannot_play(flags, line, tmp_path):
    needs_godot()
    policy = new_policy_file(tmp_path)
    proc = demo_alone(tmp_path, *(flag.format(policy=policy, folder=tmp_path) for flag in flags))
    assert proc.returncode == 2 and "episodic_return" not in proc.stdout
    assert [text for text in proc.stderr.splitlines() if text.startswith("chase:")] == [line]


UNWRITABLE = {  # what the export cannot write: (obs_layout, action_heads, actor or None, what the line says)
    "an actor with a Sigmoid": ([("obs", (4,))], [("move", "discrete", 5)],
                                torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Sigmoid(), torch.nn.Linear(8, 5)),
                                "the actor is Linear -> Sigmoid -> Linear; the export writes Linear layers"),
    "an actor with a LayerNorm": ([("obs", (4,))], [("move", "discrete", 5)],
                                  torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.LayerNorm(8), torch.nn.Tanh(),
                                                      torch.nn.Linear(8, 5)),
                                  "the actor is Linear -> LayerNorm -> Tanh -> Linear"),
    "two activations in a row": ([("obs", (4,))], [("move", "discrete", 5)],
                                 torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.ReLU(),
                                                     torch.nn.Linear(8, 5)),
                                 "the actor is Linear -> Tanh -> ReLU -> Linear; the export writes Linear layers, "
                                 "each one followed by Tanh, ReLU or nothing"),
    "a name beyond U+FFFF": ([("obs", (4,))], [("move\U0001F600", "discrete", 5)], None, "holds a character beyond U+FFFF"),
}


@pytest.mark.parametrize("case", UNWRITABLE)
def test_a_policy_the_export_cannot_write_gets_one_line(case, tmp_path, capsys):
    obs_layout, heads, actor, message = UNWRITABLE[case]
    agent = ppo_godot.Agent(obs_layout, heads)
    if actor is not None:
        agent.actor = actor
    with pytest.raises(SystemExit) as stop:
        ppo_godot.export_gdscript(agent, obs_layout, heads, str(tmp_path / "policy.gd"), "the tests")
    assert stop.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("ppo_godot.py: error: --gdscript-export-path: ") and message in line, line
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")], ids=str)
@pytest.mark.parametrize("where", ["actor.0.weight", "actor.0.bias", "actor.2.weight", "actor.2.bias",
                                   "actor.4.weight", "actor.4.bias", "actor_logstd"])
def test_a_weight_or_bias_that_is_not_a_number_gets_one_line(where, value, tmp_path, capsys):
    heads = [("move", "discrete", 5), ("aim", "continuous", 2)]
    agent = ppo_godot.Agent([("obs", (4,))], heads)
    with torch.no_grad():
        agent.get_parameter(where).view(-1)[-1] = value  # the last number of it, written last
    with pytest.raises(SystemExit) as stop:
        ppo_godot.export_gdscript(agent, [("obs", (4,))], heads, str(tmp_path / "p.gd"), "tests")
    assert stop.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"ppo_godot.py: error: --gdscript-export-path: the policy's {where} holds {value}: nothing to export"]
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("engine", ENGINES)
def test_greedy_play_takes_the_first_largest_logit_on_a_tie(engine, tmp_path):
    """As the file's comment says, and as torch's argmax does: logits [0, 2, 1, 2] play 1, not 3."""
    needs(engine)
    layout, heads = [("obs", (2,))], [("move", "discrete", 4), ("turn", "discrete", 3)]
    agent = ppo_godot.Agent(layout, heads)
    with torch.no_grad():  # the logits are the last layer's biases alone
        agent.actor[-1].weight.zero_()
        agent.actor[-1].bias.copy_(torch.tensor([0.0, 2.0, 1.0, 2.0, 5.0, 5.0, 5.0]))
        assert agent.get_action(torch.tensor([[0.3, -0.7]]), greedy=True).tolist() == [[1.0, 0.0]]
    path = tmp_path / "policy.gd"
    ppo_godot.export_gdscript(agent, layout, heads, str(path), "the tests")
    played = ENGINES[engine](path, [{"obs": [0.3, -0.7]}, {"obs": [-5.0, 9.0]}], tmp_path)
    assert played == [{"move": 1, "turn": 0}] * 2


def test_act_on_a_missing_or_short_key_says_so_and_returns_nothing(tmp_path):
    needs_godot()
    layout, heads = [("position", (2,)), ("to_target", (2,))], [("move", "discrete", 5)]
    path = tmp_path / "policy.gd"
    ppo_godot.export_gdscript(ppo_godot.Agent(layout, heads), layout, heads, str(path), "the tests")
    observations = [{"position": [0.1, 0.2]}, {"position": [0.1, 0.2], "to_target": [0.3]},
                    {"position": [0.1, 0.2, 0.5], "to_target": [0.3, 0.4]},
                    {"position": [0.1, 0.2], "to_target": [0.3, 0.4]}]
    played, _, stderr = engine_plays(path, observations, tmp_path)
    assert played[:3] == [{}, {}, {}] and played[3] != {}
    errors = [line for line in stderr.splitlines() if "policy: get_obs() needs" in line]
    assert [line.split("policy: ", 1)[-1] for line in errors] == [
        "get_obs() needs the key to_target with 2 values", "get_obs() needs the key to_target with 2 values",
        "get_obs() needs the key position with 2 values"]
