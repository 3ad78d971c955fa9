"""Super Search (``/search/``) in a real browser: Debian's Chromium driven by Playwright.

The journey: open the page, fill a filter row and choose the facets, submit, read the total,
the results and the facet tabs (tabs switched by their links, no script), page through the
results, follow a signature to its page.  Every page is watched for console errors and
warnings (a Content-Security-Policy violation is one), page errors and requests to another host,
and screenshotted into ``$SOCORRO_STORE_ARTIFACTS`` (default: the test's tmp directory).  The
launch flags, watchers and screenshots are ``test_web_browser.py``'s; the module skips as it does.
"""

import json
import random
import threading
import urllib.request
from datetime import timedelta
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from store_helpers import crash_id, processed, raw_crash
from test_web_browser import ARGS, CHROMIUM, HOSTILE, NOW, _shot, _watched_page  # also its skips

from socorro_store import open_store
from socorro_store.schema import keys as K

sync_api = pytest.importorskip("playwright.sync_api")
from werkzeug.serving import make_server  # noqa: E402 - Werkzeug comes with Flask

from socorro_store.web import create_app  # noqa: E402

TOP = "mozilla::dom::ScriptLoader::ProcessRequest"
OTHERS = ["OOM | small", "js::gc::Arena::finalize", HOSTILE]
PER_PAGE = 10


def _crashes(rng):
    """``[(submitted, crash id, signature, product, version)]``: 23 Firefox crashes of TOP, 12
    Firefox and 6 Fenix crashes of the others, over the 3 days before NOW."""
    crashes = []

    def add(signature, product, version):
        submitted = NOW - timedelta(seconds=rng.randrange(1, 3 * 86400))
        crashes.append((submitted, crash_id(K.SALTS[len(crashes) % 16], day=submitted, rng=rng), signature, product, version))

    for i in range(23):
        add(TOP, "Firefox", "132.0.1" if i % 3 else "133.0b4")
    for i in range(12):
        add(OTHERS[i % 3], "Firefox", "132.0.1")
    for i in range(6):
        add(OTHERS[i % 3], "Fenix", "132.0")
    return crashes


@pytest.fixture(scope="module")
def search_site(tmp_path_factory):
    """``(base URL, crashes)``: a threaded Werkzeug server of ``create_app`` (clock pinned) over
    an embedded store whose crashes were saved and processed through the store's API."""
    crashes = _crashes(random.Random(4040))
    with open_store(f"embedded://{tmp_path_factory.mktemp('search-browser') / 'store'}") as store:
        store.create_tables()
        store.save_raw_crashes([(raw_crash(cid, submitted, ProductName=product, Version=version),
                                 {"upload_file_minidump": b"MDMP" + bytes(60)}, cid)
                                for submitted, cid, _sig, product, version in crashes])
        store.save_processed_crashes([
            processed(cid, signature=signature, product=product, version=version, os_name="Windows NT",
                      date_processed=submitted.isoformat())
            for submitted, cid, signature, product, version in crashes])
        store.settle()
        server = make_server("127.0.0.1", 0, create_app(store, now=lambda: NOW), threaded=True)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_port}", crashes
        finally:
            server.shutdown()
            server.server_close()
            thread.join(10)


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser, search_site):
    context, opened = _watched_page(browser, search_site[0])
    yield opened
    context.close()


@pytest.fixture
def artifacts(tmp_path):
    import os  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    where = Path(os.environ.get("SOCORRO_STORE_ARTIFACTS") or tmp_path)
    where.mkdir(parents=True, exist_ok=True)
    return where


def _api(base, query):
    with urllib.request.urlopen(f"{base}/api/SuperSearch/?{urlencode(query)}") as response:
        return json.load(response)


def test_search_journey_filter_facets_pages_and_a_signature(page, search_site, artifacts):
    base, crashes = search_site
    response = page.goto(f"{base}/search/?_results_number={PER_PAGE}")
    assert response.status == 200 and "script-src 'none'" in response.headers["content-security-policy"]
    assert page.locator("#search-total").inner_text().startswith(f"{len(crashes)} crashes found")
    _shot(page, artifacts, "search-start")

    page.select_option("select[name=f] >> nth=0", "product")
    page.select_option("select[name=op] >> nth=0", "=")
    page.fill("input[name=v] >> nth=0", "Firefox")
    page.select_option("select[name=_facets]", ["signature", "version"])
    page.locator("#super-search button[type=submit]").click()
    page.wait_for_url("**/search/?**product=**")
    query = parse_qs(urlsplit(page.url).query)
    assert query["product"] == ["=Firefox"] and query["_facets"] == ["signature", "version"]
    assert query["_results_number"] == [str(PER_PAGE)] and "date" in query  # the form's date range, kept
    expected = _api(base, [(k, v) for k, values in query.items() for v in values if k != "_results_number"]
                    + [("_results_number", "1000")])
    assert expected["total"] == 35
    assert page.locator("#search-total").inner_text().startswith("35 crashes found")

    # the facet tabs: signature first and shown; the version tab's link shows version's instead
    assert page.locator("nav.facet-tabs a").all_inner_texts() == ["signature", "version"]
    signature_facet, version_facet = page.locator("#facet-signature"), page.locator("#facet-version")
    assert signature_facet.is_visible() and not version_facet.is_visible()
    links = signature_facet.locator("a.signature-link")
    assert links.all_inner_texts() == [f["term"] for f in expected["facets"]["signature"]]
    assert links.first.inner_text() == TOP
    assert signature_facet.locator("tbody tr").first.locator("td").all_inner_texts()[2:4] == ["23", "65.71 %"]
    _shot(page, artifacts, "search-results")
    page.locator("nav.facet-tabs a", has_text="version").click()
    version_facet.wait_for(state="visible")
    assert not signature_facet.is_visible()
    assert version_facet.locator("td.term").all_inner_texts() == [f["term"] for f in expected["facets"]["version"]]
    _shot(page, artifacts, "search-facet-tab")

    # paging: every hit once, in the API's order
    first_page, seen = page.url, []
    while True:
        seen.extend(page.locator("a.crash-link").all_inner_texts())
        following = page.locator("#next-page")
        if following.count() == 0:
            break
        following.click()
        page.wait_for_url("**_results_offset=**")
    assert seen == [hit["uuid"] for hit in expected["hits"]]
    assert page.locator("#previous-page").is_visible()

    # a signature of the facet leads to its page
    page.goto(first_page)  # still on the version tab (its #facet-version)
    assert not signature_facet.is_visible()
    page.locator("nav.facet-tabs a", has_text="signature").click()
    page.locator("#facet-signature a.signature-link").first.click()
    page.wait_for_url("**/signature/?**")
    assert page.locator("h1#signature").inner_text() == TOP
    assert page.problems == []


def test_hostile_signatures_are_text_on_the_search_page(page, search_site):
    base, _crashes = search_site
    page.goto(f"{base}/search/?{urlencode([('signature', '=' + HOSTILE), ('_columns', 'uuid'), ('_columns', 'signature')])}")
    assert page.locator("#facet-signature a.signature-link").all_inner_texts() == [HOSTILE]
    assert page.locator("input[name=v]").first.input_value() == HOSTILE
    assert page.locator("main script, main img").count() == 0
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert page.problems == []


def test_a_bad_parameter_shows_its_error_beside_the_form(page, search_site):
    base, _crashes = search_site
    response = page.goto(f"{base}/search/?_results_number=1001")
    assert response.status == 400
    assert "_results_number" in page.locator("#search-error").inner_text()
    assert page.locator("#super-search").is_visible()
    # Chromium logs the document's own 4xx status; nothing else may appear
    assert [p for p in page.problems if "the server responded with a status of 4" not in p] == []
