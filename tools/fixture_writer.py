"""Choose, name and write captured frames as golden fixtures plus a manifest.

How it works:

* ``select`` drops frames whose api is unknown (a response whose request was
  never seen), drops byte-identical duplicates (first one wins), and keeps at
  most a few frames per (client, settings, api, version, direction).  A first
  pass keeps one per peer so that every peer that answered is represented; a
  second pass fills up to the cap in capture order.  Produce requests get a
  larger cap because each codec is a separate request worth keeping.
* ``write`` names the files ``<api>_<request|response>_v<N>_<nnn>.bin``, with a
  sequence number per (api, direction, version), and writes
  ``manifest.json``.  Each entry records client, settings, api key/version,
  correlation id and peer.  Request entries also list the peers the same bytes
  were sent to (``sent_to``) and the peers that answered them
  (``answered_by``; a peer missing there closed the connection or never
  replied) and name the kept response file (``response``); response entries
  name their kept request file (``request``), or null.  Every entry also
  says whether kafka-python decodes the frame exactly (``kafka_python_decode``:
  ``"ok"`` or the reason), so malformed peer answers are marked.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from capture_proxy import REQUEST, RESPONSE, CapturedFrame
from kafka_api_names import api_name
from kafka_python_oracle import check

DEFAULT_CAP = 3
CAPS = {(0, REQUEST): 8, (1, RESPONSE): 4}


def _group(frame: CapturedFrame) -> tuple:
    ctx = frame.context
    return (ctx.client, ctx.settings, frame.api_key, frame.api_version, frame.direction)


def _cap(frame: CapturedFrame) -> int:
    return CAPS.get((frame.api_key, frame.direction), DEFAULT_CAP)


def select(frames: list[CapturedFrame]) -> list[CapturedFrame]:
    """The deduplicated, capped subset of ``frames``, in capture order."""
    candidates, seen = [], set()
    for frame in frames:
        if frame.api_key is None or frame.data in seen:
            continue
        seen.add(frame.data)
        candidates.append(frame)
    kept: set[int] = set()
    per_peer: Counter = Counter()
    for frame in candidates:
        key = (*_group(frame), frame.context.peer)
        if per_peer[key] == 0:
            per_peer[key] += 1
            kept.add(frame.order)
    totals = Counter(_group(f) for f in candidates if f.order in kept)
    for frame in candidates:
        if frame.order not in kept and totals[_group(frame)] < _cap(frame):
            totals[_group(frame)] += 1
            kept.add(frame.order)
    return [f for f in candidates if f.order in kept]


def _exchange(frame: CapturedFrame) -> tuple:
    return (frame.connection, frame.correlation_id)


def file_names(frames: list[CapturedFrame]) -> dict[int, str]:
    """File name per frame order: ``<api>_<direction>_v<N>_<nnn>.bin``."""
    sequence: Counter = Counter()
    names = {}
    for frame in frames:
        stem = f"{api_name(frame.api_key)}_{frame.direction}_v{frame.api_version}"
        names[frame.order] = f"{stem}_{sequence[stem]:03d}.bin"
        sequence[stem] += 1
    return names


def _peers_by_request(frames: list[CapturedFrame]) -> dict[bytes, tuple[set, set]]:
    """For each request's bytes: the peers it was sent to, and those that answered."""
    answered = {_exchange(f) for f in frames if f.direction == RESPONSE and f.api_key is not None}
    peers: dict[bytes, tuple[set, set]] = {}
    for frame in frames:
        if frame.direction == REQUEST:
            sent_to, answered_by = peers.setdefault(frame.data, (set(), set()))
            sent_to.add(frame.context.peer)
            if _exchange(frame) in answered:
                answered_by.add(frame.context.peer)
    return peers


def manifest(kept: list[CapturedFrame], everything: list[CapturedFrame]) -> dict[str, dict]:
    """The manifest entries for ``kept``; ``everything`` tells who answered."""
    names = file_names(kept)
    peers = _peers_by_request(everything)
    kept_by_exchange = {(_exchange(f), f.direction): names[f.order] for f in kept}
    entries = {}
    for frame in kept:
        entry = {
            "client": frame.context.client,
            "settings": frame.context.settings,
            "api_key": frame.api_key,
            "api_version": frame.api_version,
            "correlation_id": frame.correlation_id,
            "peer": frame.context.peer,
        }
        entry["kafka_python_decode"] = check(frame.api_key, frame.api_version,
                                             frame.direction, frame.data)
        other = RESPONSE if frame.direction == REQUEST else REQUEST
        if frame.direction == REQUEST:
            sent_to, answered_by = peers[frame.data]
            entry["sent_to"] = sorted(sent_to)
            entry["answered_by"] = sorted(answered_by)
        entry[other] = kept_by_exchange.get((_exchange(frame), other))
        entries[names[frame.order]] = entry
    return entries


def write(frames: list[CapturedFrame], out_dir: Path) -> dict[str, dict]:
    """Replace the ``.bin`` files and manifest in ``out_dir`` by a fresh selection."""
    kept = select(frames)
    entries = manifest(kept, frames)
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*.bin"):
        old.unlink()
    names = file_names(kept)
    for frame in kept:
        (out_dir / names[frame.order]).write_bytes(frame.data)
    text = json.dumps(dict(sorted(entries.items())), indent=1, sort_keys=True)
    (out_dir / "manifest.json").write_text(text + "\n")
    return entries
