"""``bench/bench_broker.py --rows``: only the rows named by record size and acks are run."""

from __future__ import annotations

import argparse
import statistics

import pytest

from bench.bench_broker import _row, _row_filter, select_rows

CASES = [(100, 200_000, "1"), (100, 200_000, "all"), (1024, 50_000, "1"), (1024, 50_000, "all"),
         (100, 1_000_000, "1")]  # fmt: skip


def test_rows_select_by_size_and_acks_with_every_record_count():
    assert select_rows(CASES, _row_filter("100:1, 1024:all")) == [CASES[0], CASES[3], CASES[4]]


def test_no_filter_keeps_every_row():
    assert select_rows(CASES, None) == CASES


@pytest.mark.parametrize("text", ["100", "100:2", "x:1", ",", "100:1,1024"])
def test_malformed_rows_are_refused(text):
    with pytest.raises(argparse.ArgumentTypeError):
        _row_filter(text)


def test_rows_naming_no_case_stop_the_run():
    with pytest.raises(SystemExit, match="matches none"):
        select_rows(CASES, _row_filter("512:1"))


def test_a_row_counts_the_runs_ours_was_faster():
    case = (100, 1_000, "1")
    samples = {("ours", case, "consume"): [1.0, 2.0, 1.0], ("peer", case, "consume"): [2.0, 1.0, 1.5]}
    med = {key: statistics.median(values) for key, values in samples.items()}
    fields = _row(samples, med, case, "consume").split()
    assert fields[-2:] == ["0.50-2.00", "2/3"]  # spread of the paired ratios, then runs ours was faster


def test_the_per_record_row_compares_each_brokers_loop_with_the_client_alone():
    case = (100, 1_000, "1")
    samples = {("ours", case, "produce"): [0.30, 0.32], ("peer", case, "produce"): [0.31, 0.30],
               ("ours", case, "produce loop"): [0.25, 0.27], ("peer", case, "produce loop"): [0.20, 0.20],
               ("ours", case, "cpu"): [0.1, 0.1], ("peer", case, "cpu"): [0.1, 0.1],
               ("raw", case, "produce"): [0.20, 0.22]}  # fmt: skip
    med = {key: statistics.median(values) for key, values in samples.items()}
    fields = _row(samples, med, case, "produce").split()
    assert fields[-3:] == ["0.5", "0.81", "1.05"]  # raw MB/s (100 kB in 0.21 s), floor/ours loop, floor/peer loop
