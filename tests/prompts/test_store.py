"""The prompt store and ``spanrl prompts list|show|promote|diff``: versions appear whole, LATEST moves
only when promoted, ``--if-better`` follows the recorded verdict, an unknown version names the folder."""

from __future__ import annotations

import json

from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.prompts.store import (
    add_version,
    agent_for_hash,
    latest_version,
    list_agents,
    list_versions,
    read_version,
    record_evidence,
    text_sha256,
)


def _cli(data, *args):
    return CliRunner().invoke(cli, ["prompts", *args[:1], "--data", str(data), *args[1:]])


def test_versions_latest_and_dedup(tmp_path) -> None:
    first = add_version(tmp_path, "calc", "You are a calculator.", {"method": "original",
                                                                  "original_sha256": text_sha256("orig")}, promote=True)
    staged = add_version(tmp_path, "calc", "You are a careful calculator.", {"parent": "0001", "method": "apo"})
    assert (first.version, staged.version) == ("0001", "0002")
    assert latest_version(tmp_path, "calc") == "0001" and not staged.latest  # staged: LATEST did not move
    assert add_version(tmp_path, "calc", "You are a careful calculator.", {}).version == "0002"  # same text, same version
    assert list_versions(tmp_path, "calc") == ["0001", "0002"] and list_agents(tmp_path) == ["calc"]
    meta = read_version(tmp_path, "calc", "0002").meta
    assert meta["parent"] == "0001" and meta["sha256"] == text_sha256("You are a careful calculator.") and meta["created_at"]
    assert agent_for_hash(tmp_path, text_sha256("orig")) == "calc" and agent_for_hash(tmp_path, "0" * 64) is None
    assert not list((tmp_path / "prompts" / "calc").glob(".tmp-*"))  # drafts renamed, none left


def test_model_names_with_slashes_are_agents(tmp_path) -> None:
    add_version(tmp_path, "Qwen/Qwen2.5-7B", "Be brief.", {}, promote=True)
    assert list_agents(tmp_path) == ["Qwen/Qwen2.5-7B"] and read_version(tmp_path, "Qwen/Qwen2.5-7B").text == "Be brief."


def test_cli_list_show_diff_promote(tmp_path) -> None:
    add_version(tmp_path, "calc", "Line one.\nAnswer with a number.\n", {"method": "original"}, promote=True)
    add_version(tmp_path, "calc", "Line one.\nAnswer with a number only.\n", {"parent": "0001", "method": "apo"})
    out = _cli(tmp_path, "list")
    assert out.exit_code == 0, out.output
    assert "* calc\t0001\toriginal" in out.output and "  calc\t0002\tapo\tparent 0001" in out.output
    assert _cli(tmp_path, "show", "calc").output == "Line one.\nAnswer with a number.\n\n"
    assert _cli(tmp_path, "show", "calc", "0002").output.startswith("Line one.\nAnswer with a number only.")
    assert json.loads(_cli(tmp_path, "show", "calc", "0002", "--meta").output)["parent"] == "0001"
    diff = _cli(tmp_path, "diff", "calc", "0001", "0002").output
    assert "--- calc/0001" in diff and "-Answer with a number.\n" in diff and "+Answer with a number only.\n" in diff

    refused = _cli(tmp_path, "promote", "calc", "0002", "--if-better")  # no evidence recorded: refused
    assert refused.exit_code == 2 and "none recorded" in refused.output and latest_version(tmp_path, "calc") == "0001"
    record_evidence(tmp_path, "calc", "0002", {"verdict": "no detectable difference", "validation": {
        "comparison": {"diff": 0.1, "ci": [-0.2, 0.4], "verdict": "no detectable difference"}}})
    refused = _cli(tmp_path, "promote", "calc", "0002", "--if-better")
    assert refused.exit_code == 2 and "no detectable difference (diff +0.100, interval [-0.200, +0.400])" in refused.output
    record_evidence(tmp_path, "calc", "0002", {"verdict": "better"})
    done = _cli(tmp_path, "promote", "calc", "0002", "--if-better")
    assert done.exit_code == 0 and latest_version(tmp_path, "calc") == "0002"
    assert _cli(tmp_path, "promote", "calc", "0001").exit_code == 0 and latest_version(tmp_path, "calc") == "0001"  # roll back
    assert read_version(tmp_path, "calc", "0002").text == "Line one.\nAnswer with a number only.\n"  # never rewritten


def test_turns_are_part_of_a_version_shown_and_diffed(tmp_path) -> None:
    turns = [{"role": "user", "content": "What is 2+3?"}, {"role": "assistant", "content": "5"}]
    add_version(tmp_path, "calc", "Be brief.", {"method": "original"}, promote=True)
    with_turns = add_version(tmp_path, "calc", "Be brief.", {"method": "demonstration turns"}, turns=turns)
    assert with_turns.version == "0002" and with_turns.meta["turns"] == 2 and with_turns.turns == turns
    shown = _cli(tmp_path, "show", "calc", "0002").output
    assert shown.startswith("Be brief.\n--- turns") and '{"role": "assistant", "content": "5"}' in shown
    diff = _cli(tmp_path, "diff", "calc", "0001", "0002").output
    assert '+{"role": "user", "content": "What is 2+3?"}\n' in diff and "-Be brief." not in diff
    (tmp_path / "prompts" / "calc" / "0002" / "turns.json").write_text('{"role": "user"}')  # changed by hand
    broken = _cli(tmp_path, "show", "calc", "0002")
    assert broken.exit_code == 2 and "0002/turns.json: not a list of chat messages" in broken.output


def test_unknown_agent_and_version_name_the_folder(tmp_path) -> None:
    add_version(tmp_path, "calc", "p", {}, promote=True)
    missing = _cli(tmp_path, "show", "calc", "0009")
    assert missing.exit_code == 2 and "prompts/calc/0009" in missing.output and "versions: 0001" in missing.output
    none = _cli(tmp_path, "show", "other")
    assert none.exit_code == 2 and "no LATEST prompt for agent 'other'" in none.output and "spanrl prompts optimize" in none.output
