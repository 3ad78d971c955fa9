"""The OpenSearch engine on a real node (kind ``opensearch-real``, ``fixtures_opensearch.py``).

The contract's semantics on random queries are the differential test's (``test_search_differential.py``
runs OpenSearch beside the embedded engine and the oracle); here: what only OpenSearch has (its
analyzer, its URL, failover and outages, the index it makes), a store searching through it
(feed and ``reindex_search`` agree), and a node killed mid-ingest.
"""

import pytest
from fixtures_opensearch import engine_url, fresh_index

from socorro_store.search.engines import open_search_engine
from socorro_store.search.fields import analyze

pytestmark = pytest.mark.usefixtures("opensearch_real")

#: strings whose tokens a careless lowercasing or tokenizing would change
TRICKY_TEXTS = [
    "OOM | small", "js::RunScript", "İSTANBUL | İstanbul", "ΣΑΣ ΟΔΟΣ", "ǅemal ß ẞ", "ＯＯＭ | ٣٤",
    "e\u0301t\u00e9", "💥 | 𝔘nicode", "a_b-c.d", "日本語 | クラッシュ", "MOZ_CRASH(OOM)", "",
]


@pytest.fixture
def engine(opensearch_url):
    opened = open_search_engine(opensearch_url)
    try:
        yield opened
    finally:
        opened.close()


def test_the_index_tokenizes_as_fields_analyze(engine):
    """The mapping's analyzer and :func:`fields.analyze` give the same tokens (a no-operator
    text filter means the same on every engine)."""
    engine.index([{"uuid": "probe"}])  # makes the index
    for text in TRICKY_TEXTS:
        reply = engine._client.indices.analyze(index=engine.index_name,
                                               body={"analyzer": "socorro_tokens", "text": text})
        assert [t["token"] for t in reply["tokens"]] == analyze(text), text
