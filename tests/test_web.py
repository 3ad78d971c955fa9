"""`socorro-store web` over plain HTTP: every route, status code, header and escape.

The pages are driven with Flask's test client on an embedded store, once through a real
Werkzeug server socket (urllib), and once on each backend kind; the browser journey is in
``test_web_browser.py``.
"""

import json
import random
import re
import socket
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from datetime import timedelta
from html import unescape

import pytest
from store_helpers import BASE_TIME, all_rows, crash_id, processed, raw_crash

from socorro_store import new_crash_id, open_store
from socorro_store.schema import keys as K

flask = pytest.importorskip("flask", reason="the web view needs Flask (pip install 'socorro-store[web]')")
from socorro_store.web import create_app, make_web_server  # noqa: E402

NOW = BASE_TIME + timedelta(hours=3)  # the crashes below are today's (2016-09-18)
HOSTILE_SIG = "<script>alert(1)</script> \"quoted\" 'single' & ñ ☃ שלום"
HOSTILE_PRODUCT = "<b>Fire&fox</b>\"'"
SECRET = "https://secret.example/?token=<i>x</i>"


def _save(store, cid, signature, minutes, product="Firefox", version="120.0", os_name="Windows NT", **raw_extra):
    store.save_raw_crash(raw_crash(cid, BASE_TIME + timedelta(minutes=minutes), ProductName=product,
                                   Version=version, **raw_extra), {"upload_file_minidump": b"MDMP" + bytes(60)}, cid)
    store.save_processed(processed(cid, signature=signature, product=product, version=version, os_name=os_name,
                                   url=SECRET, email="someone@example.com"))


@pytest.fixture(scope="module")
def web_store(tmp_path_factory):
    """An embedded store: 12 crashes of "common", 3 of a hostile signature, one unprocessed."""
    rng = random.Random(26)
    with open_store(f"embedded://{tmp_path_factory.mktemp('web') / 'store'}") as store:
        store.create_tables()
        ids = {"common": [], "hostile": []}
        for i in range(12):
            cid = crash_id(K.SALTS[i % 16], rng=rng)
            _save(store, cid, "common", i, version="120.0" if i % 3 else "121.0", os_name="Linux" if i % 4 == 0 else "Windows NT")
            ids["common"].append(cid)
        for i in range(3):
            cid = crash_id(K.SALTS[i], rng=rng)
            _save(store, cid, HOSTILE_SIG, 30 + i, product=HOSTILE_PRODUCT, Comments=HOSTILE_SIG, URL=SECRET)
            ids["hostile"].append(cid)
        queued = crash_id("e", rng=rng)
        store.save_raw_crash(raw_crash(queued, BASE_TIME + timedelta(minutes=50)), {}, queued)
        ids["queued"] = queued
        store.flush_counters()
        yield store, ids


@pytest.fixture(scope="module")
def client(web_store):
    return create_app(web_store[0], now=lambda: NOW).test_client()


@pytest.fixture(scope="module")
def unredacted_client(web_store):
    return create_app(web_store[0], unredacted=True, now=lambda: NOW).test_client()


def _links(html, cls):
    return [unescape(href) for href in re.findall(rf'class="{cls}" href="([^"]+)"', html)]


def test_home_shows_queues_the_hourly_chart_and_todays_top_signatures(client, web_store):
    response = client.get("/")
    html = response.get_data(as_text=True)
    assert response.status_code == 200 and response.mimetype == "text/html"
    assert '<svg class="chart"' in html and "Crashes submitted per hour" in html
    assert _links(html, "signature-link")[0] == "/signature/?signature=common"
    assert re.search(r'standard</span> <span class="num">1<', html)  # the one crash still queued
    assert '<form id="search" action="/search"' in html


def test_top_crashers_rank_count_share_and_filters(client):
    data = client.get("/api/topcrashers?day=2016-09-18").get_json()
    assert [(s["rank"], s["signature"], s["count"]) for s in data["signatures"]] == [(1, "common", 12), (2, HOSTILE_SIG, 3)]
    assert data["signatures"][0]["share"] == pytest.approx(0.8) and data["signatures"][0]["movement"] == "new"
    linux = client.get("/api/topcrashers?day=2016-09-18&os=Linux").get_json()
    assert [(s["signature"], s["count"]) for s in linux["signatures"]] == [("common", 3)]
    html = client.get("/topcrashers/?days=2&product=Firefox&version=121.0").get_data(as_text=True)
    assert _links(html, "signature-link") == ["/signature/?signature=common&product=Firefox&version=121.0"]
    assert "4</td>" in html  # the 4 crashes of 121.0


@pytest.mark.parametrize("query, message", [
    ("days=0", "days must be between 1 and 366"), ("days=abc", "whole number"), ("day=2016-13-01", "YYYY-MM-DD"),
    ("day=2016-09-18&days=2", "not both"), ("version=1.0", "needs its product"),
    # int() took each of these
    ("days=%2B7", "whole number"), ("days=%207", "whole number"), ("days=1_0", "whole number"),
    ("days=%D9%A7", "whole number")])
def test_bad_top_crashers_parameters_answer_400_with_the_reason(client, query, message):
    page, api = client.get(f"/topcrashers/?{query}"), client.get(f"/api/topcrashers?{query}")
    assert page.status_code == api.status_code == 400
    assert message in page.get_data(as_text=True) and message in api.get_json()["error"]


def test_signature_page_trend_breakdown_and_crashes_newest_first(client, web_store):
    _store, ids = web_store
    html = client.get("/signature/?signature=common").get_data(as_text=True)
    assert html.count('<svg class="chart"') == 2
    crash_links = _links(html, "crash-link")
    newest_first = list(reversed(ids["common"]))
    assert crash_links == [f"/report/index/{cid}" for cid in newest_first]
    data = client.get("/api/signature?signature=common").get_json()
    assert data["breakdown"]["version"] == [["Firefox", "120.0", 8], ["Firefox", "121.0", 4]]
    assert data["breakdown"]["os"] == [["Windows NT", 9], ["Linux", 3]]
    assert data["first_seen"]["level"] == "hour" and data["older"] is None and data["newer"] is None
    assert client.get("/signature/").status_code == 400


def test_signature_crashes_are_paged_by_cursor(client, web_store, monkeypatch):
    from socorro_store.web import pages  # noqa: PLC0415

    monkeypatch.setattr(pages, "CRASHES_PER_PAGE", 5)
    newest_first = list(reversed(web_store[1]["common"]))
    first = client.get("/api/signature?signature=common").get_json()
    assert [c["crash_id"] for c in first["crashes"]] == newest_first[:5] and first["newer"] is None
    second = client.get("/api/signature", query_string={"signature": "common", "before": first["older"]}).get_json()
    third = client.get("/api/signature", query_string={"signature": "common", "before": second["older"]}).get_json()
    assert [c["crash_id"] for c in second["crashes"]] == newest_first[5:10]
    assert [c["crash_id"] for c in third["crashes"]] == newest_first[10:] and third["older"] is None
    back = client.get("/api/signature", query_string={"signature": "common", "after": third["newer"]}).get_json()
    assert [c["crash_id"] for c in back["crashes"]] == newest_first[5:10] and back["newer"] and back["older"]
    html = client.get("/signature/", query_string={"signature": "common", "before": second["older"]}).get_data(as_text=True)
    assert unescape(re.search(r'rel="prev" class="pager-newer" href="([^"]+)"', html).group(1)) == \
        "/signature/?" + urllib.parse.urlencode({"signature": "common", "after": third["newer"]})
    assert 'rel="next"' not in html and 'class="pager-newest" href="/signature/?signature=common"' in html


@pytest.mark.parametrize("cursor", ["x", "%%%", "AAAA", "A" * 84, "A" * 500, "bm90IGEgY3Vyc29y"])
def test_a_bad_cursor_is_a_400_not_a_500(client, cursor):
    for path in ("/signature/", "/api/signature", "/api/signature/"):
        for name in ("before", "after"):
            response = client.get(path, query_string={"signature": "common", name: cursor})
            assert response.status_code == 400, (path, name, cursor)
            assert "not a page cursor" in response.get_data(as_text=True)
    both = client.get("/api/signature?signature=common&before=x&after=y")
    assert both.status_code == 400


def test_report_page_redacted_by_default(client, web_store):
    cid = web_store[1]["common"][0]
    for path in (f"/report/index/{cid}", f"/report/index/bp-{cid}"):
        html = client.get(path).get_data(as_text=True)
        assert f'<h1 id="crash-id">{cid}</h1>' in html and 'id="processing-state"' in html
        assert "upload_file_minidump" in html and "64 bytes" in html
        assert "secret.example" not in html and "someone@example.com" not in html
        assert "dump-link" not in html
    data = client.get(f"/api/report/{cid}").get_json()
    assert data["processed_crash"]["signature"] == "common" and "url" not in data["processed_crash"]
    assert data["dumps"] == {"upload_file_minidump": 64} and data["state"]["processed"]
    assert client.get(f"/report/dump/{cid}/upload_file_minidump").status_code == 404


def test_unredacted_report_shows_protected_fields_and_serves_dumps(unredacted_client, web_store):
    cid = web_store[1]["hostile"][0]
    html = unredacted_client.get(f"/report/index/{cid}").get_data(as_text=True)
    assert "secret.example" in html and "someone@example.com" in html and 'class="dump-link"' in html
    dump = unredacted_client.get(f"/report/dump/{cid}/upload_file_minidump")
    assert dump.status_code == 200 and dump.data == b"MDMP" + bytes(60)
    assert dump.headers["Content-Disposition"] == f'attachment; filename="{cid}.dmp"'
    assert unredacted_client.get(f"/report/dump/{cid}/no_such_dump").status_code == 404


def test_an_unprocessed_crash_has_a_report_that_says_so(client, web_store):
    html = client.get(f"/report/index/{web_store[1]['queued']}").get_data(as_text=True)
    assert "Not processed yet." in html and "<th>Processed</th><td>no</td>" in html
    assert "Not processed yet: the details are the raw crash's." in html and 'data-field="ProductName"' in html


def test_unknown_crash_404_and_malformed_400(client):
    unknown = new_crash_id()
    assert client.get(f"/report/index/{unknown}").status_code == 404
    assert client.get(f"/api/report/{unknown}").get_json() == {"error": f"no crash {unknown}"}
    for bad in ("zzz", "bp-123", "%3Cscript%3E"):
        assert client.get(f"/report/index/{bad}").status_code == 400
        assert client.get(f"/api/report/{bad}").status_code == 400


def test_search_takes_a_crash_id_in_any_pasted_form(client, web_store):
    cid = web_store[1]["common"][1]
    for pasted in (cid, f"bp-{cid}", f"  {cid.upper()} ", f"https://crash-stats.mozilla.org/report/index/{cid}"):
        response = client.get("/search", query_string={"q": pasted})
        assert response.status_code == 302 and response.headers["Location"] == f"/report/index/{cid}"
    assert client.get("/search?q=not-a-crash").status_code == 400 and client.get("/search?q=").status_code == 400


@pytest.mark.parametrize("path", ["/", "/topcrashers/", "/signature/?signature=common", "/api/queue", "/healthz", "/search?q=x"])
@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
def test_writes_answer_405(client, path, method):
    response = client.open(path, method=method)
    assert response.status_code == 405 and "GET" in response.headers["Allow"]


def test_unknown_paths_404_and_every_response_carries_the_security_headers(client):
    for path in ("/", "/nope", "/api/nope", "/topcrashers/?days=0", "/static/site.css"):
        headers = client.get(path).headers
        assert "default-src 'self'" in headers["Content-Security-Policy"]
        assert "script-src 'none'" in headers["Content-Security-Policy"] and "frame-ancestors 'none'" in headers["Content-Security-Policy"]
        assert headers["X-Content-Type-Options"] == "nosniff" and headers["Referrer-Policy"] == "no-referrer"
    assert client.get("/nope").status_code == 404 and client.get("/api/nope").get_json()["error"]


def test_no_page_loads_anything_from_another_host_nor_has_inline_script_or_style(client, web_store):
    cid = web_store[1]["hostile"][0]
    for path in ("/", "/topcrashers/", "/signature/?signature=common", f"/report/index/{cid}", "/nope"):
        html = client.get(path).get_data(as_text=True)
        assert re.findall(r'(?:src|href)="(?:https?:)?//', html) == []
        assert "<script" not in html.replace("&lt;script", "") and " style=" not in html and "<style" not in html


def test_hostile_strings_are_escaped_in_html_and_svg_and_intact_in_json(client, web_store):
    cid = web_store[1]["hostile"][0]
    pages = [client.get(path, query_string=query).get_data(as_text=True) for path, query in (
        ("/", {}), ("/topcrashers/", {"days": 1}), ("/signature/", {"signature": HOSTILE_SIG}), (f"/report/index/{cid}", {}),
        ("/topcrashers/", {"day": "2016-09-18", "product": HOSTILE_PRODUCT}))]
    for html in pages:
        assert "<script>alert(1)</script>" not in html and "<b>Fire&fox</b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &#34;quoted&#34; &#39;single&#39; &amp; ñ ☃ שלום" in pages[2]
    assert "&lt;b&gt;Fire&amp;fox&lt;/b&gt;" in pages[3]  # the raw annotation ProductName
    link = _links(pages[1], "signature-link")[1]
    assert urllib.parse.parse_qs(urllib.parse.urlsplit(link).query) == {"signature": [HOSTILE_SIG]}
    assert f'<h1 id="signature">{HOSTILE_SIG.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")}' \
        .replace('"quoted"', "&#34;quoted&#34;").replace("'single'", "&#39;single&#39;") in client.get(link).get_data(as_text=True)
    data = client.get("/api/signature", query_string={"signature": HOSTILE_SIG}).get_json()
    assert data["signature"] == HOSTILE_SIG and data["breakdown"]["product"] == [[HOSTILE_PRODUCT, 3]]
    assert client.get(f"/api/report/{cid}").get_json()["raw_crash"]["ProductName"] == HOSTILE_PRODUCT
    assert "Comments" not in client.get(f"/api/report/{cid}").get_json()["raw_crash"]  # protected
    top = client.get("/api/topcrashers", query_string={"day": "2016-09-18", "product": HOSTILE_PRODUCT}).get_json()
    assert [(s["signature"], s["count"]) for s in top["signatures"]] == [(HOSTILE_SIG, 3)]


class _CountingBackend:
    """Records (method, table, rows) of every read the pages make."""

    def __init__(self, backend):
        self.backend, self.reads = backend, []

    def __getattr__(self, name):
        attr = getattr(self.backend, name)
        if name not in ("scan", "get_row", "get_rows", "get_cells"):
            return attr

        def counted(table, *args, **kwargs):
            rows = args[0] if name == "get_rows" and args else kwargs.get("rows")
            self.reads.append((name, table, len(rows) if isinstance(rows, list) else 1))
            return attr(table, *args, **kwargs)
        return counted


def test_pages_read_counters_and_indexes_never_a_scan_of_crash_rows(web_store):
    from socorro_store.crashstore.store import CrashStore  # noqa: PLC0415

    store, ids = web_store
    counting = _CountingBackend(store.backend)
    client = create_app(CrashStore(counting), now=lambda: NOW).test_client()
    for path in ("/", "/topcrashers/?days=7", "/topcrashers/?days=7&product=Firefox&os=Linux"):
        counting.reads.clear()
        assert client.get(path).status_code == 200
        assert [r for r in counting.reads if r[1] == K.CRASH_REPORTS] == []
    counting.reads.clear()
    assert client.get("/signature/?signature=common").status_code == 200
    crash_reads = [r for r in counting.reads if r[1] == K.CRASH_REPORTS]
    assert [r[0] for r in crash_reads] == ["get_rows"] and crash_reads[0][2] <= 51  # the page's crashes only
    assert ("scan", K.SIGNATURE_OOID, 1) in counting.reads


def test_healthz_answers_503_when_the_store_is_gone(tmp_path):
    store = open_store(f"embedded://{tmp_path / 'gone'}")
    store.create_tables()
    client = create_app(store).test_client()
    assert client.get("/healthz").get_json() == {"ok": True}
    store.close()
    response = client.get("/healthz")
    assert response.status_code == 503 and response.get_json()["ok"] is False


def test_pages_on_every_backend(store):
    """Top crashers, a signature and a report on each backend kind; nothing written."""
    cid = crash_id("a")
    _save(store, cid, "every-backend", 5)
    store.flush_counters()  # the counters of the saves above are sent (in the background on a remote backend)
    before = all_rows(store.backend)
    client = create_app(store, now=lambda: NOW).test_client()
    top = client.get("/api/topcrashers?day=2016-09-18").get_json()
    assert [(s["signature"], s["count"]) for s in top["signatures"]] == [("every-backend", 1)]
    sig = client.get("/signature/?signature=every-backend").get_data(as_text=True)
    assert _links(sig, "crash-link") == [f"/report/index/{cid}"]
    assert client.get(f"/report/index/{cid}").status_code == 200 and client.get("/").status_code == 200
    assert client.post("/").status_code == 405
    assert all_rows(store.backend) == before


def test_a_real_server_socket_serves_the_pages(web_store):
    import threading  # noqa: PLC0415

    server = make_web_server(web_store[0], "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_port}"
        with urllib.request.urlopen(f"{base}/healthz", timeout=30) as response:
            assert json.load(response) == {"ok": True}
        with urllib.request.urlopen(f"{base}/topcrashers/?day=2016-09-18", timeout=30) as response:
            assert "signature-link" in response.read().decode()
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(urllib.request.Request(f"{base}/", method="DELETE"), timeout=30)
        assert info.value.code == 405
    finally:
        server.shutdown()
        server.server_close()
    from socorro_store.errors import InvalidArgument  # noqa: PLC0415

    with pytest.raises(InvalidArgument, match="--allow-remote"):
        make_web_server(web_store[0], "0.0.0.0", 0)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "socorro_store", *args], capture_output=True, text=True, timeout=120)


def test_cli_refuses_a_remote_host_without_the_flag_and_a_missing_store(tmp_path):
    remote = _cli("--url", f"embedded://{tmp_path / 'x'}", "web", "--host", "0.0.0.0")
    assert remote.returncode == 2 and remote.stderr.count("\n") == 1 and "--allow-remote" in remote.stderr
    missing = _cli("--url", f"embedded://{tmp_path / 'missing'}", "web", "--port", "0")
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1 and "Traceback" not in missing.stderr
    assert not (tmp_path / "missing").exists()
    bad_port = _cli("web", "--port", "70000")
    assert bad_port.returncode == 2


def test_cli_serves_until_stopped(web_store, tmp_path):
    url = f"embedded://{tmp_path / 'cli'}"
    with open_store(url) as store:
        store.create_tables()
    proc = subprocess.Popen([sys.executable, "-m", "socorro_store", "--url", url, "web", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        match = re.match(r"serving (http://127\.0\.0\.1:\d+/) \(read-only\)", line)
        assert match, line + proc.stderr.read() if proc.poll() is not None else line
        with urllib.request.urlopen(match.group(1) + "healthz", timeout=30) as response:
            assert json.load(response) == {"ok": True}
    finally:
        proc.terminate()
        proc.wait(30)


def test_a_crash_another_client_stored_nesting_too_deep_renders(client, web_store):
    """Issue 32, defect 7: documents this library refuses on input, written by another client,
    still give a report page (and JSON) naming what cannot be shown, never a 500."""
    from socorro_store.backends import RowMutation  # noqa: PLC0415
    from socorro_store.schema import keys as K  # noqa: PLC0415

    store = web_store[0]
    cid = crash_id("9", rng=random.Random(99))
    store.save_raw_crash(raw_crash(cid), {}, cid)
    deep = b'{"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    store.backend.mutate_rows(K.CRASH_REPORTS, [RowMutation(K.crash_row_key(cid), {K.COL_META: deep})])
    page = client.get(f"/report/index/{cid}")
    assert page.status_code == 200 and "nests too deep to read" in page.get_data(as_text=True)
    data = client.get(f"/api/report/{cid}").get_json()
    assert data["raw_crash"] == {} and data["unreadable"] == [f"the raw crash of crash {cid} nests too deep to read"]
