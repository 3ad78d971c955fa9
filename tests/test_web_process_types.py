"""Top crashers by process type on the web view (issue 33, part 5): the ``process_type`` filter
and the per-process-type columns, with the backend calls each page costs (counts, never time)."""

import collections
import random
import re
from datetime import timedelta
from html import unescape

import pytest
from store_helpers import BASE_TIME, crash_id, processed, raw_crash

from socorro_store import open_store
from socorro_store.schema import keys as K

pytest.importorskip("flask", reason="the web view needs Flask (pip install 'socorro-store[web]')")
from socorro_store.web import create_app  # noqa: E402

NOW = BASE_TIME + timedelta(hours=3)
DAY = BASE_TIME.date().isoformat()
#: (signature, ProcessType or None, crashes)
CRASHES = [("js::GC", "content", 5), ("js::GC", None, 2), ("gfx::Draw", "gpu", 4), ("gfx::Draw", "default", 1),
           ("media::Decode", "rdd", 3), ("ipc::Abort", "content", 2)]


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    rng = random.Random(5)
    with open_store(f"embedded://{tmp_path_factory.mktemp('webpt') / 'store'}") as store:
        store.create_tables()
        i = 0
        for signature, ptype, n in CRASHES:
            for _ in range(n):
                cid = crash_id(K.SALTS[i % 16], rng=rng)
                extra = {"ProcessType": ptype} if ptype else {}
                store.save_raw_crash(raw_crash(cid, BASE_TIME + timedelta(minutes=i), **extra), {}, cid)
                store.save_processed(processed(cid, signature=signature, product="Firefox", os_name="Linux"))
                i += 1
        store.flush_counters()
        yield store, create_app(store, now=lambda: NOW).test_client()


def _calls(store, client, url):
    before = collections.Counter(store.backend.calls)
    response = client.get(url)
    calls = collections.Counter(store.backend.calls)
    calls.subtract(before)
    return response, +calls


def test_the_process_type_filter_ranks_that_process_only(web):
    store, client = web
    response, calls = _calls(store, client, f"/api/topcrashers?day={DAY}&process_type=content")
    data = response.get_json()
    assert [(s["signature"], s["count"]) for s in data["signatures"]] == [("js::GC", 5), ("ipc::Abort", 2)]
    assert data["total"] == 7 and data["process_type"] == "content" and data["process_type_columns"] is None
    # the ranking (the day and the one before were never rolled up: their head rows, top rows,
    # then full rows), metrics, the OS registry row and split, first appearances (a read a
    # level: the years, the first year's months, its first month's days, its first day's
    # hours): no scan
    assert calls == {"get_rows": 10}
    browser = client.get(f"/api/topcrashers?day={DAY}&process_type=parent").get_json()
    assert [(s["signature"], s["count"]) for s in browser["signatures"]] == [("js::GC", 2), ("gfx::Draw", 1)]
    html = client.get(f"/topcrashers/?day={DAY}&process_type=gpu").get_data(as_text=True)
    assert '<option value="gpu" selected>' in html and "Only gpu process crashes" in html
    assert re.findall(r'class="signature-link" href="([^"]+)"', html) == ["/signature/?signature=gfx::Draw"]


def test_the_process_type_columns_show_each_signatures_split(web):
    store, client = web
    unsplit, _ = _calls(store, client, f"/api/topcrashers?day={DAY}&product=Firefox")
    data, calls = _calls(store, client, f"/api/topcrashers?day={DAY}")
    data = data.get_json()
    assert {s["signature"]: s["process_types"] for s in data["signatures"]} == {
        "js::GC": {"content": 5, "parent": 2}, "gfx::Draw": {"gpu": 4, "parent": 1},
        "media::Decode": {"rdd": 3}, "ipc::Abort": {"content": 2}}
    assert data["process_type_columns"] == ["content", "gpu", "parent", "rdd"]
    # the split is one more multi-row get of the rankings, whatever the signatures shown: the
    # ranking (3 gets, as above), metrics, the OS registry row and split, the process-type split,
    # first appearances (4 gets, as above)
    assert calls == {"get_rows": 11}
    assert unsplit.get_json()["process_type_columns"] is None  # a filtered report is not split
    html = client.get(f"/topcrashers/?day={DAY}").get_data(as_text=True)
    headers = [unescape(h) for h in re.findall(r'<th class="num pt"[^>]*>([^<]+)</th>', html)]
    assert headers == ["content", "gpu", "parent", "rdd", "other process"]
    first_row = html.split('class="signature-link"')[1].split("</tr>")[0]
    assert re.findall(r'<td class="num pt">([^<]+)</td>', first_row) == ["5", "0", "2", "0", "0"]


@pytest.mark.parametrize("query, message", [
    ("process_type=content&product=Firefox", "combines with no product"),
    ("process_type=content&os=Linux", "combines with no product")])
def test_bad_process_type_queries_answer_400(web, query, message):
    _store, client = web
    page, api = client.get(f"/topcrashers/?day={DAY}&{query}"), client.get(f"/api/topcrashers?day={DAY}&{query}")
    assert page.status_code == api.status_code == 400
    assert message in page.get_data(as_text=True) and message in api.get_json()["error"]
