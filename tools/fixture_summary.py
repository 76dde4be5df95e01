"""Print a Markdown summary of ``tests/fixtures/frames/manifest.json``.

How it works: the manifest is grouped by (client, settings); for each group it
lists every (api, version) with the directions captured, marks requests that
no peer answered with ``!`` and frames kafka-python cannot decode with ``?``,
and says which peers answered.  The output is pasted into
``tests/fixtures/README.md`` after a re-capture::

    .venv/bin/python tools/fixture_summary.py tests/fixtures/frames/manifest.json
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

from kafka_api_names import api_name


def _describe(entries: list[dict]) -> dict[tuple[str, int], dict[str, str]]:
    combos: dict[tuple[str, int], dict[str, str]] = defaultdict(dict)
    for entry in entries:
        key = (api_name(entry["api_key"]), entry["api_version"])
        direction = "request" if "sent_to" in entry else "response"
        marks = combos[key].get(direction, "")
        if direction == "request" and not entry["answered_by"]:
            marks += "!"
        if not entry["kafka_python_decode"].startswith("ok") and "unknown" not in entry["kafka_python_decode"]:
            marks += "?"
        peers = entry.get("answered_by") if direction == "request" else [entry["peer"]]
        short = {p.split()[0] for p in peers}
        combos[key][direction] = "".join(sorted(set(marks)))
        combos[key].setdefault("peers", "")
        combos[key]["peers"] = ",".join(sorted(set(combos[key]["peers"].split(",")) - {""} | short))
    return combos


def summary(manifest: dict[str, dict]) -> str:
    """The Markdown text: one section per (client, settings)."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for entry in manifest.values():
        groups[(entry["client"], entry["settings"])].append(entry)
    lines = []
    for (client, settings), entries in sorted(groups.items()):
        lines.append(f"\n**{client}**, `{settings}`\n")
        lines.append("| api | v | request | response | answered by |")
        lines.append("|---|---|---|---|---|")
        for (api, version), combo in sorted(_describe(entries).items()):
            request = "yes" + combo["request"] if "request" in combo else "-"
            response = "yes" + combo["response"] if "response" in combo else "-"
            lines.append(f"| {api} | {version} | {request} | {response} | {combo['peers'] or 'none'} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/frames/manifest.json")
    print(summary(json.loads(path.read_text())), end="")
