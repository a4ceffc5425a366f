"""The architecture, checked: one stage per folder, data flowing one way, small modules, no cycles.

docs/architecture.md describes the stages; this file keeps the tree honest about it. A new code
folder must be added to ``MAY_IMPORT`` (which earlier stages it reads through their small APIs).
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# folder -> the stages it may import (besides the root package's shared modules). Data flows
# collector -> span files -> ingest -> lake -> transitions -> snapshots -> trainer -> adapters -> serve;
# query answers SQL over lake + stage 2; demo drives every stage as processes and reads their files.
MAY_IMPORT: dict[str, set[str]] = {
    "collector": set(),
    "ingest": set(),
    "transitions": {"ingest"},
    "query": {"ingest", "transitions"},
    "trainer": {"transitions"},
    "serve": {"trainer"},
    "demo": {"collector", "ingest", "transitions", "query", "trainer", "serve", "rollout", "evaluate"},  # gate: eval's stats
    "export": {"transitions"},  # reads snapshots through the reader API only
    "rollout": {"collector", "query"},  # an embedded collector; past user inputs through the query connection
    "judge": {"transitions"},  # trajectories from snapshots; its scores leave as feedback files
    # the trajectory browser reads the lake (query), snapshots, the cycle log and the demo's report history
    # and the prompt store's versions with their evidence (prompts/store.py)
    "ui": {"ingest", "transitions", "query", "trainer", "demo", "prompts"},
    "gateway": {"collector", "serve", "prompts"},  # an embedded collector; serve's span helpers and API errors;
    # --prompts: the prompt store (prompts/store.py)
    "prompts": {"rollout", "query", "evaluate"},  # scores prompts through the runner; the lake; paired statistics
    "evaluate": {"rollout", "trainer", "judge"},  # policies through the rollout runner; promotes via trainer; --judge
}
STAGES = set(MAY_IMPORT)
SHARED = {"spanrl.errors", "spanrl.options", "spanrl.config", "spanrl.sqlfiles", "spanrl.publish", "spanrl.layout", "spanrl"}
MAX_FOLDER_SHARE = 0.35
MAX_MODULE_LINES = 400


def _modules() -> dict[str, Path]:
    """Every module of the package, by dotted name (spanrl.<folder>.<file>)."""
    out = {}
    for path in (ROOT / "spanrl").glob("*.py"):
        out["spanrl" if path.stem == "__init__" else f"spanrl.{path.stem}"] = path
    for folder in STAGES:
        for path in (ROOT / folder).glob("*.py"):
            out[f"spanrl.{folder}" if path.stem == "__init__" else f"spanrl.{folder}.{path.stem}"] = path
    return out


def _imports(path: Path) -> set[str]:
    """Every spanrl module a file imports, at the top or inside a function (a lazy import is still an edge)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return {n for n in names if n == "spanrl" or n.startswith("spanrl.")}


def test_every_code_folder_is_a_known_stage() -> None:
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    folders = {v for k, v in packages.items() if k != "spanrl"}
    assert folders == STAGES, f"add new stage folders to MAY_IMPORT (and docs/architecture.md): {folders ^ STAGES}"


def test_stages_import_one_way() -> None:
    modules = _modules()
    bad = []
    for name, path in modules.items():
        parts = name.split(".")
        own = parts[1] if len(parts) > 1 and parts[1] in STAGES else None
        for imported in _imports(path):
            target = imported.split(".")[1] if imported.count(".") >= 1 else None
            if target not in STAGES or target == own:
                continue
            if own is None:
                if name != "spanrl.cli":  # the root CLI registers every stage's commands; nothing else may
                    bad.append(f"{path.relative_to(ROOT)} (shared) imports stage {imported}")
            elif target not in MAY_IMPORT[own]:
                bad.append(f"{path.relative_to(ROOT)} imports {imported}: {own} may import only {sorted(MAY_IMPORT[own])}")
    assert not bad, "\n".join(sorted(bad))


def test_no_import_cycles() -> None:
    modules = _modules()
    graph = {name: {m for m in _imports(path) if m in modules and m != name} for name, path in modules.items()}
    # a package's __init__ re-exporting its modules is not a cycle with them
    graph = {n: {m for m in deps if not (n.startswith(m + ".") and m.count(".") == 1)} for n, deps in graph.items()}
    cycles, state = [], {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = "open"
        for dep in sorted(graph[node]):
            if state.get(dep) == "open":
                cycles.append(" -> ".join(stack[stack.index(dep):] + [dep]))
            elif dep not in state:
                visit(dep, [*stack, dep])
        state[node] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_folder_and_module_sizes() -> None:
    lines = {folder: {p: len(p.read_text().splitlines()) for p in (ROOT / folder).glob("*.py")}
             for folder in [*STAGES, "spanrl"]}
    total = sum(sum(f.values()) for f in lines.values())
    big_folders = {f: round(sum(v.values()) / total, 2) for f, v in lines.items()
                   if sum(v.values()) > MAX_FOLDER_SHARE * total}
    assert not big_folders, f"folders above {MAX_FOLDER_SHARE:.0%} of the code: {big_folders}: split by job"
    big = {str(p.relative_to(ROOT)): n for f in lines.values() for p, n in f.items() if n > MAX_MODULE_LINES}
    assert not big, f"modules above {MAX_MODULE_LINES} lines: {big}"


def test_sql_folders_are_listed_as_package_data() -> None:
    packages = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {"spanrl." + ".".join(p.relative_to(ROOT).parts)
               for stage in STAGES for p in (ROOT / stage).rglob("*") if p.is_dir() and any(p.glob("*.sql"))}
    assert folders <= packages, f"list these SQL folders in pyproject.toml packages: {sorted(folders - packages)}"
    data = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"])
    assert folders <= data, f"list these SQL folders in pyproject.toml package-data (a wheel leaves them out): {sorted(folders - data)}"


def test_stage_packages_installed_under_spanrl() -> None:
    import importlib

    for folder in STAGES:
        mod = importlib.import_module(f"spanrl.{folder}")
        assert Path(mod.__file__).parent == ROOT / folder


# Stage 1's API for the stages after it (ingest/lake.py), and its config types (ingest/config.py).
STAGE1_API = {"spanrl.ingest.lake", "spanrl.ingest.config"}


def test_later_stages_use_the_stage1_api() -> None:
    """Outside ingest/ (and the root CLI, which wires stage 1 itself) a module imports from stage 1
    only its API module, so ingest may reorganise views, locks and housekeeping without its readers."""
    bad = []
    for name, path in _modules().items():
        if name.startswith("spanrl.ingest") or name == "spanrl.cli":
            continue
        for imported in _imports(path):
            if imported.startswith("spanrl.ingest.") and ".".join(imported.split(".")[:3]) not in STAGE1_API:
                bad.append(f"{path.relative_to(ROOT)} imports {imported}: import it from spanrl.ingest.lake "
                           "(add it there if it is missing)")
    assert not bad, "\n".join(sorted(bad))


def test_one_module_reads_spanrl_toml() -> None:
    """docs/architecture.md, Configuration: spanrl.config parses the file; every other module asks it."""
    readers = sorted(str(p.relative_to(ROOT)) for p in _modules().values()
                     if "tomllib" in {a.name for node in ast.walk(ast.parse(p.read_text()))
                                      if isinstance(node, (ast.Import, ast.ImportFrom))
                                      for a in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])})
    assert readers == ["spanrl/config.py"], f"only spanrl/config.py may parse TOML: {readers}"
