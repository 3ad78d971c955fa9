"""The store on a pseudo-distributed HBase: ZooKeeper, a master, 3 region servers and 3 Thrift1
and 3 Thrift2 servers, each its own JVM (``tools/servers/local_hbase_cluster.py``; issue 31, parts 1-3).

Opt-in (11 JVMs): ``pytest --run-cluster tests/test_hbase_cluster.py`` or
``SOCORRO_STORE_TEST_CLUSTER=1``.  ``-s`` prints how long the cluster took to start.
"""

import json
import uuid

import pytest
from faults.chaos_workload import make_raw

from socorro_store import CrashStore
from socorro_store.backends.hbase import HBaseBackend, HBaseThrift2Backend
from socorro_store.backends.hbase.servers import parse_servers
from socorro_store.schema import table_admin
from socorro_store.schema.spec_loader import load_specs
from socorro_store.schema.specs import SALTS

SALTED = sorted(name for name, spec in load_specs().items() if spec.salted)


@pytest.fixture(scope="module")
def prefix():
    return "c" + uuid.uuid4().hex[:8]


@pytest.fixture(scope="module")
def created(hbase_cluster, prefix):
    """The store's tables, created through the Thrift2 servers (which pre-split salted tables)."""
    with HBaseThrift2Backend(servers=parse_servers(hbase_cluster.thrift2_url), table_prefix=prefix) as backend:
        report = table_admin.create_tables(backend)
        assert report.created and not report.mismatched and not report.not_presplit
        assert table_admin.verify_tables(backend) == {}  # split points on every salt, every attribute
    return prefix


def _thrift1(cluster, prefix, **options):
    return HBaseBackend(servers=parse_servers(cluster.url), table_prefix=prefix, **options)


def test_cluster_json_names_every_process_with_its_pid_and_ports(hbase_cluster):
    described = json.loads((hbase_cluster.directory / "cluster.json").read_text())
    roles = [(p["role"], p["index"]) for p in described["processes"]]
    assert roles == [("zookeeper", 0), ("master", 0), *[(r, i) for r in ("regionserver", "thrift", "thrift2")
                                                        for i in range(3)]]
    assert all(p["pid"] and all(p["ports"].values()) for p in described["processes"])
    assert described["url"] == hbase_cluster.url and len(parse_servers(described["url"])) == 3
    assert len(parse_servers(described["thrift2_url"])) == 3


def test_salted_tables_are_presplit_on_the_salts_and_spread_over_the_region_servers(hbase_cluster, created):
    rs_ports = {str(port) for port in hbase_cluster.ports["regionserver"]}
    with _thrift1(hbase_cluster, created) as backend:
        for table in SALTED:
            described = table_admin.describe_table(backend, table)
            assert [r["start"] for r in described["regions"]] == ["", *SALTS[1:]], table
            holders = described["region_servers"]
            assert {server.rsplit(":", 1)[1] for server in holders} == rs_ports, (table, holders)
            assert min(holders.values()) >= 2, (table, holders)  # spread, not piled on one server


def test_crashes_saved_through_every_thrift_server_survive_one_thrift_servers_sigkill(hbase_cluster, created):
    crashes = [make_raw("cluster", i) for i in range(60)]
    with _thrift1(hbase_cluster, created, pool_size=3) as backend:
        store = CrashStore(backend)
        for crash_id, raw, dumps in crashes[:30]:
            store.save_raw_crash(raw, dumps, crash_id)
        assert all(s["calls"] > 0 for s in backend.servers.status())  # every Thrift server was used
        hbase_cluster.kill("thrift", 1)
        for crash_id, raw, dumps in crashes[30:]:
            store.save_raw_crash(raw, dumps, crash_id)  # clients go on through the other two
        for crash_id, raw, dumps in crashes:
            assert store.get_raw_crash(crash_id) == raw
            assert store.get_raw_dumps(crash_id) == dumps
        failed = [s["server"] for s in backend.servers.status() if s["failures"]]  # left out, retried
        assert failed == [f"127.0.0.1:{hbase_cluster.ports['thrift'][1]}"]
        answer = table_admin.ping(backend)
        assert answer["servers_down"] == 1 and not answer["servers"][1]["ok"]
        hbase_cluster.restart("thrift", 1)
        assert table_admin.ping(backend)["servers_down"] == 0
