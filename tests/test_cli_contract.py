"""The CLI contract cannot drift: every long flag of every ``spanrl`` command and subcommand is named
in docs/architecture.md's "The CLI contract" code block, and the block names no flag a command lacks.

An entry of the block starts at a line ``spanrl <command> ...``; its indented lines continue it. A
command may have several entries (``spanrl adapters``, ``spanrl prompts``): its flags, and those of its
subcommands, are checked against all of them together. Hidden options and ``--help`` are left out.
"""

from __future__ import annotations

import re
from pathlib import Path

import click

from spanrl.cli import cli

ARCHITECTURE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def contract_block(text: str) -> str:
    """The first code block of the section "The CLI contract"."""
    section = text.split("## The CLI contract", 1)[1].split("\n## ", 1)[0]
    return section.split("```", 2)[1]


def documented_flags(block: str) -> dict[str, set[str]]:
    """command -> every ``--flag`` its entries in the block name."""
    out: dict[str, set[str]] = {}
    command = None
    for line in block.splitlines():
        if line.startswith("spanrl "):
            command = line.split()[1]
        elif not line.strip():
            command = None
            continue
        assert command is not None, f"a line outside any `spanrl <command>` entry: {line!r}"
        out.setdefault(command, set()).update(FLAG.findall(line))
    return out


def command_flags(group: click.Group = cli, prefix: str = "") -> dict[str, set[str]]:
    """``"lake compact"`` -> its long option names (both spellings of ``--x/--no-x``), through click's own
    listing (the root group loads its commands lazily)."""
    ctx = click.Context(group)
    out: dict[str, set[str]] = {}
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        full = f"{prefix}{name}"
        out[full] = {opt for param in command.params if isinstance(param, click.Option) and not param.hidden
                     for opt in (*param.opts, *param.secondary_opts) if opt.startswith("--") and opt != "--help"}
        if isinstance(command, click.Group):
            out.update(command_flags(command, full + " "))
    return out


def test_every_flag_of_every_command_is_in_the_contract() -> None:
    documented = documented_flags(contract_block(ARCHITECTURE.read_text()))
    missing = [f"spanrl {name} {flag}" for name, flags in command_flags().items()
               for flag in sorted(flags - documented.get(name.split()[0], set()))]
    assert not missing, ("flags missing from docs/architecture.md, \"The CLI contract\" (add them to the "
                         "command's entry):\n  " + "\n  ".join(missing))


def test_the_contract_names_no_flag_a_command_lacks() -> None:
    actual: dict[str, set[str]] = {}
    for name, flags in command_flags().items():
        actual.setdefault(name.split()[0], set()).update(flags)
    documented = documented_flags(contract_block(ARCHITECTURE.read_text()))
    unknown = [f"spanrl {name}" for name in documented if name not in actual]
    unknown += [f"spanrl {name} {flag}" for name, flags in documented.items() if name in actual
                for flag in sorted(flags - actual[name])]
    assert not unknown, "docs/architecture.md, \"The CLI contract\", names what no command has:\n  " + "\n  ".join(unknown)


def test_the_check_reads_the_block_as_written() -> None:
    block = "spanrl serve     --model PATH [--port 8000]\n                 [--agent-adapter [MODEL=]AGENT]... -- CMD\n"
    assert documented_flags(block) == {"serve": {"--model", "--port", "--agent-adapter"}}
