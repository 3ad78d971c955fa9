"""Load through one gateway: collector and processor processes; exactly-once processing.

The quick version (2 collectors + 2 processors, 400 crashes) runs in the normal suite; the full
one (4 + 4, 20,000 crashes) is ``@slow`` and in ``tools/faults/chaos.py --load``.  Checks: every crash
processed exactly once, 0 errors, nothing lost, counters exact after a rollup.  Throughput,
latency and the gateway's peak RSS are printed (figures, not assertions).
"""

from faults import chaos_harness as chaos
import pytest


def _check(result, crashes):
    assert result["errors"] == [], result["errors"]
    assert result["acknowledged"] == crashes
    assert result["processed_unique"] == crashes and result["processed_twice"] == 0, result
    problems = {k: result[k] for k in ("lost", "lost_processed", "duplicates", "half_visible", "missing_after",
                                       "orphan_after", "drift_before", "queue_drift_before", "drift_after", "queue_drift_after", "integrity")}
    assert problems == dict.fromkeys(problems, 0), result
    print(f"\nload {crashes} crashes: {result['crashes_per_s']:.0f} crashes/s, save p99 "
          f"{result['save_p99_ms']:.1f} ms, gateway peak RSS {result['gateway_peak_rss_mb']:.0f} MB")


def test_quick_load_processes_each_crash_exactly_once(tmp_path):
    _check(chaos.load_run(tmp_path / "store", crashes=400, collectors=2, processors=2), 400)


@pytest.mark.slow
def test_full_load_20000_crashes(tmp_path):
    _check(chaos.load_run(tmp_path / "store", crashes=20_000, collectors=4, processors=4), 20_000)
