"""Durability: SIGKILL the writer (embedded store) or the gateway mid-ingest, reopen, check.

Each trial runs real child processes (``python tools/faults/chaos_harness.py writer``) that acknowledge a
crash on a file only after its save returned.  After the kill: every acknowledged crash (and every
acknowledged processed crash) reads back exactly with its dumps, no crash row lacks its queue
pointer, ``verify-indexes --repair`` leaves 0 MISSING / 0 ORPHAN, ``rollup`` + ``reconcile-queue``
make every counter exact, and SQLite's integrity check passes.  ``tools/faults/chaos.py`` runs the long
version.
"""

import random

from faults import chaos_harness as chaos
import pytest


def _assert_survived(result):
    assert result["killed_mid_ingest"], result  # the kill really landed while writing
    assert result["acknowledged"] > 0, result
    problems = {k: result[k] for k in ("lost", "lost_processed", "duplicates", "half_visible", "missing_before",
                                       "missing_after", "orphan_after", "drift_before", "queue_drift_before", "drift_after", "queue_drift_after",
                                       "raw_errors", "integrity")}
    assert problems == dict.fromkeys(problems, 0), result
    assert result["stored"] >= result["acknowledged"]


@pytest.mark.parametrize("trial", range(3))
def test_writer_sigkill_loses_no_acknowledged_crash(tmp_path, trial):
    # trial 1 coalesces counters in memory: the kill loses some, the rollup restores them
    flush_ms = 50 if trial == 1 else None
    result = chaos.writer_kill_trial(tmp_path / "store", seed=100 + trial, rng=random.Random(trial),
                                     flush_ms=flush_ms)
    _assert_survived(result)


@pytest.mark.parametrize("trial", range(2))
def test_gateway_sigkill_loses_no_acknowledged_crash(tmp_path, trial):
    result = chaos.gateway_kill_trial(tmp_path / "store", seed=200 + trial, rng=random.Random(trial))
    _assert_survived(result)
    # the writers saw the gateway die as a typed error, never a raw socket/Thrift exception
    assert result["typed_errors"] >= 1, result


def test_check_store_notices_a_lost_crash(tmp_path):
    """The check can fail: an acknowledged crash deleted behind the store's back counts as lost."""
    from socorro_store.backends import RowMutation
    from socorro_store.crashstore.store import open_store
    from socorro_store.schema import keys as K

    url = f"embedded://{tmp_path / 'store'}"
    with open_store(url) as store:
        store.create_tables()
    ack = tmp_path / "acks"
    assert chaos.run_writer(url, 5, 0, 4, str(ack)) == 0
    acks = chaos.read_acks(str(ack))
    victim = acks["S"][0][0]
    with open_store(url) as store:
        store.backend.mutate_rows(K.CRASH_REPORTS, [RowMutation(K.crash_row_key(victim), delete_row=True)])
    result = chaos.check_store(url, [(5, 0, 4)], acks)
    assert result["lost"] == 1 and result["stored"] == 3
