"""Faults on a 3-region-server HBase cluster under production-shape ingest (issue 31, part 4).

Each test runs :func:`cluster_faults.run_fault`: collector and processor child processes (one
crash per call, through the URL naming every Thrift1 server) ingest into a fresh pre-split table
prefix while one fault strikes mid-ingest; then every acknowledged crash must read back, none be
processed twice, the counters be exact after ``rollup`` and the queue drain.

* a region server SIGKILLed (its regions reassigned, its WAL replayed), restarted after;
* a Thrift server SIGKILLed (the clients go on through the other two), restarted after;
* every region moved to another region server, and a region of ``crash_reports`` split;
* the master SIGKILLed and restarted.

Opt-in, like tests/test_hbase_cluster.py (11 JVMs, ~1-2 min a fault here):
``pytest --run-cluster tests/test_hbase_cluster_faults.py`` or ``SOCORRO_STORE_TEST_CLUSTER=1``.
``-s`` prints each fault's figures (its longest stall in acknowledgements among them); no test
asserts on time.
"""

from faults import cluster_faults
import pytest


@pytest.mark.parametrize("fault", cluster_faults.FAULTS)
def test_fault_mid_ingest_loses_nothing_processes_nothing_twice_counters_exact(hbase_cluster, tmp_path, fault):
    result = cluster_faults.run_fault(hbase_cluster, fault, tmp_path, hold_s=15, after_s=5)
    print({k: v for k, v in result.items() if not k.endswith("_examples")})
    assert result["killed_mid_ingest"], result  # every child was working when the fault struck
    assert result["recovered"], result  # ingest went on after it
    assert result["acknowledged"] > 0 and result["processed_acknowledged"] > 0, result
    assert cluster_faults.problems(result) == {}, result
    for key in ("half_visible", "missing_before"):  # repaired or not, nothing was half-written
        assert result[key] == 0, result
    # every acknowledged save was processed once: the queue handed each crash out once
    assert result["processed_acknowledged"] == result["acknowledged"], result
    assert result["stored"] >= result["acknowledged"], result


def test_thrift1_scan_over_every_thrift_server_reads_each_row_once(hbase_cluster):
    """Pages of a Thrift1 scan through the URL naming 3 Thrift servers: every row, once, in order."""
    import uuid

    from socorro_store.backends import RowMutation
    from socorro_store.backends.hbase import HBaseBackend
    from socorro_store.backends.hbase.servers import parse_servers
    from socorro_store.schema.specs import FamilySpec, TableSpec

    with HBaseBackend(servers=parse_servers(hbase_cluster.url), table_prefix="s" + uuid.uuid4().hex[:8],
                      pool_size=3) as backend:
        backend.create_table(TableSpec("t", (FamilySpec("cf"),)))
        rows = [b"r%03d" % i for i in range(40)]
        backend.mutate_rows("t", [RowMutation(r, {b"cf:a": r}) for r in rows])
        try:
            assert [row for row, _cells in backend.scan("t", page_size=5)] == rows
        finally:
            backend.drop_table("t")
