"""Docs cannot drift: every command has help text and appears in the README (sqlite-utils habit)."""

from __future__ import annotations

from pathlib import Path

from spanrl.cli import cli

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def _commands(group, prefix=""):
    """Every command and subcommand, through click's own listing: the root group loads its commands
    lazily, so ``group.commands`` alone would see only those some other test happened to import."""
    import click

    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        full = f"{prefix}{name}"
        yield full, command
        if isinstance(command, click.Group):
            yield from _commands(command, full + " ")


def test_every_command_has_help_and_is_in_readme() -> None:
    names = []
    for name, command in _commands(cli):
        names.append(name)
        assert command.help, f"spanrl {name} has no help text"
        assert f"spanrl {name}" in README, f"`spanrl {name}` is not documented in README.md"
    assert {"collector", "ingest", "sql", "train", "rollout", "ui", "export", "lake compact"} <= set(names), names


def test_readme_starts_with_the_two_commands() -> None:
    head = README[:400]
    assert "make demo" in head and "make test" in head
