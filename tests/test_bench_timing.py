"""bench/timing.py: the warm-up leaves nothing behind, whatever size it is asked for."""

from __future__ import annotations

import os

import pytest

from bench.timing import warm_pages


@pytest.mark.parametrize("nbytes", [0, 1, (1 << 20) + 1, 3 << 20])
def test_warm_pages_writes_then_deletes_its_file(tmp_path, monkeypatch, nbytes):
    written = []
    real_pwrite = os.pwrite

    def pwrite(fd: int, data: bytes, pos: int) -> int:
        written.append((pos, len(data)))
        return real_pwrite(fd, data, pos)

    monkeypatch.setattr(os, "pwrite", pwrite)
    warm_pages(tmp_path, nbytes)
    assert list(tmp_path.iterdir()) == []
    pieces = max(1, -(-nbytes // (1 << 20)))
    assert written == [(i << 20, 1 << 20) for i in range(pieces)]
