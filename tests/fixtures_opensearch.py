"""Session fixtures: one real OpenSearch node for the whole session (no Docker, no distribution).

``opensearch_real`` is ``(url, LocalOpenSearch or None)``: ``$SOCORRO_STORE_TEST_OPENSEARCH``
(``opensearch://HOST:PORT…``, an operator's own cluster) when it is set, otherwise a node that
:class:`servers.local_opensearch.LocalOpenSearch` starts on loopback (jars fetched from Maven
Central on first use, cached outside the repo) and stops when the session ends.  Without Java,
javac or Maven, the tests that need it skip and say what is missing.

One node serves every test: each test takes index names of its own (:func:`fresh_index`),
so no test sees another's documents.  :func:`shared_opensearch` gives the same node to code
that is not a fixture (the differential test's engine factories).
"""

import os
import tempfile
import uuid

import pytest

ENV_VAR = "SOCORRO_STORE_TEST_OPENSEARCH"
_SESSION = {}


def shared_opensearch():
    """``(url, LocalOpenSearch or None)`` of the session's node, started on first call; skips
    the calling test when OpenSearch cannot run here (and every later caller, with the reason)."""
    if "skip" in _SESSION:
        pytest.skip(_SESSION["skip"])
    if "url" in _SESSION:
        return _SESSION["url"], _SESSION.get("local")
    pytest.importorskip("opensearchpy", reason="opensearch-py is not installed (pip install '.[test]')")
    external = os.environ.get(ENV_VAR)
    if external:
        _SESSION["url"] = external
        return external, None
    try:
        from servers.local_opensearch import LocalOpenSearch, OpenSearchUnavailable, require_tools
    except ImportError as exc:  # pragma: no cover - tools/ is on pytest's pythonpath
        _SESSION["skip"] = f"tools/servers/local_opensearch.py not importable: {exc}"
        pytest.skip(_SESSION["skip"])
    try:
        require_tools()
    except OpenSearchUnavailable as exc:
        _SESSION["skip"] = f"no real OpenSearch: {exc}"
        pytest.skip(_SESSION["skip"])
    local = LocalOpenSearch(tempfile.mkdtemp(prefix="opensearch-real-"), log=print)
    try:
        local.start(float(os.environ.get("SOCORRO_STORE_OPENSEARCH_START_TIMEOUT", "180")))
    except OpenSearchUnavailable as exc:
        local.stop()
        _SESSION["skip"] = f"real OpenSearch did not start: {exc}"
        pytest.fail(_SESSION["skip"], pytrace=False)
    _SESSION.update(url=local.url, local=local)
    return local.url, local


def pytest_sessionfinish(session, exitstatus):
    local = _SESSION.pop("local", None)
    if local is not None:
        local.stop()
        import shutil

        shutil.rmtree(local.directory, ignore_errors=True)
    elif _SESSION.get("url") and _SESSION.get("indexes"):  # an operator's cluster: leave no index behind
        from socorro_store.errors import SearchUnavailable
        from socorro_store.search.engines import open_search_engine

        for index in _SESSION["indexes"]:
            engine = open_search_engine(engine_url(_SESSION["url"], index))
            try:
                engine.drop_index()
            except SearchUnavailable:
                pass
            finally:
                engine.close()


def fresh_index(prefix="t"):
    """An index name no other test uses (dropped at the end of the session on an external cluster)."""
    name = f"{prefix}-{uuid.uuid4().hex[:12]}"
    _SESSION.setdefault("indexes", []).append(name)
    return name


def engine_url(base_url, index):
    return f"{base_url}{'&' if '?' in base_url else '?'}index={index}"


@pytest.fixture(scope="session")
def opensearch_real():
    """``(url, LocalOpenSearch or None)`` (see the module docstring)."""
    return shared_opensearch()


@pytest.fixture
def opensearch_url(opensearch_real):
    """An ``opensearch://…?index=NAME`` URL naming an index of this test's own; dropped afterwards."""
    from socorro_store.search.engines import open_search_engine

    url = engine_url(opensearch_real[0], fresh_index())
    yield url
    engine = open_search_engine(url)
    try:
        engine.drop_index()
    finally:
        engine.close()
