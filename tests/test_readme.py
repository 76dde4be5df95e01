"""The README keeps its promises: two set-up commands first, tables generated from the code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_readme_starts_with_the_two_commands():
    lines = (ROOT / "README.md").read_text().splitlines()
    block = lines[lines.index("```sh") + 1 : lines.index("```")]
    commands = [line.split("#")[0].strip() for line in block]
    assert commands == ["./scripts/serve", "./scripts/test"]
    assert "scripts/test" in (ROOT / ".ci" / "run").read_text()


def test_readme_tables_match_the_registry_and_config_model():
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_docs.py"), "--check"], capture_output=True,
                            text=True, timeout=60)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
