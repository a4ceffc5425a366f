"""One config style for every command (issue 46): `spanrl rollout`, `tasks`, `eval`, `judge` and `prompts`
take their flags from config knobs, and read their own section of spanrl.toml ([rollout], [tasks], [eval],
[judge], [prompts]) with the precedence of ``spanrl.config.resolve``: flag > environment > file > default.
An unknown key in those sections is refused with file:line, as in [ingest] and [train].

Each command runs through the real CLI up to its stage's entry point, which is replaced by one that
records the resolved config (no agent, judge or gateway is started)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.config import resolve
from spanrl.evaluate.config import EvalConfig

ROOT = Path(__file__).resolve().parents[1]

# CLI modules whose every flag is generated from config knobs (spanrl.config.click_options); a module
# joins this list once it is converted, and then may not write a click option by hand
KNOB_FLAG_MODULES = ("rollout/cli.py", "evaluate/cli.py", "judge/cli.py", "prompts/cli.py", "serve/cli.py",
                     "gateway/cli.py", "collector/cli.py", "ui/cli.py", "demo/cli.py", "export/cli.py",
                     "query/cli.py", "ingest/lake_cli.py", "transitions/cli.py", "trainer/cli.py", "ingest/cli.py",
                     "spanrl/cli.py")
# hand-written options those modules may still hold: the shared ones (spanrl.options.data_option, --config)
SHARED_OPTIONS = {"--data", "--config"}


class Captured(Exception):
    """Raised by the replaced entry point, carrying the config the command resolved."""


def _capture(monkeypatch: pytest.MonkeyPatch, target: str, arg: int = 0) -> None:
    module, name = target.rsplit(":", 1)

    def record(*args: Any, **_kw: Any) -> None:
        raise Captured(args[arg])

    monkeypatch.setattr(f"{module}.{name}", record)


# command -> (argv after --data, the entry point that receives the config, its argument index)
COMMANDS: dict[str, tuple[list[str], str, int]] = {
    "rollout": (["rollout", "--tasks", "t.jsonl", "--n", "2", "--policy-url", "http://p/v1", "--", "agent", "{input}"],
                "spanrl.rollout.cli:run_with_progress", 0),
    "tasks": (["tasks"], "spanrl.rollout.export:export_tasks", 1),
    "eval": (["eval", "--tasks", "t.jsonl", "--policy", "http://a/v1", "--score", "s", "--", "agent"],
             "spanrl.evaluate.run:evaluate", 0),
    "judge": (["judge", "--judge-url", "http://j/v1", "--judge-model", "m"], "spanrl.judge.runner:run_judge", 0),
    "prompts": (["prompts", "optimize", "--agent", "calc", "--tasks", "t.jsonl", "--score", "s", "--upstream",
                 "http://u/v1", "--", "agent"], "spanrl.prompts.optimize:optimize", 0),
}

# section -> (a key and its file value, the field it sets and the value it reaches, a flag that beats it)
CASES = [
    ("rollout", "concurrency = 3", "concurrency", 3, ["--concurrency", "5"], 5),
    ("rollout", 'timeout_s = "2m"', "timeout_s", 120.0, ["--timeout", "5s"], 5.0),
    ("rollout", 'purpose = "eval"', "purpose", "eval", ["--purpose", "train"], None),
    ("tasks", 'sql = "select rollout_id from rollouts"', None, "select rollout_id from rollouts",
     ["--sql", "select 1 as rollout_id"], "select 1 as rollout_id"),
    ("eval", "level = 0.9", "level", 0.9, ["--level", "0.8"], 0.8),
    ("eval", "n = 7", "n", 7, ["--n", "2"], 2),
    ("judge", "min_group = 3", "min_group", 3, ["--min-group", "4"], 4),
    ("judge", "timeout_s = 30", "timeout_s", 30.0, ["--timeout", "1m"], 60.0),
    ("prompts", "budget_rollouts = 8", "budget_rollouts", 8, ["--budget-rollouts", "16"], 16),
    ("prompts", "promote_if_better = false", "promote_if_better", False, ["--promote-if-better"], True),
]


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("SPANRL_DATA", "SPANRL_REPORT_TO"):
        monkeypatch.delenv(var, raising=False)


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, section: str, toml: str, extra: list[str]) -> Any:
    """Run ``spanrl <section's command>`` on a data root holding ``toml``; the config it resolved."""
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    (data / "spanrl.toml").write_text(toml)
    argv, target, arg = COMMANDS[section]
    _capture(monkeypatch, target, arg)
    cut = argv.index("--") if "--" in argv else len(argv)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, [*argv[:cut], "--data", str(data), *extra, *argv[cut:]])
    if isinstance(result.exception, Captured):
        return result.exception.args[0]
    return result


@pytest.mark.parametrize(("section", "line", "name", "from_file", "flag", "from_flag"), CASES,
                         ids=[f"{c[0]}-{c[1].split()[0]}" for c in CASES])
def test_a_section_key_sets_the_default_and_a_flag_beats_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            section: str, line: str, name: str | None, from_file: Any,
                                                            flag: list[str], from_flag: Any) -> None:
    toml = f"[{section}]\n{line}\n"
    got = _run(tmp_path, monkeypatch, section, toml, [])
    assert not hasattr(got, "exit_code"), got.output
    assert (got if name is None else getattr(got, name)) == from_file
    got = _run(tmp_path, monkeypatch, section, toml, flag)
    assert not hasattr(got, "exit_code"), got.output
    assert (got if name is None else getattr(got, name)) == from_flag


@pytest.mark.parametrize("section", sorted(COMMANDS))
def test_an_unknown_key_is_refused_with_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, section: str) -> None:
    result = _run(tmp_path, monkeypatch, section, f"# settings\n[{section}]\n\nconcurency = 2\n", [])
    assert getattr(result, "exit_code", None) == 2, result
    path = tmp_path / "data" / "spanrl.toml"
    assert f"{path}:4: unknown key 'concurency' in [{section}]" in result.output


@pytest.mark.parametrize(("line", "says"), [("n = 4", "n in [rollout] is not read from the file (the command line's --n"),
                                            ("data = '/elsewhere'", "data in [rollout] is not read from the file")])
def test_a_key_the_command_line_always_sets_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str,
                                                       says: str) -> None:
    """A required flag (or --data/--config) always beats the file: its key would be ignored in silence."""
    result = _run(tmp_path, monkeypatch, "rollout", f"[rollout]\nconcurrency = 2\n{line}\n", [])
    assert getattr(result, "exit_code", None) == 2, result
    assert f"{tmp_path / 'data' / 'spanrl.toml'}:3: {says}" in result.output


def test_a_bad_duration_in_the_file_is_refused_with_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = _run(tmp_path, monkeypatch, "rollout", '[rollout]\ntimeout_s = "soon"\n', [])
    assert result.exit_code == 2
    assert f"{tmp_path / 'data' / 'spanrl.toml'}:2: timeout_s = 'soon'" in result.output


def test_a_bad_choice_in_the_file_is_refused_with_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = _run(tmp_path, monkeypatch, "rollout", '[rollout]\npurpose = "test"\n', [])
    assert result.exit_code == 2
    assert f"{tmp_path / 'data' / 'spanrl.toml'}:2: purpose = 'test' in [rollout]: choose one of train, eval" in result.output


def test_config_names_another_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "elsewhere.toml"
    other.write_text("[judge]\nretries = 5\n")
    got = _run(tmp_path, monkeypatch, "judge", "[judge]\nretries = 1\n", ["--config", str(other)])
    assert got.retries == 5 and got.config_file == other


def test_eval_report_to_is_flag_then_env_then_file(tmp_path: Path) -> None:
    (tmp_path / "spanrl.toml").write_text('[eval]\nreport_to = "tensorboard"\n')
    base = {"data": tmp_path, "tasks": tmp_path / "t.jsonl", "policies": ("http://a/v1",), "command": ["a"], "score": "s"}
    assert resolve(EvalConfig, base, "eval", env={}).report_to == "tensorboard"
    assert resolve(EvalConfig, base, "eval", env={"SPANRL_REPORT_TO": "wandb"}).report_to == "wandb"
    assert resolve(EvalConfig, {**base, "report_to": "none"}, "eval", env={"SPANRL_REPORT_TO": "wandb"}).report_to == "none"


def _hand_written_options(path: Path) -> list[str]:
    """The first name of every ``click.option(...)`` / ``click.Option(...)`` call written in the module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("option", "Option"):
                first = node.args[0] if node.args else None
                found.append(first.value if isinstance(first, ast.Constant) else ast.unparse(node)[:60])
    return found


@pytest.mark.parametrize("module", KNOB_FLAG_MODULES)
def test_no_flag_is_written_by_hand(module: str) -> None:
    """Every flag comes from a knob (one home for its default, help and spelling), never a click.option."""
    path = ROOT / module
    assert path.is_file(), f"{module}: listed in KNOB_FLAG_MODULES but missing"
    by_hand = [name for name in _hand_written_options(path) if name not in SHARED_OPTIONS]
    assert not by_hand, f"{module}: hand-written click options {by_hand}; make each a knob() field of the command's " \
                        "config type and generate the flag with spanrl.config.click_options"
