"""``check_records`` passes rows no check can fail from the accelerator's summary (``scan_rows``) without
looking at each row; it must give the same scan, or the same error, as the row-by-row checks.

Rows of every kind the Produce checks look at (null keys, timestamps of -1, near and past the bounds,
at the ends of 64 bits), under every setting that decides (compacted, CreateTime or LogAppendTime,
bounds, a producer's LogAppendTime claim, legacy messages' own claims), with the accelerator and
without.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from broker.log_validator import ValidationConfig
from broker.record_checks import RecordChecks, ValidationError, check_records
from protocol.primitives import INT64_MAX, INT64_MIN
from tests.protocol.records.helpers import python_only

NOW = 1_700_000_000_000
STAMPS = st.one_of(st.just(-1), st.integers(NOW - 5000, NOW + 5000), st.sampled_from([INT64_MIN, INT64_MAX, 0, -2]))
BOUNDS = st.sampled_from([INT64_MAX, 1000, 0])


def outcome(rows, checks, claims):
    try:
        return "ok", check_records(rows, checks, claims)
    except ValidationError as exc:
        return exc.error_code, str(exc), exc.record_errors


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), STAMPS, st.booleans(), st.booleans()), max_size=6),
    st.booleans(), st.booleans(), BOUNDS, BOUNDS, st.booleans(), st.booleans(),
)  # fmt: skip
def test_the_summary_answers_as_each_row_does(fields, compacted, lat, before, after, producer_lat, legacy):
    rows = [(i if in_order else i + off, ts, None if null_key else b"k", b"v", (), 0)
            for i, (off, ts, null_key, in_order) in enumerate(fields)]  # fmt: skip
    config = ValidationConfig(compacted=compacted, log_append_time=lat, timestamp_before_max_ms=before,
                              timestamp_after_max_ms=after)  # fmt: skip
    checks = RecordChecks.for_config(config, NOW, "t-0", producer_lat and not legacy)
    claims = [f[0] == 3 and producer_lat for f in fields] if legacy else None
    with_summary = outcome(rows, checks, claims)
    with python_only():
        assert outcome(rows, checks, claims) == with_summary


def test_rows_that_cannot_fail_pass_without_a_look_at_each(monkeypatch):
    import broker.record_checks as module

    def refuse(*_a, **_k):
        raise AssertionError("a row was looked at")

    monkeypatch.setattr(module, "_record_error", refuse)
    rows = [(i, NOW + i, b"k", b"v", (), 0) for i in range(50)]
    checks = RecordChecks.for_config(ValidationConfig(compacted=True, timestamp_before_max_ms=1000), NOW)
    scan = check_records(rows, checks, [False] * 50)
    assert (scan.min_timestamp, scan.max_timestamp, scan.sequential, scan.flagged) == (NOW, NOW + 49, True, [])
