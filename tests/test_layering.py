"""The package layering, enforced: protocol stands alone and is sans-IO, storage never uses trio.

Two checks: import-linter's contracts from ``pyproject.toml`` (which follow
imports through the whole graph), and a plain scan of import statements that
also forbids trio outside ``broker`` and the cleaner's service wrapper.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TRIO_ALLOWED = {"broker", "cleaner/service.py"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def _files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py")) if (ROOT / package).exists() else []


def test_protocol_imports_nothing_of_ours_and_no_io():
    for path in _files("protocol"):
        bad = _imports(path) & {"storage", "cleaner", "broker", "trio", "socket", "asyncio", "os", "time"}
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


@pytest.mark.parametrize("package", ["protocol", "storage", "cleaner"])
def test_trio_only_in_broker_and_cleaner_service(package):
    for path in _files(package):
        rel = path.relative_to(ROOT).as_posix()
        if rel in TRIO_ALLOWED:
            continue
        assert "trio" not in _imports(path), f"{rel} imports trio"


def test_import_linter_contracts():
    exe = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(exe), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
