"""One owner per artefact, checked: only a file's owner module names it in code.

docs/architecture.md, "One owner per artefact", is a table of file kinds, their owner modules and the
API everybody else calls. This test reads that table (so the page and the check cannot drift) and
fails when a stage module that is not a file's owner names the file in a string of its code: such a
module opens another's file by path instead of calling its owner, and breaks the day the owner
changes its layout. The root package (``spanrl/*.py``; ``spanrl/layout.py`` answers what a stage may
not import) may name any file; docstrings and comments may too (they describe, they do not open).

``LATEST`` is also the word users pass (``--snapshot LATEST``), so for it only a path join counts
(``folder / "LATEST"``, ``Path(folder, "LATEST")``). The same goes for the data root's folders the table
names (``lake/``, ``adapters/``, ...): only the stages that own files there may join the folder's name
onto a path; the others call the owner's API, or ``spanrl.layout`` (``lake_dir(data)``, ...).
Not checked: paths relative to the data root written as one string (``"lake/spans/*/*.parquet"``).
"""

from __future__ import annotations

import ast
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from spanrl import layout

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
SECTION = "## One owner per artefact"
POINTER = "LATEST"
# the files the table must keep covering (a reformatted table that parses to nothing would pass silently)
EXPECTED = {"_files.parquet", "manifest.json", "training_state.json", "adapter_config.json", "cycles.jsonl",
            "state.json", "digests.parquet", "advantages.parquet", ".ingest.lock", "_compacted.jsonl",
            "_pruned.jsonl", ".collector.lock", "_tables", "_rejects", POINTER}


@dataclass
class Row:
    artefact: str
    owners: list[str]  # module paths relative to the repository root, e.g. ingest/scan.py
    api: list[str]  # the function/class names others call


def _ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def table() -> list[Row]:
    """The rows of the owner table in docs/architecture.md."""
    text = DOC.read_text()
    assert SECTION in text, f"{DOC}: no {SECTION!r} section; tests/test_ownership.py reads its table"
    lines = text.split(SECTION, 1)[1].split("\n## ", 1)[0].splitlines()
    rows = []
    for line in [x for x in lines if x.startswith("|")][2:]:  # past the header and its --- line
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        assert len(cells) == 3, f"{DOC}: owner table row without three cells: {line}"
        names = [m.group(1) for t in _ticked(cells[2]) if (m := re.fullmatch(r"([A-Za-z_]\w*)(\(.*\))?", t))]
        rows.append(Row(cells[0], [t for t in _ticked(cells[1]) if t.endswith(".py")], names))
    return rows


def file_names(artefact: str) -> set[str]:
    """The names a row's artefact cell stands for: each path part that names a file or a private
    folder (``lake/_files.parquet`` -> ``_files.parquet``, ``_tables/LATEST`` -> both parts); globs,
    placeholders and plain folder names (``lake/spans``) are left out, too common to check."""
    out = set()
    for token in _ticked(artefact):
        for part in token.split("/"):
            if part and not set(part) & set("<>*{}") and (part[0] in "_." or "." in part or part == POINTER):
                out.add(part)
    return out


def owners_by_name() -> dict[str, tuple[set[str], list[str]]]:
    """{file name: (its owner modules, the API to call)}, merged over rows (``cycles.jsonl`` has two)."""
    out: dict[str, tuple[set[str], list[str]]] = {}
    for row in table():
        for name in file_names(row.artefact):
            owners, api = out.setdefault(name, (set(), []))
            owners.update(row.owners)
            api.extend(a for a in row.api if a not in api)
    return out


def folder_owners() -> dict[str, set[str]]:
    """{data-root folder: the stages owning files in it}, from the artefacts' first path parts
    (``lake/_files.parquet`` owned by ``ingest/scan.py``: ``lake`` -> ``ingest``). A path in the
    table's artefact cells starts at the data root: write ``runs/<run_id>/logs/``, not ``logs/``."""
    out: dict[str, set[str]] = {}
    for row in table():
        stages = {o.split("/")[0] for o in row.owners if not o.startswith("spanrl/")}
        for token in _ticked(row.artefact):
            first = token.split("/")[0]
            if "/" in token and re.fullmatch(r"[a-z]+", first):
                out.setdefault(first, set()).update(stages)
    return out


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {id(node.body[0].value) for node in ast.walk(tree) if isinstance(node, kinds) and node.body
            and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}


def _joined(tree: ast.AST) -> set[int]:
    """The nodes joined onto a path: ``x / "LATEST"``, ``Path(x, "lake")``, ``x.joinpath("adapters")``."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            found.add(id(node.right))
        elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in (
                "Path", "joinpath", "PurePath"):
            found.update(id(a) for a in node.args)
    return found


def joined_folders(source: str, folders: set[str]) -> list[tuple[int, str]]:
    """(line, folder) for every data-root folder name ``source`` joins onto a path."""
    tree = ast.parse(source)
    joined = _joined(tree)
    return sorted({(node.lineno, node.value) for node in ast.walk(tree) if id(node) in joined
                   and isinstance(node, ast.Constant) and node.value in folders})


def mentions(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, name) for every name a string in ``source``'s code holds, as a whole path part."""
    tree = ast.parse(source)
    skip, joined = _docstrings(tree), _joined(tree)
    patterns = {n: re.compile(rf"(?<![\w.]){re.escape(n)}(?!\w)") for n in names if n != POINTER}
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in skip:
            continue
        out += [(node.lineno, n) for n, pat in patterns.items() if pat.search(node.value)]
        if POINTER in names and node.value.strip("/") == POINTER and id(node) in joined:
            out.append((node.lineno, POINTER))
    return sorted(set(out))


def stage_modules() -> list[Path]:
    """Every module of every stage folder (the root package ``spanrl/`` is exempt)."""
    package_dir = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    folders = sorted({v for k, v in package_dir.items() if k != "spanrl"})
    return [p for folder in folders for p in sorted((ROOT / folder).rglob("*.py"))]


def violations(owners: dict[str, tuple[set[str], list[str]]], modules: list[Path], root: Path = ROOT) -> list[str]:
    """One message per name a module holds that it does not own: where, what, and whom to call."""
    bad = []
    for path in modules:
        rel = path.relative_to(root).as_posix()
        for line, name in mentions(path.read_text(), set(owners)):
            owner_modules, api = owners[name]
            if rel not in owner_modules:
                call = ", ".join(api) or "its API"
                bad.append(f"{rel}:{line} names {name!r}, which only {', '.join(sorted(owner_modules))} may open: "
                           f"call {call} instead (or, where the import rules forbid that, add the read to "
                           "spanrl/layout.py)")
    return bad


def test_only_owners_name_their_files() -> None:
    bad = violations(owners_by_name(), stage_modules())
    assert not bad, ("files named outside their owner (docs/architecture.md, 'One owner per artefact'):\n"
                     + "\n".join(bad))


def folder_violations(owners: dict[str, set[str]], modules: list[Path], root: Path = ROOT) -> list[str]:
    """One message per data-root folder a module joins onto a path while its stage owns nothing there."""
    bad = []
    for path in modules:
        rel = path.relative_to(root).as_posix()
        for line, folder in joined_folders(path.read_text(), set(owners)):
            if rel.split("/")[0] not in owners[folder]:
                root_api = f"spanrl.layout.{folder}_dir(data)" if hasattr(layout, f"{folder}_dir") else "spanrl.layout"
                bad.append(f"{rel}:{line} joins the data-root folder {folder!r}, whose files belong to "
                           f"{', '.join(sorted(owners[folder]))}: call that stage's API, or {root_api} (where the "
                           "import rules forbid that stage) instead")
    return bad


def test_only_owners_join_their_folders() -> None:
    owners = folder_owners()
    assert {"lake", "otel", "transitions", "adapters", "demo"} <= set(owners), owners
    bad = folder_violations(owners, stage_modules())
    assert not bad, ("data-root folders joined outside their stages (docs/architecture.md, 'One owner per "
                     "artefact'):\n" + "\n".join(bad))


def test_the_table_covers_the_artefacts() -> None:
    missing = EXPECTED - set(owners_by_name())
    assert not missing, f"{DOC}: the owner table no longer names {sorted(missing)}; give each a row with its owner"


def test_the_table_names_real_owners_and_api() -> None:
    """Every owner module in the table exists and defines (or re-exports) the API its row lists."""
    bad = []
    for row in table():
        assert row.owners, f"{DOC}: row {row.artefact!r} names no owner module"
        defined: set[str] = set()
        for owner in row.owners:
            path = ROOT / owner
            if not path.is_file():
                bad.append(f"{row.artefact}: owner {owner} does not exist")
                continue
            for node in ast.parse(path.read_text()).body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    defined.add(node.name)
                elif isinstance(node, ast.Assign):
                    defined.update(t.id for t in node.targets if isinstance(t, ast.Name))
                elif isinstance(node, ast.ImportFrom):
                    defined.update(a.asname or a.name for a in node.names)
        bad += [f"{row.artefact}: {name} is not defined in {', '.join(row.owners)}"
                for name in row.api if name not in defined]
    assert not bad, f"{DOC}, 'One owner per artefact', disagrees with the code:\n" + "\n".join(bad)


def test_the_check_catches_a_file_opened_by_path(tmp_path: Path) -> None:
    """The checker itself: a stray path join and a stray name are caught; a docstring, the CLI word
    LATEST and a longer name that merely ends like an owned one are not."""
    source = ('"""Reads lake/_files.parquet (a docstring: fine)."""\n'
              'from pathlib import Path\n'
              'def f(data):\n'
              '    ref = "LATEST"\n'
              '    a = Path(data) / "transitions" / "LATEST"\n'
              '    return Path(data, "lake", "_files.parquet.corrupt-x"), a, ref, "training_state.json"\n')
    assert mentions(source, {"_files.parquet", POINTER, "state.json"}) == [(5, POINTER), (6, "_files.parquet")]
    (tmp_path / "ui").mkdir()
    probe = tmp_path / "ui" / "probe.py"
    probe.write_text(source)
    owners = {"_files.parquet": ({"ingest/scan.py"}, ["read_file_state"])}
    assert violations(owners, [probe], tmp_path) == [
        "ui/probe.py:6 names '_files.parquet', which only ingest/scan.py may open: call read_file_state instead "
        "(or, where the import rules forbid that, add the read to spanrl/layout.py)"]
    assert violations({"_files.parquet": ({"ui/probe.py"}, [])}, [probe], tmp_path) == []
    assert joined_folders(source, {"lake", "transitions"}) == [(5, "transitions"), (6, "lake")]
    assert [m.split(" whose")[0] for m in folder_violations({"lake": {"ingest"}}, [probe], tmp_path)] == [
        "ui/probe.py:6 joins the data-root folder 'lake',"]
    assert folder_violations({"lake": {"ui"}}, [probe], tmp_path) == []
