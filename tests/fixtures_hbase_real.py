"""Session fixtures: a real Apache HBase 2.6 (no Docker), and table sets reused between tests.

``hbase_real_url`` is ``$SOCORRO_STORE_TEST_HBASE`` (``hbase://HOST:PORT…``: an operator's own
cluster, or one already running) when it is set; otherwise :class:`servers.hbase_standalone.LocalHBase` starts
one for the session (jars fetched from Maven Central on first use and cached outside the repo),
with HBase's Thrift2 server beside its Thrift1 one: ``hbase_real_thrift2_url`` (beside
``$SOCORRO_STORE_TEST_HBASE``, ``$SOCORRO_STORE_TEST_HBASE_THRIFT2`` names one, an
``hbase://…?api=thrift2`` URL on the same HBase).  Without Java or Maven, the tests that need it
skip and say what is missing.

Isolation.  Creating a table on HBase takes ~0.3 s (a create is a master procedure, a region
assignment and a region open), so a fresh prefix per test with the store's 12 tables would cost
~4 s a test.  Instead :class:`TablePool` hands each test a prefix of its own and takes it back
afterwards: tables that are not the shipped specs' are dropped, the spec tables are emptied with
row deletes and kept, and the prefix goes back to the pool.  A test asking for ``store`` (or
``prebuilt_tables``: conftest.py) gets a prefix that already holds the spec tables
(``create_tables`` then only verifies them); any other test gets a prefix holding no table at
all.  No test sees another's rows.

Emptying with deletes leaves HBase's delete markers behind (until a major compaction), and a
marker hides every older cell: a reused prefix is handed out only after the clock has passed the
markers.  Only the spec tables are reused this way; the contract suites, which write explicit
timestamps in the past, create tables of their own names, and those are always new.
"""

import contextlib
import os
import threading
import time
import uuid
from datetime import datetime, timezone

import pytest

from socorro_store.backends import open_backend
from socorro_store.crashstore.cut_over import mark_cut_over
from socorro_store.schema.spec_loader import load_specs


def _start_local_hbase(tmp_path_factory, region_servers=0):
    try:
        from servers.hbase_jars import HBaseUnavailable, require_tools
        from servers.hbase_standalone import LocalHBase
        from servers.local_hbase_cluster import LocalHBaseCluster
    except ImportError as exc:  # pragma: no cover - tools/ is on pytest's pythonpath
        pytest.skip(f"tools/servers/local_hbase.py not importable: {exc}")
    try:
        require_tools()
    except HBaseUnavailable as exc:
        return None, str(exc)
    if region_servers:
        hbase = LocalHBaseCluster(tmp_path_factory.mktemp("hbase-real-cluster"), region_servers=region_servers,
                                  thrift2=True, log=lambda msg: print(msg))
    else:
        hbase = LocalHBase(tmp_path_factory.mktemp("hbase-real"), log=lambda msg: print(msg), thrift2=True)
    try:
        hbase.start(timeout_s=float(os.environ.get("SOCORRO_STORE_HBASE_START_TIMEOUT", "180")))
    except HBaseUnavailable as exc:
        pytest.fail(f"real HBase did not start: {exc}", pytrace=False)
    return hbase, None


@pytest.fixture(scope="session")
def hbase_real(request, tmp_path_factory):
    """``(url, LocalHBase or None)``; skips without Java or Maven.  With ``--hbase-real-cluster N``
    (or ``$SOCORRO_STORE_TEST_HBASE_CLUSTER=N``) the local HBase is a cluster of N region servers
    (``servers.local_hbase_cluster.LocalHBaseCluster``, N Thrift1 and N Thrift2 servers)."""
    external = os.environ.get("SOCORRO_STORE_TEST_HBASE")
    if external:
        yield external, None
        return
    region_servers = real_cluster_size(request.config)
    hbase, missing = _start_local_hbase(tmp_path_factory, region_servers)
    if hbase is None:
        pytest.skip(f"no real HBase: {missing}")
    try:
        yield hbase.url, hbase  # on a cluster: the URL naming every Thrift1 server
    finally:
        # its data goes with the session: no clean shutdown to wait for (closing the regions of
        # every table the session made took 10-30 s)
        hbase.stop(grace_s=0)


@pytest.fixture(scope="session")
def hbase_real_url(hbase_real):
    return hbase_real[0]


@pytest.fixture(scope="session")
def hbase_real_thrift2_url(hbase_real):
    """The Thrift2 server on the same HBase (``hbase://…?api=thrift2``)."""
    url, local = hbase_real
    if local is None:
        thrift2 = os.environ.get("SOCORRO_STORE_TEST_HBASE_THRIFT2")
        if not thrift2:
            pytest.skip("SOCORRO_STORE_TEST_HBASE names one Thrift1 server; set "
                        "SOCORRO_STORE_TEST_HBASE_THRIFT2 to a Thrift2 one (hbase://HOST:PORT?api=thrift2)")
        return thrift2
    return local.thrift2_url


@pytest.fixture(scope="session")
def hbase_real_framed_compact_url(hbase_real):
    """A framed + compact Thrift1 server on the same HBase (HBase's default 2 MB frame limit).

    Beside ``$SOCORRO_STORE_TEST_HBASE``, ``$SOCORRO_STORE_TEST_HBASE_FRAMED`` names one.
    """
    url, local = hbase_real
    if local is None:
        framed = os.environ.get("SOCORRO_STORE_TEST_HBASE_FRAMED")
        if not framed:
            pytest.skip("SOCORRO_STORE_TEST_HBASE names one Thrift server; set "
                        "SOCORRO_STORE_TEST_HBASE_FRAMED to a framed + compact one for these tests")
        return framed
    return local.start_extra_thrift("framed", "compact")


def _with_prefix(base_url, prefix):
    sep = "&" if "?" in base_url else "?"
    return f"{base_url}{sep}table_prefix={prefix}"


class TablePool:
    """Prefixes on one HBase, handed to one test at a time and emptied between tests."""

    def __init__(self, base_url, compact=False):
        """``compact``: major-compact each emptied table too (synchronous on our gateway), so a
        reused table holds no delete marker either: as new, without the cost of creating it."""
        self.base_url = base_url
        self.compact = compact
        self.session_tag = "r" + uuid.uuid4().hex[:6]
        self.spec_tables = sorted(load_specs())
        self._lock = threading.Lock()
        self._empty = []      # prefixes holding no table
        self._with_specs = []  # prefixes holding exactly the spec tables, emptied
        self._released_at = {}
        self.all_prefixes = []

    def fresh(self):
        prefix = f"{self.session_tag}{len(self.all_prefixes):04d}"
        self.all_prefixes.append(prefix)
        return prefix

    def acquire(self, want_specs):
        with self._lock:
            if want_specs and self._with_specs:
                prefix = self._with_specs.pop()
            elif self._empty:
                prefix = self._empty.pop()
            else:
                prefix = self.fresh()
        # HBase's delete markers carry the ms of the delete: a put in that same ms would be hidden
        wait = self._released_at.pop(prefix, 0) + 0.005 - time.time()
        if wait > 0:
            time.sleep(wait)
        return _with_prefix(self.base_url, prefix)

    @contextlib.contextmanager
    def lease(self, want_specs):
        """A prefix's URL for the ``with`` block (:meth:`acquire`), emptied after it (:meth:`release`)."""
        url = self.acquire(want_specs)
        yield url
        self.release(url)

    def release(self, url):
        """Empty ``url``'s prefix: drop non-spec tables, delete every row of spec tables."""
        prefix = url.rsplit("table_prefix=", 1)[1]
        with open_backend(url) as backend:
            tables = backend.list_tables()
            keep = tables == self.spec_tables
            for table in tables:
                if keep:
                    truncate(backend, table)
                    if self.compact:
                        backend.compact(table)
                else:
                    backend.drop_table(table)
            if keep:
                # create_tables marks a store it creates as new (its counters derived from then
                # on); emptied tables lost that mark: the next test gets a store as new.  Past
                # the delete markers' millisecond first, or the mark would stay hidden.
                time.sleep(0.002)
                mark_cut_over(backend, datetime.now(timezone.utc))
        self._released_at[prefix] = time.time()
        with self._lock:
            (self._with_specs if keep else self._empty).append(prefix)

    def drop_all(self):
        """Drop every table this session made (an operator's cluster is left as it was)."""
        for prefix in self.all_prefixes:
            with open_backend(_with_prefix(self.base_url, prefix)) as backend:
                for table in backend.list_tables():
                    backend.drop_table(table)


def truncate(backend, table):
    """Delete every row of ``table`` (cells and all versions), in batches."""
    from socorro_store.backends.base import RowMutation

    batch = []
    for row, _cells in backend.scan(table, include_timestamp=False):
        batch.append(RowMutation(row, delete_row=True))
        if len(batch) == 500:
            backend.mutate_rows(table, batch)
            batch = []
    if batch:
        backend.mutate_rows(table, batch)


@pytest.fixture(scope="session")
def hbase_real_pool(hbase_real):
    url, local = hbase_real
    pool = TablePool(url)
    yield pool
    if local is None:  # a cluster we did not start: leave no table behind
        pool.drop_all()


@pytest.fixture(scope="session")
def hbase_real_thrift2_pool(hbase_real, hbase_real_thrift2_url):
    """Prefixes of the Thrift2 kind: a pool of its own, so its spec tables are the ones Thrift2
    creates (salted ones pre-split), not Thrift1's."""
    _url, local = hbase_real
    pool = TablePool(hbase_real_thrift2_url)
    yield pool
    if local is None:
        pool.drop_all()


# -- a pseudo-distributed cluster (issue 31): opt-in, it runs 3 + 2N JVMs ----------------------------

CLUSTER_ENV = "SOCORRO_STORE_TEST_CLUSTER"


REAL_CLUSTER_ENV = "SOCORRO_STORE_TEST_HBASE_CLUSTER"


def pytest_addoption(parser):
    parser.addoption("--run-cluster", action="store_true", default=False,
                     help=f"run the tests on a local HBase cluster of 3 region servers (or ${CLUSTER_ENV}=1)")
    parser.addoption("--hbase-real-cluster", type=int, default=None, metavar="N",
                     help=f"run the hbase-real kinds on a local HBase cluster of N region servers, not one JVM "
                          f"(or ${REAL_CLUSTER_ENV}=N)")


def real_cluster_size(config):
    """N of ``--hbase-real-cluster N`` / ``$SOCORRO_STORE_TEST_HBASE_CLUSTER``; 0: one JVM."""
    value = config.getoption("--hbase-real-cluster")
    return int(value if value is not None else os.environ.get(REAL_CLUSTER_ENV) or 0)


def cluster_wanted(config):
    return config.getoption("--run-cluster") or os.environ.get(CLUSTER_ENV, "") not in ("", "0")


@pytest.fixture(scope="session")
def hbase_cluster(request, tmp_path_factory):
    """A started ``servers.local_hbase_cluster.LocalHBaseCluster`` of 3 region servers (Thrift1 and Thrift2
    servers, one each per region server).  Opt-in: ``--run-cluster`` or ``$SOCORRO_STORE_TEST_CLUSTER=1``."""
    if not cluster_wanted(request.config):
        pytest.skip(f"the HBase cluster tests start 11 JVMs (~1 min here): opt in with --run-cluster "
                    f"or {CLUSTER_ENV}=1")
    from servers.hbase_jars import HBaseUnavailable, require_tools
    from servers.local_hbase_cluster import LocalHBaseCluster

    try:
        require_tools()
    except HBaseUnavailable as exc:
        pytest.skip(f"no real HBase: {exc}")
    cluster = LocalHBaseCluster(tmp_path_factory.mktemp("hbase-cluster"), region_servers=3, thrift2=True,
                                log=print)
    try:
        cluster.start()
    except HBaseUnavailable as exc:
        pytest.fail(f"the HBase cluster did not start: {exc}", pytrace=False)
    print(f"HBase cluster of 3 region servers ready in {cluster.started_in_s:.1f} s")
    try:
        yield cluster
    finally:
        cluster.stop(grace_s=10)
