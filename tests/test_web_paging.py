"""Signature pages by cursor (issue 33, part 2): a deep page costs what the first costs.

The backend's own call counters (one per scan page, one per multi-row get) and the rows each
read returns are compared for page 1 and page 6 of a 320-crash signature, walking the pages by
their ``older`` cursors, and back by ``newer``.  Counts, never time.
"""

import collections
import random
from datetime import timedelta

import pytest
from store_helpers import BASE_TIME, crash_id, processed, raw_crash

from socorro_store import open_store
from socorro_store.crashstore import listings
from socorro_store.crashstore.store import CrashStore
from socorro_store.schema import keys as K

pytest.importorskip("flask", reason="the web view needs Flask (pip install 'socorro-store[web]')")
from socorro_store.web import create_app  # noqa: E402

NOW = BASE_TIME + timedelta(hours=23)
CRASHES = 320


class _RowCounting:
    """The backend, counting the rows each read returns, per table."""

    def __init__(self, backend):
        self.backend, self.rows = backend, collections.Counter()

    def __getattr__(self, name):
        attr = getattr(self.backend, name)
        if name == "scan":
            def scan(table, *args, **kwargs):
                for item in attr(table, *args, **kwargs):
                    self.rows[table] += 1
                    yield item
            return scan
        if name == "get_rows":
            def get_rows(table, *args, **kwargs):
                found = attr(table, *args, **kwargs)
                self.rows[table] += len(found)
                return found
            return get_rows
        return attr


@pytest.fixture(scope="module")
def deep(tmp_path_factory):
    rng = random.Random(332)
    with open_store(f"embedded://{tmp_path_factory.mktemp('paging') / 'store'}") as store:
        store.create_tables()
        crashes = [(crash_id(K.SALTS[i % 16], rng=rng), BASE_TIME + timedelta(seconds=97 * i)) for i in range(CRASHES)]
        store.save_raw_crashes([(raw_crash(cid, moment), {}, cid) for cid, moment in crashes])
        store.save_processed_crashes([processed(cid, signature="deep", product="Firefox", version="132.0",
                                                os_name="Linux", reason="SIGSEGV /SEGV_MAPERR", build="20241104181025")
                                      for cid, _moment in crashes])
        store.flush_counters()
        counting = _RowCounting(store.backend)
        client = create_app(CrashStore(counting), now=lambda: NOW).test_client()
        yield store, counting, client, [cid for cid, _moment in reversed(crashes)]


def _cost(store, counting, client, query):
    before_calls, before_rows = collections.Counter(store.backend.calls), collections.Counter(counting.rows)
    data = client.get("/api/signature", query_string={"signature": "deep", **query}).get_json()
    calls = collections.Counter(store.backend.calls)
    calls.subtract(before_calls)
    rows = collections.Counter(counting.rows)
    rows.subtract(before_rows)
    return data, +calls, +rows


def test_any_page_costs_what_the_first_costs(deep):
    store, counting, client, newest_first = deep
    first, first_calls, first_rows = _cost(store, counting, client, {})
    assert [c["crash_id"] for c in first["crashes"]] == newest_first[:50]
    assert first["crashes"][0]["os"] == "Linux" and first["crashes"][0]["reason"] == "SIGSEGV /SEGV_MAPERR"
    page, costs = first, []
    for number in range(2, 7):
        page, calls, rows = _cost(store, counting, client, {"before": page["older"]})
        assert [c["crash_id"] for c in page["crashes"]] == newest_first[(number - 1) * 50:number * 50]
        costs.append((calls, rows))
    assert page["older"] is not None
    for calls, rows in costs:
        assert calls == first_calls and rows == first_rows
    assert first_calls[("scan")] == 1 and first_rows[K.CRASH_REPORTS] == 51  # the page and one more
    # five gets: the product and OS registry rows, the signature's row column-listed (trend, first
    # seen, daily |p=/|os=), its products' version registry rows and |pv= columns, the page's crash rows
    assert first_calls["get_rows"] == 5
    last, calls, rows = _cost(store, counting, client, {"before": page["older"]})
    assert [c["crash_id"] for c in last["crashes"]] == newest_first[300:] and last["older"] is None
    assert calls["get_rows"] == first_calls["get_rows"] and rows[K.CRASH_REPORTS] == 20
    back, calls, rows = _cost(store, counting, client, {"after": last["newer"]})
    assert [c["crash_id"] for c in back["crashes"]] == newest_first[250:300]
    assert calls == first_calls and rows == first_rows


def test_the_library_call_reads_one_scan_page_and_one_get(deep):
    store, _counting, _client, newest_first = deep
    middle = listings.signature_page(store.backend, "deep", 10)
    older = listings.signature_page(store.backend, "deep", 10, before=middle["older"])
    before = collections.Counter(store.backend.calls)
    deepest = listings.signature_page(store.backend, "deep", 10, before=older["older"])
    used = collections.Counter(store.backend.calls)
    used.subtract(before)
    assert +used == collections.Counter({"scan": 1, "get_rows": 1})
    assert [c["crash_id"] for c in deepest["crashes"]] == newest_first[20:30]
    text = listings.page_cursor(*deepest["older"])
    assert listings.parse_page_cursor(text) == deepest["older"] and len(text) < 100


class _ColumnsRead:
    """Records the columns each ``get_rows`` of ``crash_reports`` asked for."""

    def __init__(self, backend):
        self._backend, self.asked = backend, []

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def get_rows(self, table, rows, columns=None, **kwargs):
        if table == K.CRASH_REPORTS:
            self.asked.append(set(columns or ()))
        return self._backend.get_rows(table, rows, columns=columns, **kwargs)


def test_a_page_lists_reason_and_build_from_small_cells_not_the_processed_json(embedded_url):
    """A processed save writes ``flags:reason|address|build``; a page reads them, and reads the
    processed JSON only of rows saved before they existed."""
    from socorro_store.schema.crash_facts import LISTING_COLUMNS  # noqa: PLC0415

    with open_store(embedded_url) as store:
        store.create_tables()
        cids = [crash_id("0123456789abcdef"[i], BASE_TIME, random.Random(i)) for i in range(3)]
        for i, cid in enumerate(cids):
            store.save_raw_crash(raw_crash(cid, BASE_TIME + timedelta(minutes=i)), {}, cid)
            store.save_processed(processed(cid, signature="sig", reason="EXCEPTION_ACCESS_VIOLATION_READ",
                                           build="20231120093012"))
        store.settle()  # the signature pointers are the deriver's
        # one row as an older version left it: no listing cells
        from socorro_store.backends import RowMutation  # noqa: PLC0415

        store.backend.mutate_rows(K.CRASH_REPORTS, [RowMutation(K.crash_row_key(cids[0]),
                                                                deletes=list(LISTING_COLUMNS.values()))])
        reading = _ColumnsRead(store.backend)
        page = listings.signature_page(reading, "sig", 50)
        assert [(c["reason"], c["build"]) for c in page["crashes"]] == \
            [("EXCEPTION_ACCESS_VIOLATION_READ", "20231120093012")] * 3
        assert K.COL_PROCESSED_JSON not in reading.asked[0]
        assert reading.asked[1:] == [{K.COL_PROCESSED_JSON}]  # the older row's JSON only
