"""``lifecycle.StopSignals``: no stop signal takes its default action (death) from ``install`` on.

The end-to-end tests (``tests/e2e/test_process_surface.py``) send signals to a
serving broker; these cover the edges of the loop: a signal that comes before
the loop's receiver opens stops the broker once it serves, and one still
pending when the receiver closes (trio delivers it again then) or sent after
the loop is only logged.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import trio

from broker.lifecycle import StopSignals

ROOT = Path(__file__).resolve().parents[2]


async def test_a_signal_before_the_receiver_opened_stops_the_broker_once_it_serves():
    signals, started, stops = StopSignals(), trio.Event(), []
    signals._outside_loop(signal.SIGTERM, None)  # as the handler ``install`` sets would be called
    with signals.receiving() as receiver:
        async with trio.open_nursery() as nursery:
            with trio.CancelScope() as serving:
                nursery.start_soon(signals.watch, receiver, started, serving, lambda: stops.append(1))
                await trio.sleep(0.05)
                assert not serving.cancel_called and stops == []  # not before the start ends
                started.set()
                await trio.sleep_forever()
            assert stops == [1] and signals.first == "SIGTERM"
            nursery.cancel_scope.cancel()


def test_a_signal_pending_as_the_receiver_closes_or_after_the_loop_is_logged_not_fatal():
    script = textwrap.dedent("""
        import logging, os, signal, trio
        from broker.lifecycle import StopSignals
        logging.basicConfig(level=logging.INFO, format="%(message)s")
        signals = StopSignals()
        signals.install()
        async def main():
            with signals.receiving():
                os.kill(os.getpid(), signal.SIGTERM)  # reaches trio's receiver as it closes
        trio.run(main)
        os.kill(os.getpid(), signal.SIGHUP)
        os.kill(os.getpid(), signal.SIGINT)
        print("still running", flush=True)
    """)
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "still running" in result.stdout
    assert "Terminating process due to signal SIGTERM" in result.stderr
    assert result.stderr.count("the shutdown that SIGTERM began goes on") == 1  # the first repeat only
