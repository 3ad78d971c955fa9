"""`socorro-store web` as a newcomer reads it (issue 39, section 3): the internal markers
(``##null##``, ``##empty##``, ``##other##``, ``##unknown##``) in words on every page, their stored
names kept in links, filters and JSON keys; no markup inside ``<title>``."""

import random
import re
from datetime import timedelta
from html import unescape

import pytest
from store_helpers import BASE_TIME, crash_id, processed, raw_crash

from socorro_store import open_store
from socorro_store.schema import keys as K
from socorro_store.schema.labels import MARKER_LABELS, label

pytest.importorskip("flask", reason="the web view needs Flask (pip install 'socorro-store[web]')")
from socorro_store.web import create_app  # noqa: E402

NOW = BASE_TIME + timedelta(hours=3)
DAY = "2016-09-18"


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    """Crashes with no signature (5), an empty one (2), a named one (3); a process type no
    ranking lists (``##other##``) and crashes with no OS (``##unknown##``)."""
    rng = random.Random(39)
    with open_store(f"embedded://{tmp_path_factory.mktemp('newcomer') / 'store'}") as store:
        store.create_tables()
        plan = [(None, "content")] * 5 + [("", "WeirdProcess")] * 2 + [("js::GC::Mark", "default")] * 3
        for i, (signature, process_type) in enumerate(plan):
            cid = crash_id(K.SALTS[i % 16], rng=rng)
            store.save_raw_crash(raw_crash(cid, BASE_TIME + timedelta(minutes=i), Version="118.0.2",
                                           ProcessType=process_type), {}, cid)
            extra = {} if i % 2 else {"os_name": "Linux"}
            store.save_processed(processed(cid, signature=signature, product="Firefox", version="118.0.2", **extra))
        store.flush_counters()
        yield create_app(store, now=lambda: NOW).test_client()


def _text(html):
    """What a person reads of a page: the text, without tags (attributes are a program's)."""
    return unescape(re.sub(r"<[^>]*>", " ", html))


def _title(html):
    return re.search(r"<title>(.*?)</title>", html, re.S).group(1)


def test_the_label_function_words_each_marker_and_leaves_other_values():
    assert label("##null##") == "(no signature)" and label("##empty##") == "(empty signature)"
    assert label("##other##") == "(other)" and label("##unknown##") == "(unknown)"
    assert label("js::GC::Mark") == "js::GC::Mark" and label(None) is None and label(3) == 3


@pytest.mark.parametrize("query", [f"day={DAY}&product=Firefox&version=118.0.2", f"day={DAY}&process_type=content",
                                   f"day={DAY}", f"day={DAY}&process_type=%23%23other%23%23"])
def test_the_title_is_text_never_markup(client, query):
    html = client.get(f"/topcrashers/?{query}").get_data(as_text=True)
    assert "<" not in _title(html) and "Top crashers" in _title(html)


def test_top_crashers_show_markers_in_words_and_link_them_by_their_stored_name(client):
    html = client.get(f"/topcrashers/?day={DAY}").get_data(as_text=True)
    text = _text(html)
    assert "##" not in text
    assert "(no signature)" in text and "(empty signature)" in text and "(unknown)" in text  # the OS column
    assert "(other)" in text  # the process-type menu and column
    assert 'value="##other##">(other)</option>' in html  # the filter sends the stored name
    assert "/signature/?signature=%23%23null%23%23" in html
    filtered = client.get(f"/topcrashers/?day={DAY}&process_type=%23%23other%23%23").get_data(as_text=True)
    assert "##" not in _text(filtered) and "Only (other) process crashes" in _text(filtered)


def test_the_api_keeps_stored_names_with_their_labels_beside_them(client):
    data = client.get(f"/api/topcrashers?day={DAY}").get_json()
    rows = {row["signature"]: row["label"] for row in data["signatures"]}
    assert rows == {"##null##": "(no signature)", "##empty##": "(empty signature)", "js::GC::Mark": "js::GC::Mark"}
    assert data["labels"] == MARKER_LABELS
    one = client.get("/api/signature?signature=%23%23null%23%23").get_json()
    assert one["signature"] == "##null##" and one["label"] == "(no signature)"


def test_home_and_signature_pages_show_markers_in_words(client):
    home = client.get("/").get_data(as_text=True)
    assert "##" not in _text(home) and "(no signature)" in _text(home)
    page = client.get("/signature/?signature=%23%23null%23%23").get_data(as_text=True)
    assert "##" not in _text(page) and "(no signature)" in _title(page)
    assert re.search(r'<h1 id="signature">\(no signature\)</h1>', page)
    assert "(unknown)" in _text(page)  # the OS breakdown


def test_the_report_page_of_a_crash_with_no_signature_shows_it_in_words(client):
    page = client.get("/signature/?signature=%23%23null%23%23").get_data(as_text=True)
    crash = re.search(r"/report/index/([0-9a-f-]{36})", page).group(1)
    report = client.get(f"/report/index/{crash}").get_data(as_text=True)
    assert "##" not in _text(report) and "(no signature)" in _text(report)
    assert "/signature/?signature=%23%23null%23%23" in report  # the link keeps the stored name
