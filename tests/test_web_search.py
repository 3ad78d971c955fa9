"""Super Search in the web view: ``/api/SuperSearch/``, ``/api/SuperSearchFields/`` and ``/search/``.

Flask's test client over a real embedded store whose crashes were saved and processed through
the store's API (the search index is fed by the store, not by the test).  The browser journey
is in ``test_web_search_browser.py``.
"""

import re
import urllib.parse
from datetime import timedelta
from html import unescape

import pytest
from store_helpers import BASE_TIME, crash_id, processed, raw_crash

from socorro_store import open_store
from socorro_store.errors import SearchUnavailable
from socorro_store.schema import keys as K
from socorro_store.search.fields import FIELDS

flask = pytest.importorskip("flask", reason="the web view needs Flask (pip install 'socorro-store[web]')")
from socorro_store.web import create_app  # noqa: E402

NOW = BASE_TIME + timedelta(hours=3)
HOSTILE_SIG = "<script>alert(1)</script> \"quoted\" 'single' & ñ ☃ שלום"
HOSTILE_PRODUCT = "<b>Fire&fox</b>\"'"
# values of protected fields: none may leave the store in public mode
SECRET_EMAIL = "jane.secret@example.com"
SECRET_URL = "https://secret.example/?token=sesame"
SECRET_COMMENT = "my password is hunter2"
SECRETS = (SECRET_EMAIL, "secret.example", "sesame", "hunter2")
PROTECTED = sorted(name for name, field in FIELDS.items() if not field.public)
OOM = "OOM | small"
JS = "js::RunScript"


def _crashes():
    """``[(crash id, submitted, processed fields)]``: 14 OOM, 5 js (Fenix), 3 hostile, in the
    7 days before NOW, and one 20 days old (outside the default range)."""
    crashes = []

    def add(minutes_before, signature, **fields):
        submitted = NOW - timedelta(minutes=minutes_before)
        cid = crash_id(K.SALTS[len(crashes) % 16], day=submitted)
        crashes.append((cid, submitted, {
            "signature": signature, "date_processed": submitted.isoformat(), "product": "Firefox",
            "version": "120.0", "os_name": "Windows NT", "build": "20161110093000", "uptime": 10 * len(crashes),
            "startup_crash": len(crashes) % 2 == 0, "hang_type": len(crashes) % 2,
            "email": SECRET_EMAIL, "url": SECRET_URL, "user_comments": SECRET_COMMENT, **fields}))

    for i in range(14):
        add(30 + i * 97, OOM, version="121.0" if i % 3 == 0 else "120.0", os_name="Linux" if i % 4 == 0 else "Windows NT")
    for i in range(5):
        add(60 + i * 300, JS, product="Fenix", version="121.0", os_name="Android")
    for i in range(3):
        add(90 + i * 11, HOSTILE_SIG, product=HOSTILE_PRODUCT, moz_crash_reason=HOSTILE_SIG)
    add(20 * 24 * 60, OOM)
    return crashes


@pytest.fixture(scope="module")
def search_store(tmp_path_factory):
    crashes = _crashes()
    with open_store(f"embedded://{tmp_path_factory.mktemp('web-search') / 'store'}") as store:
        store.create_tables()
        for cid, submitted, fields in crashes:
            store.save_raw_crash(raw_crash(cid, submitted, ProductName=fields["product"], Version=fields["version"]),
                                 {"upload_file_minidump": b"MDMP" + bytes(60)}, cid)
            store.save_processed(processed(cid, **fields))
        store.settle()
        store.flush_counters()
        yield store, crashes


@pytest.fixture(scope="module")
def client(search_store):
    return create_app(search_store[0], now=lambda: NOW).test_client()


@pytest.fixture(scope="module")
def unredacted_client(search_store):
    return create_app(search_store[0], unredacted=True, now=lambda: NOW).test_client()


def _links(html, cls):
    return [unescape(href) for href in re.findall(rf'class="{cls}" href="([^"]+)"', html)]


def _query(url):
    return urllib.parse.parse_qs(urllib.parse.urlsplit(url).query, keep_blank_values=True)


# -- the API ------------------------------------------------------------------------------------


def test_the_api_answers_the_stores_search_in_socorros_shape(client, search_store):
    store, _crashes = search_store
    for path in ("/api/SuperSearch/", "/api/SuperSearch"):
        response = client.get(path)
        assert response.status_code == 200 and response.mimetype == "application/json"
        answer = response.get_json()
        assert set(answer) == {"hits", "total", "facets", "errors"}
        assert answer["total"] == 22  # the last 7 days: the old crash left out
        assert [(f["term"], f["count"]) for f in answer["facets"]["signature"]] == [(OOM, 14), (JS, 5), (HOSTILE_SIG, 3)]
        assert answer == store.super_search({}, now=NOW)


def test_the_api_filters_facets_and_sorts_as_the_store_does(client, search_store):
    store, _crashes = search_store
    query = [("product", "Fenix"), ("_facets", "version"), ("_facets", "_cardinality.platform"),
             ("_sort", "-uptime"), ("_columns", "uuid"), ("_columns", "uptime")]
    answer = client.get("/api/SuperSearch/", query_string=query).get_json()
    assert answer["total"] == 5 and answer["facets"]["version"] == [{"term": "121.0", "count": 5}]
    assert answer["facets"]["cardinality_platform"] == {"value": 1}
    assert [hit["uptime"] for hit in answer["hits"]] == sorted((hit["uptime"] for hit in answer["hits"]), reverse=True)
    assert answer == store.super_search(query, now=NOW)
    assert client.get("/api/SuperSearch/?signature=~OOM").get_json()["total"] == 14
    assert client.get("/api/SuperSearch/?_results_number=0").get_json()["hits"] == []


@pytest.mark.parametrize("query, parameter", [
    ("nonsense=1", "nonsense"),                              # an unknown field
    ("_columns=nonsense", "_columns"),                       # an unknown column
    ("build_id=~2016", "build_id"),                          # an operator the field does not take
    ("product=>x", "product"),
    ("date=>=not-a-date", "date"),                           # a bad date
    ("_results_number=1001", "_results_number"),             # over 1,000
    ("_results_number=abc", "_results_number"),
    ("_results_offset=9950&_results_number=100", "_results_offset"),  # past Socorro's window
    ("_facets=nonsense", "_facets"),
])
def test_a_refused_parameter_is_a_400_naming_it_on_the_api_and_the_page(client, query, parameter):
    api = client.get(f"/api/SuperSearch/?{query}")
    assert api.status_code == 400
    answer = api.get_json()
    assert answer["parameter"] == parameter and parameter in answer["error"]
    page = client.get(f"/search/?{query}")
    html = page.get_data(as_text=True)
    assert page.status_code == 400
    assert f'data-parameter="{parameter}"' in html and 'id="super-search"' in html  # the form is still there


PROTECTED_USES = [f"{PROTECTED[0]}=~x", f"_columns={PROTECTED[0]}", f"_facets={PROTECTED[0]}", f"_sort={PROTECTED[0]}",
                  f"_sort=-{PROTECTED[0]}", f"_aggs.signature={PROTECTED[0]}", f"_facets=_cardinality.{PROTECTED[0]}",
                  f"_histogram.date={PROTECTED[0]}", f"_aggs.signature=_cardinality.{PROTECTED[0]}",
                  *(f"{name}=__null__" for name in PROTECTED)]


@pytest.mark.parametrize("query", PROTECTED_USES)
def test_a_protected_field_anywhere_is_a_403_naming_it_in_public_mode(client, unredacted_client, query):
    field = query.split("=")[0] if not query.startswith("_") else query.split("=")[1].lstrip("-").split(".")[-1]
    api = client.get(f"/api/SuperSearch/?{query}")
    assert api.status_code == 403 and api.get_json()["field"] == field
    page = client.get(f"/search/?{query}")
    assert page.status_code == 403 and 'id="super-search"' in page.get_data(as_text=True)
    assert unredacted_client.get(f"/api/SuperSearch/?{query}").status_code == 200


def test_no_protected_value_leaves_the_store_in_public_mode(client, unredacted_client):
    public = [name for name, field in FIELDS.items() if field.public]
    wide = [("_columns", name) for name in public] + [("_facets", name) for name in public if name != "date"]
    paths = [("/api/SuperSearch/", wide), ("/search/", wide), ("/api/SuperSearch/", [("_aggs.signature", "version")]),
             ("/api/SuperSearch/", [("_histogram.date", "product")]), ("/api/SuperSearchFields/", []),
             ("/search/", [("signature", "~OOM")]), ("/", [])]
    for path, query in paths:
        response = client.get(path, query_string=query)
        body = response.get_data(as_text=True)
        assert response.status_code == 200 and not [s for s in SECRETS if s in body], path
    # the unredacted view does show them: the check above can fail
    body = unredacted_client.get("/api/SuperSearch/", query_string=[("_columns", "email"), ("_facets", "url")]).get_data(as_text=True)
    assert SECRET_EMAIL in body and SECRET_URL in body


def test_unredacted_mode_searches_protected_fields(unredacted_client):
    answer = unredacted_client.get("/api/SuperSearch/", query_string=[
        ("user_comments", "hunter2"), ("product", "Fenix"), ("_columns", "uuid"), ("_columns", "email")]).get_json()
    assert answer["total"] == 5 and {hit["email"] for hit in answer["hits"]} == {SECRET_EMAIL}
    html = unredacted_client.get("/search/", query_string=[("_columns", "email"), ("product", "Fenix")]).get_data(as_text=True)
    assert SECRET_EMAIL in html


def test_the_fields_api_lists_the_fields_the_caller_may_use(client, unredacted_client, search_store):
    store, _crashes = search_store
    for path in ("/api/SuperSearchFields/", "/api/SuperSearchFields"):
        response = client.get(path)
        assert response.status_code == 200 and response.get_json() == store.search_fields(unredacted=False)
    assert unredacted_client.get("/api/SuperSearchFields/").get_json() == store.search_fields(unredacted=True)
    listed = client.get("/api/SuperSearchFields/").get_json()
    names = set(listed) if isinstance(listed, dict) else {f["name"] for f in listed}
    assert {name for name, field in FIELDS.items() if field.public} <= names


def test_search_unavailable_is_a_503_and_never_a_500(search_store, monkeypatch):
    store, _crashes = search_store
    client = create_app(store, now=lambda: NOW).test_client()

    def down(*_args, **_kwargs):
        raise SearchUnavailable("the search engine did not answer")

    monkeypatch.setattr(store, "super_search", down)
    api = client.get("/api/SuperSearch/")
    assert api.status_code == 503 and api.get_json() == {"error": "the search engine did not answer"}
    page = client.get("/search/")
    assert page.status_code == 503 and "the search engine did not answer" in page.get_data(as_text=True)


def test_a_store_with_no_search_says_so_in_one_line(tmp_path):
    with open_store(f"embedded://{tmp_path / 'store'}", search_url="none") as store:
        store.create_tables()
        client = create_app(store, now=lambda: NOW).test_client()
        api = client.get("/api/SuperSearch/")
        assert api.status_code == 501 and "no search configured" in api.get_json()["error"]
        page = client.get("/search/")
        html = page.get_data(as_text=True)
        assert page.status_code == 501
        line = re.search(r'<p id="search-not-configured"[^>]*>([^<]*)</p>', html).group(1)
        assert "no search configured" in line and "\n" not in line
        assert client.get("/").status_code == 200  # the other pages do not mind


@pytest.mark.parametrize("path", ["/search/", "/api/SuperSearch/", "/api/SuperSearchFields/"])
@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
def test_search_is_read_only(client, path, method):
    response = client.open(path, method=method)
    assert response.status_code == 405 and "GET" in response.headers["Allow"]


# -- the page -------------------------------------------------------------------------------------


def test_the_page_shows_signature_facets_with_rank_count_share_and_links(client):
    response = client.get("/search/")
    html = response.get_data(as_text=True)
    assert response.status_code == 200
    facet = html[html.index('id="facet-signature"'):]
    facet = facet[:facet.index("</section>")]
    signature_links = _links(facet, "signature-link")
    assert [_query(link)["signature"] for link in signature_links] == [[OOM], [JS], [HOSTILE_SIG]]
    assert all(urllib.parse.urlsplit(link).path == "/signature/" for link in signature_links)
    cells = [unescape(c) for c in re.findall(r'<td class="num">([^<]*)</td>', facet)]
    assert cells[:3] == ["1", "14", "63.64 %"] and cells[3:6] == ["2", "5", "22.73 %"]
    assert re.search(r'id="search-total">22 crashes found', html)


def test_the_page_lists_hits_linking_their_reports_and_twins_the_api(client):
    html = client.get("/search/", query_string=[("product", "Fenix"), ("_sort", "date")]).get_data(as_text=True)
    api = client.get("/api/SuperSearch/", query_string=[("product", "Fenix"), ("_sort", "date")]).get_json()
    assert _links(html, "crash-link") == [f"/report/index/{hit['uuid']}" for hit in api["hits"]]
    twin = unescape(re.search(r'id="json-twin" href="([^"]+)"', html).group(1))
    assert urllib.parse.urlsplit(twin).path == "/api/SuperSearch/"
    assert _query(twin) == {"product": ["Fenix"], "_sort": ["date"]}
    headers = re.findall(r"<th>([^<]*)</th>", html[html.index("search-results"):])
    assert headers == ["uuid", "date", "signature", "product", "version"]


def test_hostile_strings_are_escaped_on_the_page(client):
    html = client.get("/search/", query_string=[("_facets", "signature"), ("_facets", "product"),
                                                ("_facets", "moz_crash_reason")]).get_data(as_text=True)
    assert "<script>alert(1)</script>" not in html and "<b>Fire&fox</b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;b&gt;Fire&amp;fox&lt;/b&gt;" in html
    assert " style=" not in html and "<script" not in html.replace("&lt;script", "")
    # a hostile filter value, echoed in the form, is text too
    page = client.get("/search/", query_string=[("product", "=" + HOSTILE_SIG)]).get_data(as_text=True)
    assert "<script>alert(1)</script>" not in page and 'value="&lt;script&gt;' in page


def test_paging_walks_every_hit_in_the_apis_order(client):
    everything = client.get("/api/SuperSearch/?_results_number=1000").get_json()["hits"]
    seen, url, pages = [], "/search/?_results_number=5", 0
    while url:
        html = client.get(url).get_data(as_text=True)
        seen.extend(link.rsplit("/", 1)[1] for link in _links(html, "crash-link"))
        pages += 1
        if pages > 1:
            assert 'id="previous-page"' in html
        found = re.search(r'id="next-page" href="([^"]+)"', html)
        url = unescape(found.group(1)) if found else None
    assert pages == 5 and seen == [hit["uuid"] for hit in everything] and len(seen) == 22
    past = client.get("/search/?_results_number=5&_results_offset=100")
    assert past.status_code == 200 and _links(past.get_data(as_text=True), "crash-link") == []


def test_other_facets_are_tabs_after_signature_with_narrowing_links(client):
    html = client.get("/search/", query_string=[("_facets", "product"), ("_facets", "signature"),
                                                ("_facets", "_cardinality.platform"), ("_histogram.date", "product"),
                                                ("_aggs.signature", "version")]).get_data(as_text=True)
    tabs = re.findall(r'<a href="#facet-([^"]+)">', html)
    assert tabs[0] == "signature" and {"product", "cardinality_platform", "histogram_date"} <= set(tabs)
    product = html[html.index('id="facet-product"'):]
    narrow = [_query(link) for link in _links(product[:product.index("</section>")], "narrow-link")]
    assert narrow[0]["product"] == ["=Firefox"] and "_results_offset" not in narrow[0]
    assert re.search(r'id="facet-cardinality_platform">.*?<p class="cardinality">3 distinct values', html, re.S)
    signature = html[html.index('id="facet-signature"'):]
    assert 'data-facet="version"' in signature[:signature.index("</section>")]  # _aggs.signature=version


def test_the_form_composes_shareable_field_operator_value_parameters(client):
    response = client.get("/search/", query_string=[
        ("f", "product"), ("op", "="), ("v", "Fenix"), ("f", "signature"), ("op", "!~"), ("v", "OOM"),
        ("f", "uptime"), ("op", "__null__"), ("v", ""), ("f", ""), ("op", ""), ("v", ""),
        ("date_from", "2016-09-15"), ("date_to", ""), ("_facets", "version"), ("_results_offset", "10")])
    assert response.status_code == 302
    target = response.headers["Location"]
    assert urllib.parse.urlsplit(target).path == "/search/"
    assert urllib.parse.parse_qsl(urllib.parse.urlsplit(target).query) == [
        ("product", "=Fenix"), ("signature", "!~OOM"), ("uptime", "__null__"), ("date", ">=2016-09-15"), ("_facets", "version")]
    html = client.get(target).get_data(as_text=True)
    rows = re.findall(r'<option value="([^"]*)" selected>', html)
    assert rows[:6] == ["product", "=", "signature", "!~", "uptime", "__null__"]
    assert 'name="date_from" value="2016-09-15"' in html
    value_without_field = client.get("/search/", query_string=[("f", ""), ("op", ""), ("v", "Fenix")])
    assert value_without_field.status_code == 400 and 'data-parameter="f"' in value_without_field.get_data(as_text=True)


def test_the_form_shows_the_default_date_range_and_only_fields_the_viewer_may_use(client, unredacted_client):
    html = client.get("/search/").get_data(as_text=True)
    date_from = re.search(r'name="date_from" value="([^"]*)"', html).group(1)
    date_to = re.search(r'name="date_to" value="([^"]*)"', html).group(1)
    assert date_from.startswith("2016-09-11") and date_to.startswith("2016-09-18")
    choices = set(re.findall(r'<option value="([a-z_]+)"', html[html.index('name="f"'):html.index('name="op"')]))
    assert not set(PROTECTED) & choices and "signature" in choices
    unredacted = unredacted_client.get("/search/").get_data(as_text=True)
    assert set(PROTECTED) <= set(re.findall(r'<option value="([a-z_]+)"', unredacted[unredacted.index('name="f"'):]))


def test_the_header_box_still_jumps_to_a_crash_and_the_page_lives_at_search_slash(client, search_store):
    cid = search_store[1][0][0]
    for path in ("/search", "/search/"):
        response = client.get(path, query_string={"q": f" bp-{cid} "})
        assert response.status_code == 302 and response.headers["Location"] == f"/report/index/{cid}"
    assert client.get("/search?q=not-a-crash").status_code == 400
    moved = client.get("/search?product=Fenix")
    assert moved.status_code == 302 and moved.headers["Location"] == "/search/?product=Fenix"
    assert client.get("/search/?q=not-a-crash").status_code == 400  # q is no search field


def test_the_footer_shows_the_search_lag(client, search_store):
    status = search_store[0].search_status()
    for path in ("/", "/search/"):
        html = client.get(path).get_data(as_text=True)
        lag = re.search(r'<span id="search-lag">([^<]*)</span>', html).group(1)
        assert f"{status['pending']:,} pending" in lag
        if status["documents"] is not None:
            assert f"{status['documents']:,} crashes indexed" in lag


def test_the_home_footer_shows_how_far_the_counters_lag(client, search_store):
    status = search_store[0].derivation_status()
    html = client.get("/").get_data(as_text=True)
    lag = re.search(r'<span id="counters-lag">([^<]*)</span>', html).group(1)
    assert lag.startswith(f"counters: {status['waiting']:,} changes waiting")


def test_many_filter_values_keep_the_page_small_and_survive_a_submission(client):
    values = [("product", f"=P{i}") for i in range(999)] + [("product", "=Fenix")]
    response = client.get("/search/", query_string=values)
    html = response.get_data(as_text=True)
    assert response.status_code == 200 and client.get("/api/SuperSearch/", query_string=values).get_json()["total"] == 5
    assert html.count('<div class="filter-row">') == 51 and "950 more filter values" in html
    assert len(html) < 300_000
    hidden = re.findall(r'<input type="hidden" name="product" value="([^"]*)">', html)
    assert hidden == [value for _name, value in values[50:]]
    # the form as a browser submits it: the 50 rows, the empty one, the hidden values
    rows = [(name, value) for row in values[:50] for name, value in (("f", "product"), ("op", "="), ("v", row[1][1:]))]
    submitted = client.get("/search/", query_string=rows + [("f", ""), ("op", ""), ("v", "")]
                           + [("product", value) for value in hidden])
    assert submitted.status_code == 302
    assert urllib.parse.parse_qsl(urllib.parse.urlsplit(submitted.headers["Location"]).query) == values
    refused = client.get("/search/", query_string=[("product", f"P{i}") for i in range(10_000)])
    assert refused.status_code == 400 and 'data-parameter="product"' in refused.get_data(as_text=True)
    assert len(refused.get_data()) < 2_000_000


def test_the_footers_search_figures_are_read_once_for_many_views(search_store, monkeypatch):
    store, _crashes = search_store
    reads = []
    real = store.search_status
    monkeypatch.setattr(store, "search_status", lambda: reads.append(1) or real())
    client = create_app(store, now=lambda: NOW).test_client()
    for path in ("/", "/search/", "/", "/search/?product=Fenix"):
        assert 'id="search-lag"' in client.get(path).get_data(as_text=True)
    assert len(reads) == 1  # the views within STATUS_SECONDS share one read

    from socorro_store.web.search_page import StatusCache  # noqa: PLC0415

    moment = [0.0]
    cache = StatusCache(store, seconds=10, clock=lambda: moment[0])
    cache.get(), cache.get()
    moment[0] = 10.0
    cache.get()
    assert len(reads) == 3
