"""Backend fixtures shared by every suite.

``backend_url`` is parametrized over every backend kind.  Each test gets an isolated namespace:
a fresh directory (embedded), a fresh table prefix (hbase through the gateway or in Docker), a
prefix of its own emptied after each test (a real HBase: ``fixtures_hbase_real.py``; the gateway
too for a test that wants the store's tables, emptied and compacted), or a fresh instance id
(Bigtable emulator).  Kinds whose environment is absent skip with the reason.  Server fixtures
live in ``fixtures_*.py`` beside this file.
"""

import os
import uuid

import pytest

# Stores in tests feed their search index in settle() only: a feeder thread beside a test that
# counts calls or compares whole tables would make it flaky.  The background feeder's own tests
# ask for it (search_feed=True); production's default stays "background".
os.environ.setdefault("SOCORRO_SEARCH_FEED", "inline")
os.environ.setdefault("SOCORRO_DERIVE", "inline")

from socorro_store import open_store
from socorro_store.backends import open_backend

pytest_plugins = ["fixtures_gateway", "fixtures_hbase_docker", "fixtures_hbase_real", "fixtures_bigtable",
                  "fixtures_opensearch"]

# kind -> name of a session fixture returning a base URL for that kind
SERVER_FIXTURES = {
    "gateway-buffered-binary": "gateway_buffered_binary_url",
    "gateway-framed-compact": "gateway_framed_compact_url",
    "hbase-docker": "hbase_docker_url",
    "hbase-real": "hbase_real_url",
    "hbase-real-thrift2": "hbase_real_thrift2_url",
    "bigtable-emulator": "bigtable_emulator_url",
}
BACKEND_KINDS = ["embedded", *SERVER_FIXTURES]
# kinds on the session's real HBase -> their TablePool fixture (fixtures_hbase_real.py)
REAL_HBASE_POOLS = {"hbase-real": "hbase_real_pool", "hbase-real-thrift2": "hbase_real_thrift2_pool"}
# gateway kinds -> their TablePool fixture (fixtures_gateway.py), for tests that want the spec tables
GATEWAY_POOLS = {"gateway-buffered-binary": "gateway_buffered_binary_pool",
                 "gateway-framed-compact": "gateway_framed_compact_pool"}


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", default=False, help="run tests marked slow")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow soak test: opt in with --run-slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def isolated_url(kind, base_url, tmp_path):
    """A URL for ``kind`` that no other test shares."""
    tag = "t" + uuid.uuid4().hex[:10]
    if kind == "embedded":
        return f"embedded://{tmp_path / 'store'}"
    if kind == "bigtable-emulator":
        return f"{base_url.rstrip('/')}-{tag}"
    sep = "&" if "?" in base_url else "?"
    return f"{base_url}{sep}table_prefix={tag}"


@pytest.fixture(params=BACKEND_KINDS)
def backend_kind(request):
    return request.param


@pytest.fixture
def backend_url(request, backend_kind, tmp_path):
    want_specs = "store" in request.fixturenames or "prebuilt_tables" in request.fixturenames
    pool = REAL_HBASE_POOLS.get(backend_kind) or (want_specs and GATEWAY_POOLS.get(backend_kind))
    if pool:  # tables are slow to create there: reuse emptied ones
        with request.getfixturevalue(pool).lease(want_specs) as url:
            yield url
        return
    base_url = None
    if backend_kind != "embedded":
        base_url = request.getfixturevalue(SERVER_FIXTURES[backend_kind])
    yield isolated_url(backend_kind, base_url, tmp_path)


@pytest.fixture
def prebuilt_tables():
    """Asked for by a test or fixture that opens a store on ``backend_url`` and creates its tables
    first: on a real HBase or a gateway, ``backend_url`` then names a prefix already holding the
    spec tables, emptied (as ``store``'s does), not a bare one where creating them costs ~4 s a
    kind on HBase."""


@pytest.fixture
def backend(backend_url):
    with open_backend(backend_url) as opened:
        yield opened


@pytest.fixture
def store(backend_url):
    """A crash store with every table created, on each backend of ``backend_url``."""
    with open_store(backend_url) as opened:
        opened.create_tables()
        yield opened


@pytest.fixture
def cut_over_store(backend_url):
    """A crash store with every table created and its counters cut over to the deriver
    (counted from no crash), with no search index, on each backend of ``backend_url``."""
    with open_store(backend_url, search_url="none") as opened:
        opened.create_tables()
        assert opened.cut_over_counters()["crashes"] == 0
        yield opened


@pytest.fixture
def embedded_url(tmp_path):
    return f"embedded://{tmp_path / 'store'}"
