"""The two kinds of failure every stage distinguishes (docs/architecture.md, CLI contract: exit 2 = bad input, 1 = internal).

Stages raise ``InputError`` (or a subclass) when the user can fix the problem: a bad flag, a
malformed file, a snapshot of another schema version. The message names the file, the line when
there is one, and what to do. The CLI translates it once into exit code 2.
"""

from __future__ import annotations

import click


class InputError(Exception):
    """Bad usage or bad input: the message says what was wrong and what to do."""


class BadInput(click.ClickException):
    """Click-side form of InputError: printed as ``Error: ...`` with exit code 2."""

    exit_code = 2
