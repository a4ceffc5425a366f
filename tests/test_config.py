"""The one config system (spanrl/config.py): spanrl.toml parsed once per process, unknown sections
and keys refused with file:line, flag > environment > file > default in one place, $SPANRL_DATA for
every command, help texts that show the field's own default, and the manifest's config keys kept."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

import spanrl.config
from spanrl.cli import cli
from spanrl.config import default_of, knob, load_config_file, resolve
from spanrl.errors import InputError
from spanrl.options import parse_duration
from spanrl.trainer.config import TrainConfig, make_train_config
from spanrl.transitions.air import load_air_rules
from spanrl.transitions.build import build_transitions
from spanrl.transitions.config import BuildConfig, IngestConfig, make_ingest_config
from tests.transitions.lakefake import sample_lake

# What a snapshot manifest's "config" held before the stage configs were split (schema v2): the
# composed IngestConfig must give exactly these keys and default values, or every lake rebuilds.
# include_eval joined with issue 30 (evaluation rollouts left out of training snapshots).
MANIFEST_CONFIG = {
    "data": "spanrl-data", "input": None, "no_transitions": False, "rebuild": False, "agent": None,
    "rollout_key": None, "task_key": None, "credit": "identical", "gamma": 0.95, "advantage": "group",
    "missing_reward": "drop", "include_eval": False, "hierarchy_repair": True, "settle_s": 600.0,
    "memory_limit": "auto", "threads": None, "workers": None, "reward_keys": [], "config_file": None,
}


@pytest.fixture(autouse=True)
def _no_env_data(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPANRL_DATA", raising=False)


def test_unknown_section_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "spanrl.toml"
    path.write_text('[ingest]\nsettle_s = 0\n\n# a typo\n[ingset]\ncredit = "last"\n')
    with pytest.raises(InputError) as err:
        make_ingest_config(data=tmp_path)
    assert str(err.value).startswith(f"{path}:5: unknown section [ingset]")
    assert "did you mean 'ingest'" in str(err.value)
    assert f"known sections: {', '.join(spanrl.config.SECTIONS)}" in str(err.value)


@pytest.mark.parametrize(("text", "make", "line", "key", "section"), [
    ('[ingest]\ncredit = "last"\n\nsetle_s = 0\n', lambda d: make_ingest_config(data=d), 4, "setle_s", "ingest"),
    ('[train]\nlr = 1e-5\nrolouts_per_step = 2\n', lambda d: make_train_config(data=d), 3, "rolouts_per_step", "train"),
    ('[air]\ndefault = false\n', lambda d: load_air_rules(d / "spanrl.toml"), 2, "default", "air"),
])
def test_unknown_key_is_refused_with_its_line(tmp_path: Path, text: str, make, line: int, key: str, section: str) -> None:
    path = tmp_path / "spanrl.toml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        make(tmp_path)
    assert str(err.value).startswith(f"{path}:{line}: unknown key {key!r} in [{section}]"), str(err.value)
    assert "known keys: " in str(err.value)


def test_an_air_rule_with_an_unknown_key_is_refused_with_where_it_is(tmp_path: Path) -> None:
    """A typo inside [[air.rules]] ("vaule" beside value, "where" for when) is refused, never dropped (issue 46)."""
    path = tmp_path / "spanrl.toml"
    path.write_text('[air]\n\n[[air.rules]]\nname = "slow"\nwhen = "is_tool"\nvalue = -0.1\nvaule = -0.2\n')
    with pytest.raises(InputError) as err:
        load_air_rules(path)
    message = str(err.value)
    assert message.startswith(f"{path}:") and "AIR rule 'slow': unknown key 'vaule' (did you mean 'value'?)" in message
    path.write_text('[[air.rules]]\nname = "slow"\nwhen = "is_tool"\nvalue = -0.1\n')
    assert [r.name for r in load_air_rules(path)][-1] == "slow"


def test_a_bad_choice_in_the_file_is_refused_with_its_line(tmp_path: Path) -> None:
    (tmp_path / "spanrl.toml").write_text('[ingest]\n\ncredit = "discountd"\n')
    with pytest.raises(InputError, match=r"spanrl.toml:3: credit = 'discountd' in \[ingest\]: choose one of .*discounted"):
        make_ingest_config(data=tmp_path)
    with pytest.raises(InputError, match="--credit 'nope': choose one of"):
        IngestConfig(credit="nope")  # built directly (tests, the manifest's config): checked too


def test_missing_and_broken_files_keep_their_messages(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="config file not found"):
        make_ingest_config(data=tmp_path, config_file=tmp_path / "nope.toml")
    (tmp_path / "spanrl.toml").write_text("[ingest\n")
    with pytest.raises(InputError, match="not valid TOML"):
        make_ingest_config(data=tmp_path)


@dataclass
class _Toy:
    data: Path = knob(Path("spanrl-data"), "Data root.", env="SPANRL_DATA")
    colour: str = knob("red", "A colour.", env="SPANRL_TEST_COLOUR")


@pytest.mark.parametrize(("flag", "env", "file", "expected"), [
    (None, None, None, "red"),
    (None, None, "green", "green"),
    (None, "blue", "green", "blue"),
    ("black", "blue", "green", "black"),
])
def test_precedence_is_flag_then_env_then_file_then_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             flag, env, file, expected) -> None:
    if env is not None:
        monkeypatch.setenv("SPANRL_TEST_COLOUR", env)
    else:
        monkeypatch.delenv("SPANRL_TEST_COLOUR", raising=False)
    if file is not None:
        (tmp_path / "spanrl.toml").write_text(f'[train]\ncolour = "{file}"\n')
    assert resolve(_Toy, {"data": tmp_path, "colour": flag}, "train").colour == expected


def test_make_configs_use_spanrl_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPANRL_DATA", str(tmp_path))
    (tmp_path / "spanrl.toml").write_text('[ingest]\ncredit = "last"\n[train]\nrollouts_per_step = 3\n')
    cfg = make_ingest_config()
    assert cfg.data == tmp_path and cfg.credit == "last" and cfg.config_file == tmp_path / "spanrl.toml"
    train = make_train_config(model=tmp_path)
    assert train.data == tmp_path and train.rollouts_per_step == 3
    assert make_ingest_config(data=tmp_path / "other").data == tmp_path / "other"  # the flag still wins
    assert make_ingest_config(credit="discounted").credit == "discounted"


def test_the_file_is_parsed_once_per_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """make_ingest_config, the [air] rules and the [[conventions]] reuse key all read one parse; any
    TOML parse of the file (through any tomllib entry point) is counted."""
    marker = "# parse-once marker"
    (tmp_path / "spanrl.toml").write_text(f'{marker}\n[ingest]\nsettle_s = 0\n[air]\ndefaults = true\n'
                                          '[[conventions]]\nname = "acme"\nprompt = "acme.prompt"\n')
    parses: list[str] = []
    real = tomllib.loads

    def counting(text: str, **kw):
        if marker in text:
            parses.append(text)
        return real(text, **kw)

    monkeypatch.setattr(tomllib, "loads", counting)
    monkeypatch.setattr(tomllib._parser, "loads", counting)  # tomllib.load() calls this one
    monkeypatch.setattr(spanrl.config, "_CACHE", {})
    lake = sample_lake(tmp_path)
    result = build_transitions(make_ingest_config(data=tmp_path), con=lake.connect())
    assert result.status == "written" and len(parses) == 1
    (tmp_path / "spanrl.toml").write_text(f'{marker}\n[ingest]\nsettle_s = 1\n')  # a changed file is read again
    assert make_ingest_config(data=tmp_path).settle_s == 1 and len(parses) == 2


def test_spanrl_ingest_parses_the_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both stages through the CLI, the [[conventions]] mapping bound over real lake views too."""
    import json

    from spanrl.transitions import read_snapshot
    from tests.ingest.otlp_lines import new_span_id, new_trace_id, span, trace_line, write_lines

    marker = "# parse-once marker"
    (tmp_path / "spanrl.toml").write_text(f'{marker}\n[ingest]\nsettle_s = 0\n[air]\ndefaults = true\n'
                                          '[[conventions]]\nname = "acme"\nprompt = "acme.prompt"\n'
                                          'response = "acme.answer"\n')
    tid, root = new_trace_id(), new_span_id()
    write_lines(tmp_path / "otel" / "traces.jsonl", [trace_line([
        span("run", tid, root, attrs={"spanrl.rollout_id": "r1", "spanrl.reward": 1.0}),
        span("acme call", tid, new_span_id(), parent=root, start=10 ** 18 * 2, attrs={
            "acme.prompt": json.dumps([{"role": "user", "content": "hi"}]), "acme.answer": "hello"})])])
    parses: list[str] = []
    real = tomllib.loads

    def counting(text: str, **kw):
        if marker in text:
            parses.append(text)
        return real(text, **kw)

    monkeypatch.setattr(tomllib, "loads", counting)
    monkeypatch.setattr(tomllib._parser, "loads", counting)
    monkeypatch.setattr(spanrl.config, "_CACHE", {})
    run = CliRunner().invoke(cli, ["ingest", "--data", str(tmp_path)])
    assert run.exit_code == 0, run.output
    assert [json.loads(r["response_message"]) for r in read_snapshot(tmp_path)[0].to_pylist()] == [
        {"role": "assistant", "content": "hello"}]  # the mapping was read and used
    assert len(parses) == 1


def test_help_shows_the_fields_own_defaults() -> None:
    out = CliRunner().invoke(cli, ["transitions", "build", "--help"], terminal_width=400).output
    assert f"[default: {default_of(BuildConfig, 'credit')}]" in out and "[default: identical]" in out
    assert f"[default: {default_of(BuildConfig, 'advantage')}]" in out
    settle = out.split("--settle")[1].split("[default: ")[1].split("]")[0]
    assert parse_duration(settle) == default_of(BuildConfig, "settle_s")  # "10m" is the field's 600 s
    train = CliRunner().invoke(cli, ["train", "--help"], terminal_width=400).output
    assert f"[default: {default_of(TrainConfig, 'is_cap')}]" in train


def test_flags_reach_the_fields(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Spellings that differ from the field name: --settle (a duration), --reward-key (repeatable),
    --no-hierarchy-repair, --config; every flag passes through resolve."""
    seen = {}
    monkeypatch.setattr("spanrl.transitions.build.build_transitions", lambda cfg: seen.setdefault("cfg", cfg))
    monkeypatch.setattr("spanrl.transitions.build.print_summary", lambda result: None)
    (tmp_path / "lake").mkdir()
    (tmp_path / "my.toml").write_text("[ingest]\ngamma = 0.5\n")
    run = CliRunner().invoke(cli, ["transitions", "build", "--data", str(tmp_path), "--settle", "2m", "--reward-key",
                                   "a", "--reward-key", "b,c", "--no-hierarchy-repair", "--config",
                                   str(tmp_path / "my.toml"), "--credit", "last", "--rebuild"])
    assert run.exit_code == 0, run.output
    cfg = seen["cfg"]
    assert (cfg.settle_s, cfg.reward_keys, cfg.hierarchy_repair, cfg.gamma, cfg.credit, cfg.rebuild) == \
        (120.0, ["a", "b", "c"], False, 0.5, "last", True)
    run = CliRunner().invoke(cli, ["transitions", "build", "--data", str(tmp_path), "--settle", "soon"])
    assert run.exit_code == 2 and "not a duration" in run.output


def test_the_composed_config_records_the_same_manifest_keys(tmp_path: Path) -> None:
    assert IngestConfig().to_dict() == MANIFEST_CONFIG
    cfg = make_ingest_config(data=tmp_path, credit="last", settle_s=0, keep_days=3, keep_snapshots=2)
    assert set(cfg.to_dict()) == set(MANIFEST_CONFIG)  # housekeeping keys never reach the manifest
    assert isinstance(cfg, BuildConfig) and load_config_file(None).get("ingest") is None


def test_ingest_flags_parse_to_their_values() -> None:
    """Parsed, not run: a --no-x flag of a default-off knob turns it on; of a default-on one, off."""
    from spanrl.cli import ingest

    given = ingest.make_context("ingest", ["--no-transitions", "--no-hierarchy-repair", "--keep-days", "3",
                                           "--input", "x/*.jsonl", "--settle", "1h"]).params
    assert (given["no_transitions"], given["hierarchy_repair"], given["keep_days"], given["input"],
            given["settle_s"]) == (True, False, 3, "x/*.jsonl", 3600.0)
    bare = ingest.make_context("ingest", []).params
    assert all(v in (None, ()) for k, v in bare.items() if k != "data")  # not given: file and defaults decide


def test_checking_a_memory_limit_leaves_the_bookkeeping_database_as_it_was() -> None:
    """check_memory_limit asks the process's scratch DuckDB (the one that writes the lake manifest): a
    small --memory-limit for the run must not become that database's limit."""
    from spanrl.ingest.config import check_memory_limit
    from spanrl.sqlfiles import scratch

    def limit() -> str:
        return scratch().execute("SELECT current_setting('memory_limit')").fetchall()[0][0]

    before = limit()
    check_memory_limit("16MB")
    with pytest.raises(InputError):
        check_memory_limit("lots")
    assert limit() == before and before != "16.0 MiB"
