"""Model-based test of compaction: random writes, rolls, cleaning rounds and clock moves, checked by an oracle.

Writes are puts, null-value tombstones and KIP-87 flagged tombstones (with a
payload) over a few hundred keys, plus rare keyless records, in batches of
random codecs; segments are tiny. After every cleaning round the oracle
(``Model.check``) holds:

* every surviving record is exactly what was written at its offset, and
  offsets strictly increase (nothing renumbered);
* the latest write of every key is present, unless it is a tombstone, and
  then no older record of that key survives either;
* below the cleaner checkpoint no key appears twice and no keyless record
  survives.

At the end the log is settled (roll, clean, pass ``delete.retention.ms``,
clean again): a consumer reading from the log start sees exactly the latest
value of every key whose latest write is not a tombstone.
"""

from __future__ import annotations

import random

import pytest

from cleaner import CleanerConfig, LogCleaner
from protocol.records import TOMBSTONE_FLAG, Codec
from tests.cleaner.helpers import Model, compacted_log, open_manager, read_records
from tests.storage.lead_helpers import Clock


def _records(rng: random.Random, keys: int) -> list:
    out = []
    for _ in range(rng.randint(1, 6)):
        key = b"key-%d" % rng.randrange(keys)
        roll = rng.random()
        if roll < 0.15:
            out.append((key, None, 0))
        elif roll < 0.3:
            out.append((key, b"why-%d" % rng.randrange(1000), TOMBSTONE_FLAG))
        elif roll < 0.31:
            out.append((None, b"keyless", 0))
        else:
            out.append((key, b"value-%d" % rng.randrange(10**6), 0))
    return out


def _run(tmp_path, seed: int, steps: int) -> None:
    rng = random.Random(seed)
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    retention = rng.choice([0, 50, 1000])
    log_ = compacted_log(lm, segment_bytes=rng.randint(150, 3000), delete_retention_ms=retention,
                         min_cleanable_dirty_ratio=rng.choice([0.01, 0.3, 0.5]))  # fmt: skip
    cleaner = LogCleaner(lm, CleanerConfig(dedupe_buffer_size=24 * rng.choice([40, 400, 10_000])), clock=clock)
    model, keys = Model(), rng.choice([20, 300])
    codecs = [Codec.NONE, Codec.NONE, Codec.GZIP, Codec.LZ4, Codec.ZSTD]
    for _ in range(steps):
        action = rng.random()
        if action < 0.7:
            model.write(log_, _records(rng, keys), codec=rng.choice(codecs))
        elif action < 0.8:
            log_.roll()
        elif action < 0.95:
            cleaner.run_once()
            model.check(log_, cleaned_below=lm.cleaner_offsets().get(("t", 0), 0))
        else:
            clock.advance(rng.randint(1, 2 * retention + 10))
    _settle(log_, lm, cleaner, clock, model, retention)


def _settle(log_, lm, cleaner, clock, model, retention) -> None:
    # Ratio 0: any dirty byte makes the log cleanable. With 0.01 a round that ended early (its map
    # full) could leave a dirty tail under 1% of the log, rightly not cleaned, whose tombstones then
    # got their delete horizon only after the clock moved (seeds 136 and 184 of 300 did).
    lm.set_topic_overrides("t", {"min.cleanable.dirty.ratio": "0", "delete.retention.ms": str(retention)})
    log_.roll()
    while cleaner.run_once():
        model.check(log_, cleaned_below=lm.cleaner_offsets()[("t", 0)])
    clock.advance(retention + 1)
    model.write(log_, [(b"filler", b"f", 0)] * 50)
    log_.roll()
    while cleaner.run_once():
        pass
    model.check(log_, cleaned_below=log_.log_end_offset)
    assert {r.key: r.value for r in read_records(log_)} == model.settled()


@pytest.mark.parametrize("seed", [*range(12), 136, 184])
def test_random_histories_keep_the_oracle(tmp_path, seed):
    _run(tmp_path, seed, steps=400)
