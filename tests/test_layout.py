"""Data flows one way: trainer never imports ingest or collector; stages cross only as files."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = {
    "trainer": ("spanrl.ingest", "spanrl.collector"),
    "transitions": ("spanrl.ingest", "spanrl.collector", "spanrl.trainer"),
    "ingest": ("spanrl.trainer", "spanrl.collector"),
    "collector": ("spanrl.ingest", "spanrl.trainer", "spanrl.transitions"),
    # export reads snapshots through spanrl.transitions' reader API only
    "export": ("spanrl.ingest", "spanrl.collector", "spanrl.trainer"),
}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_stages_import_one_way() -> None:
    bad = []
    for folder, forbidden in FORBIDDEN.items():
        for path in (ROOT / folder).rglob("*.py"):
            for name in _imports(path):
                if name.startswith(forbidden):
                    bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not bad, "\n".join(bad)


def test_stage_packages_installed_under_spanrl() -> None:
    import spanrl.collector
    import spanrl.ingest
    import spanrl.trainer
    import spanrl.transitions

    for mod, folder in [(spanrl.collector, "collector"), (spanrl.ingest, "ingest"),
                        (spanrl.transitions, "transitions"), (spanrl.trainer, "trainer")]:
        assert Path(mod.__file__).parent == ROOT / folder
