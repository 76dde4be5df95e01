"""Regenerate the README's generated tables from the code: ``python tools/gen_docs.py [--check]``.

The supported-API table comes from the broker's handler registry (the same
registry ApiVersions answers from), and the topic-config table from the
storage config model, so the README cannot drift from what the broker does.
The tables sit between ``<!-- BEGIN name -->`` / ``<!-- END name -->`` markers;
``--check`` exits 1 when the README is out of date (a test runs it).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def api_table() -> str:
    from broker.dispatch import load_handlers
    from protocol import API_BY_KEY

    rows = ["| API | key | versions | flexible from |", "|---|---|---|---|"]
    for key, h in sorted(load_handlers().items()):
        api = API_BY_KEY[key]
        flex = f"v{api.flexible}" if api.flexible is not None else "never"
        rows.append(f"| {api.name} | {key} | {h.min_version}–{h.max_version} | {flex} |")
    return "\n".join(rows)


def config_table() -> str:
    from storage.config import TOPIC_CONFIGS

    rows = ["| topic config | broker default key | default | meaning |", "|---|---|---|---|"]
    for spec in TOPIC_CONFIGS:
        rows.append(f"| `{spec.name}` | `{spec.broker_key or ''}` | `{spec.default_text}` | {spec.doc} |")
    return "\n".join(rows)


def render(text: str) -> str:
    for name, fn in (("api-table", api_table), ("config-table", config_table)):
        pattern = re.compile(rf"(<!-- BEGIN {name} -->\n)(?:.*?\n)?(<!-- END {name} -->)", re.S)
        text = pattern.sub(lambda m, fn=fn: m.group(1) + fn() + "\n" + m.group(2), text)
    return text


def main(argv: list[str]) -> int:
    readme = ROOT / "README.md"
    current = readme.read_text()
    wanted = render(current)
    if "--check" in argv:
        if wanted != current:
            print("README.md tables are out of date: run python tools/gen_docs.py")
            return 1
        return 0
    readme.write_text(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
