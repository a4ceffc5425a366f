"""Docs cannot drift: every command has help text and appears in the README (sqlite-utils habit)."""

from __future__ import annotations

from pathlib import Path

from spanrl.cli import cli

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def _commands(group, prefix=""):
    for name, command in group.commands.items():
        full = f"{prefix}{name}"
        yield full, command
        if hasattr(command, "commands"):
            yield from _commands(command, full + " ")


def test_every_command_has_help_and_is_in_readme() -> None:
    for name, command in _commands(cli):
        assert command.help, f"spanrl {name} has no help text"
        assert f"spanrl {name}" in README, f"`spanrl {name}` is not documented in README.md"


def test_readme_starts_with_the_two_commands() -> None:
    head = README[:400]
    assert "make demo" in head and "make test" in head
