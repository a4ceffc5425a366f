"""One config system: ``spanrl.toml`` read once, and config dataclasses whose fields carry their flag.

Every knob is one dataclass field made with ``knob()``: its default, help text, choice list, flag
spelling and environment variable live there and nowhere else. ``click_options`` turns the fields
into click options (the help shows the field's default), ``resolve`` merges the sources in one
order, flag > environment > ``spanrl.toml`` > default, and ``load_config_file`` parses the file once
per process, remembering the line of every section and key so a typo is refused with
``spanrl.toml:12: unknown section [ingset]``. Each section has one owner type
(docs/architecture.md, "Configuration"); this root module knows the section names only, so it
imports no stage.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import tomllib
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

import click

from spanrl.errors import InputError
from spanrl.options import DEFAULT_DATA

# The sections spanrl.toml may hold, and the type that owns each (they check their own keys):
# [ingest] spanrl.transitions.config.IngestConfig (stage 1's LakeConfig + stage 2's BuildConfig),
# [air] spanrl.transitions.air, [[conventions]] spanrl.ingest.mapped, [train] spanrl.trainer.config.TrainConfig.
# [rollout] spanrl.rollout.config.RolloutConfig, [tasks] ...TasksConfig, [eval] spanrl.evaluate.config.EvalConfig,
# [judge] spanrl.judge.config.JudgeConfig, [prompts] spanrl.prompts.config.OptimizeConfig (prompts optimize).
# [serve] spanrl.serve.config.ServeConfig, [gateway] spanrl.gateway.config.GatewayConfig,
# [collector] spanrl.collector.config.CollectorConfig, [ui] spanrl.ui.config.UiConfig, [demo] spanrl.demo.config.DemoConfig.
# [sql] spanrl.query.config.SqlConfig, [lake] spanrl.ingest.lake_config.LakeCommandConfig (spanrl lake compact|gc).
SECTIONS = ("air", "collector", "conventions", "demo", "eval", "gateway", "ingest", "judge", "lake", "prompts", "rollout",
            "serve", "sql", "tasks", "train", "ui")
CONFIG_NAME = "spanrl.toml"


def find_config_file(data: Path, explicit: Path | None) -> Path | None:
    """``--config`` when given, else ``<data>/spanrl.toml``, else ``./spanrl.toml`` when they exist."""
    if explicit is not None:
        return Path(explicit)
    for candidate in (Path(data) / CONFIG_NAME, Path(CONFIG_NAME)):
        if candidate.is_file():
            return candidate
    return None


@dataclass(frozen=True)
class ConfigFile:
    """One parsed ``spanrl.toml`` (or none: every section empty). Treat ``tables`` as read-only: the
    object is shared by every reader of the same file in this process."""

    path: Path | None
    tables: Mapping[str, Any]
    lines: Mapping[tuple[Any, ...], int]  # ("ingest",) -> its header's line; ("ingest", "credit") -> the key's

    def get(self, section: str) -> Any:
        """The section's raw value (a table, or a list for ``[[conventions]]``), None when absent."""
        return self.tables.get(section)

    def where(self, *keys: Any) -> str:
        """``path:line`` of a section or key (the nearest enclosing one found), for messages."""
        for n in range(len(keys), 0, -1):
            if keys[:n] in self.lines:
                return f"{self.path}:{self.lines[keys[:n]]}"
        return str(self.path if self.path is not None else CONFIG_NAME)

    def table(self, section: str, known: Iterable[str]) -> dict[str, Any]:
        """The ``[section]`` table, every key checked against ``known`` (the owner's fields)."""
        value = self.tables.get(section, {})
        if not isinstance(value, dict):
            raise InputError(f"{self.where(section)}: write [{section}] as a table of keys")
        known = sorted(known)
        for key in value:
            if key not in known:
                raise InputError(f"{self.where(section, key)}: unknown key {key!r} in [{section}]{_close(key, known)}; "
                                 f"known keys: {', '.join(known)}")
        return value


EMPTY = ConfigFile(None, {}, {})
_CACHE: dict[Path, tuple[bytes, ConfigFile]] = {}


def load_config_file(path: Path | None) -> ConfigFile:
    """The parsed ``spanrl.toml`` at ``path`` (None: no file, every section empty), its sections
    checked. Parsed once per process: later calls re-read the bytes (cheap) and reuse the parse while
    they are unchanged, so a build's stages (ingest, AIR rules, conventions) share one object."""
    if path is None:
        return EMPTY
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: config file not found; pass an existing --config or leave it out") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder, not a config file; pass --config FILE") from None
    key = Path(path).resolve()
    cached = _CACHE.get(key)
    if cached is not None and cached[0] == raw:
        return cached[1]
    parsed = _parse_file(Path(path), raw)
    _CACHE[key] = (raw, parsed)
    return parsed


def _parse_file(path: Path, raw: bytes) -> ConfigFile:
    """Parse and check the section names (the one place spanrl.toml is parsed; tests count the calls)."""
    text = raw.decode("utf-8", errors="replace")
    tables = parse_toml(text, str(path))
    parsed = ConfigFile(path, tables, _key_lines(text))
    for name in tables:
        if name not in SECTIONS:
            raise InputError(f"{parsed.where(name)}: unknown section [{name}]{_close(name, SECTIONS)}; "
                             f"known sections: {', '.join(SECTIONS)}")
    return parsed


def parse_toml(text: str, where: str) -> dict[str, Any]:
    """TOML text -> dict; a syntax error is an InputError naming ``where`` (also for packaged defaults)."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{where}: not valid TOML ({exc}); fix the file and run again") from None


_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\[\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"""^\s*("[^"]*"|'[^']*'|[A-Za-z0-9_-]+)\s*[.=]""")


def _key_lines(text: str) -> dict[tuple[Any, ...], int]:
    """Line numbers of section headers and keys, for messages only (tomllib keeps none): table
    ``("a", "b")``, array-of-tables entry ``("a", i)``, key ``(*table, key)``. Lines inside multi-line
    strings are skipped; anything else unusual merely leaves a key without a line."""
    lines: dict[tuple[Any, ...], int] = {}
    counts: dict[tuple[str, ...], int] = {}
    prefix: tuple[Any, ...] = ()
    in_string = False
    for number, line in enumerate(text.splitlines(), start=1):
        quotes = line.count('"""') + line.count("'''")
        if in_string:
            in_string = quotes % 2 == 0
            continue
        header = _HEADER.match(line)
        if header:
            path = tuple(part.strip().strip("\"'") for part in header.group(2).split("."))
            for n in range(1, len(path) + 1):
                lines.setdefault(path[:n], number)
            prefix = path
            if header.group(1) == "[[":
                index = counts[path] = counts.get(path, -1) + 1
                prefix = (*path, index)
                lines[prefix] = number
        else:
            key = _KEY.match(line)
            if key:
                lines.setdefault((*prefix, key.group(1).strip("\"'")), number)
        in_string = quotes % 2 == 1
    return lines


def _close(name: str, known: Sequence[str]) -> str:
    match = difflib.get_close_matches(name, known, n=1)
    return f" (did you mean {match[0]!r}?)" if match else ""


# ---- knobs: one field, one home for default, help, choices and flag -----------------------------


def knob(default: Any = MISSING, help: str = "", *, flag: str | None = None,
         choices: Sequence[str] | Callable[[], Sequence[str]] | None = None,
         parse: Callable[[str], Any] | None = None, env: str | None = None, multiple: bool = False,
         metavar: str | None = None, show: str | bool | None = None, click_type: Any = None,
         required: bool = False, hidden: bool = False, short: str | None = None) -> Any:
    """A config field. ``flag``: its spelling when not ``--field-name`` (``--no-x`` turns a default-on
    bool off; ``--x/--no-x`` gives both); ``choices``: the accepted values (or a function returning
    them, for lists discovered from files); ``parse``: turns the flag's text into the value
    (``--settle 10m`` -> 600.0); ``env``: an environment variable between the flag and the file;
    ``show``: how the help states the default (False: not at all); ``hidden``: a flag left out of the help;
    ``short``: a one-letter alias of the flag (``-f``)."""
    meta = {"help": help, "flag": flag, "choices": choices, "parse": parse, "env": env, "multiple": multiple,
            "metavar": metavar, "show": show, "click_type": click_type, "required": required, "hidden": hidden,
            "short": short}
    if isinstance(default, list | dict | set):
        return field(default_factory=lambda: type(default)(default), metadata=meta)
    return field(default=default, metadata=meta)


def choices_of(cls: type, name: str) -> tuple[str, ...]:
    """A knob's accepted values (called when needed, so a discovered list is always current)."""
    return _choices(cls.__dataclass_fields__[name])


def default_of(cls: type, name: str) -> Any:
    """A knob's default, for code that needs it outside the config (e.g. the loss functions)."""
    return _default(cls.__dataclass_fields__[name])


def _choices(f: dataclasses.Field) -> tuple[str, ...]:
    choices = f.metadata.get("choices")
    return tuple(choices() if callable(choices) else choices or ())


def _default(f: dataclasses.Field) -> Any:
    """The field's default; None for a field that has none (a required one)."""
    if f.default is not MISSING:
        return f.default
    return f.default_factory() if f.default_factory is not MISSING else None


def flag_of(f: dataclasses.Field) -> str:
    flag = f.metadata.get("flag") or "--" + f.name.replace("_", "-")
    return flag.split("/")[0]


def check_choices(cfg: Any) -> None:
    """Every knob with choices holds one of them (a flag, a file value or a direct construction)."""
    for f in fields(cfg):
        value = getattr(cfg, f.name)
        if f.metadata.get("choices") is not None and value is not None:
            allowed = _choices(f)
            if value not in allowed:
                raise InputError(f"{flag_of(f)} {value!r}: choose one of {', '.join(allowed)}")


def help_text(f: dataclasses.Field) -> str:
    """The field's help plus ``[default: X]`` from the field itself (never a copy)."""
    show = f.metadata.get("show")
    text = f.metadata.get("help", "")
    if show is False:
        return text
    if isinstance(show, str):
        return f"{text} [default: {show}]"
    default = _default(f)
    if default is None or isinstance(default, bool) or default == [] or isinstance(default, Path):
        return text
    return f"{text} [default: {default}]"


def click_options(cls: type, *names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: click options for the named fields of ``cls``, in that order. Every option defaults
    to None (a repeatable one to ()) so ``resolve`` can tell "not given" from a value."""
    hints = typing.get_type_hints(cls)
    by_name = {f.name: f for f in fields(cls)}

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        for name in reversed(names):
            func = _option(by_name[name], hints[name])(func)
        return func

    return decorate


def _option(f: dataclasses.Field, hint: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    m = f.metadata
    flag = m.get("flag") or "--" + f.name.replace("_", "-")
    kw: dict[str, Any] = {"help": help_text(f), "required": m.get("required", False), "hidden": m.get("hidden", False)}
    if not kw["required"]:  # click >= 8.3 takes an explicit default=None as a value: a required flag left out
        kw["default"] = None  # then reached the dataclass as a missing argument (a TypeError, exit 1)
    if m.get("metavar"):
        kw["metavar"] = m["metavar"]
    base = _base(hint)
    if base is bool:
        if "/" in flag:
            pass  # --x/--no-x: click gives True, False or (not given) None
        elif flag.startswith("--no-") and _default(f) is True:
            kw["flag_value"] = False  # --no-x turns a default-on knob off
        else:
            kw["is_flag"] = True
    elif m.get("choices") is not None:
        kw["type"] = click.Choice(_choices(f))
    elif m.get("parse") is not None:
        parse = m["parse"]
        kw["callback"] = lambda _ctx, _param, value: None if value is None else parse(value)
    elif m.get("click_type") is not None:
        kw["type"] = m["click_type"]
    elif base is Path:
        kw["type"] = click.Path(path_type=Path)
    elif base in (int, float):
        kw["type"] = base
    if m.get("multiple"):
        kw.update(multiple=True, default=())
    return click.option(*filter(None, (m.get("short"), flag)), f.name, **kw)


def _base(hint: Any) -> Any:
    """``int | None`` -> int; ``list[str]`` -> list."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and len(args) == 1:
        return _base(args[0])
    return typing.get_origin(hint) or hint


# ---- resolve: flag > environment > file > default, in one place ---------------------------------


def given(value: Any) -> bool:
    """A flag the user passed: None is "not given", and so is () (a repeatable flag not given)."""
    return value is not None and value != ()


def resolve(cls: type, flags: Mapping[str, Any], section: str | None,
            env: Mapping[str, str] | None = None) -> Any:
    """Build ``cls`` from flags (None = not given), the environment, the ``[section]`` table of the
    config file, then the field defaults: the one place that order is written. ``data`` and
    ``config_file`` in ``flags`` find the file (``--data`` > ``$SPANRL_DATA`` > ./spanrl-data; then
    ``--config`` > DATA/spanrl.toml > ./spanrl.toml); a value from the file that is not one of a knob's
    choices is refused with its line."""
    env = os.environ if env is None else env
    data = Path(flags.get("data") or env.get("SPANRL_DATA") or DEFAULT_DATA)
    path = find_config_file(data, flags.get("config_file"))
    file = load_config_file(path)
    names = {f.name: f for f in fields(cls)}
    table = file.table(section, names) if section else {}
    for name in table:  # a key the command line always overrides would be ignored in silence: refused
        if names[name].metadata.get("required") or name in ("data", "config_file"):
            where = "--data or $SPANRL_DATA" if name == "data" else "--config" if name == "config_file" \
                else flag_of(names[name])
            raise InputError(f"{file.where(section, name)}: {name} in [{section}] is not read from the file "
                             f"(the command line's {where} sets it); remove it")
    values: dict[str, Any] = {}
    for name, f in names.items():
        var = f.metadata.get("env")
        if name in flags and given(flags[name]):
            values[name] = flags[name]
        elif var and env.get(var):
            values[name] = _parsed(f, env[var], f"${var}")
        elif name in table:
            values[name] = _parsed(f, table[name], file.where(section, name))
            allowed = _choices(f) if f.metadata.get("choices") is not None else None
            if allowed is not None and table[name] not in allowed:
                raise InputError(f"{file.where(section, name)}: {name} = {table[name]!r} in [{section}]: "
                                 f"choose one of {', '.join(allowed)}")
    if "data" in names:
        values.setdefault("data", data)
    if "config_file" in names:
        values["config_file"] = path
    return cls(**values)


def _parsed(f: dataclasses.Field, value: Any, where: str) -> Any:
    """Text from the environment or the file goes through the knob's ``parse``, as the flag's does
    (``timeout_s = "2m"``); a number is taken as it is (``timeout_s = 120``)."""
    parse = f.metadata.get("parse")
    if parse is None or not isinstance(value, str):
        return value
    try:
        return parse(value)
    except click.BadParameter as exc:
        raise InputError(f"{where}: {f.name} = {value!r}: {exc.message}") from None
