"""`socorro-store web` in a real browser: Debian's Chromium driven by Playwright (no download).

The journey an operator makes: the home page, a top signature, one of its crashes, its report;
the search box with a pasted ``bp-`` id; hostile strings shown as text, never run.  Every page is
checked for console errors and warnings (a Content-Security-Policy violation is one), page
errors and requests to any other host, and the journey's pages are screenshotted into
``$SOCORRO_STORE_ARTIFACTS`` (default: the test's tmp directory).

The whole module skips, saying what is missing, without Playwright for Python or without
``/usr/bin/chromium`` (``.ci/run`` installs Debian's ``chromium`` when it runs as root).  The
browser is launched once for the module, never downloaded (no ``playwright install``).

The demo's pages (``demo_site``: what ``socorro-store demo`` writes): the report page as
crash-stats shows it (details, crashing thread, modules; no protected annotation), and the
signature page walked by its cursors.  The README's screenshots are the demo's pages::

    SOCORRO_STORE_ARTIFACTS=docs/images pytest -q tests/test_web_browser.py -k readme
"""

import json
import os
import random
import struct
import threading
import urllib.request
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from store_helpers import crash_id, processed, raw_crash

from socorro_store import open_store
from socorro_store.schema import keys as K

CHROMIUM = "/usr/bin/chromium"
sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed "
                               "(pip install 'socorro-store[test]')")
pytest.importorskip("flask", reason="the web view needs Flask (pip install 'socorro-store[web]')")
if not Path(CHROMIUM).exists():
    pytest.skip(f"Debian's chromium is not installed ({CHROMIUM} missing; .ci/run installs it as root)",
                allow_module_level=True)

from werkzeug.serving import make_server  # noqa: E402 - Werkzeug comes with Flask

from socorro_store.web import create_app  # noqa: E402

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
VIEWPORT = {"width": 1200, "height": 900}
PNG = b"\x89PNG\r\n\x1a\n"
# The pages' clock is pinned (and every crash dated before it): "today" and "the last 48 hours"
# never depend on when the tests run, even around midnight UTC.
NOW = datetime(2024, 11, 14, 15, 20, tzinfo=timezone.utc)
TODAY = NOW.replace(hour=0, minute=0)
TOP = "mozilla::dom::ScriptLoader::ProcessRequest"
# From crash reporters: markup, both quotes, an ampersand, unicode (an accent, a snowman, Hebrew
# written right to left), and an attribute breakout for values that land in href="…".
HOSTILE = "<script>window.__xss=1</script> \"'& ñ ☃ שלום"
HOSTILE_ATTR = "\"><img src=x onerror=\"window.__xss=2\">"
PROTECTED = "call me at jane.doe@example.com"  # a Comments annotation: shown only with --unredacted
# The background: crashes over the last two days behind the chart and the home page's top 10.
BACKGROUND = [("js::gc::Arena::finalize", 0.30), ("OOM | small", 0.25), ("mozalloc_abort | abort", 0.20),
              ("IPCError-browser | ShutDownKill", 0.12), ("libxul.so@0x1a2b3c", 0.08),
              ("core::panicking::panic | webrender::renderer", 0.05)]
PRODUCTS = [("Firefox", "132.0.1", "Windows NT"), ("Firefox", "132.0.1", "Linux"), ("Firefox", "133.0b4", "Mac OS X"),
            ("Fenix", "132.0", "Android"), ("Thunderbird", "128.4.2", "Windows NT")]


def _pick(rng, table):
    return rng.choices([value for value, _weight in table], [weight for _value, weight in table])[0]


def _store_crashes(rng):
    """``[(submitted, crash id, signature, product, version, os, extra annotations)]``, newest last.

    The top signature's 25 crashes and the hostile signature's 3 fall in the hour before
    :data:`NOW` (today, whatever the hour); the 60 background crashes spread over the 47 hours
    before that, no signature reaching 25, so today's top signature is :data:`TOP`.
    """
    crashes = []

    def add(submitted, signature, product, version, os_name, **extra):
        cid = crash_id(K.SALTS[len(crashes) % len(K.SALTS)], day=submitted, rng=rng)
        extra = {"ProcessType": rng.choice(["default", "content", "gpu"]), "CPUArchitecture": "amd64",
                 "CrashTime": str(int(submitted.timestamp()) - 3), **extra}
        crashes.append((submitted, cid, signature, product, version, os_name, extra))

    for _ in range(60):
        add(NOW - timedelta(hours=1, seconds=rng.randrange(47 * 3600)), _pick(rng, BACKGROUND), *rng.choice(PRODUCTS))
    for i in range(25):
        add(NOW - timedelta(seconds=3590 - i * 140), TOP, *rng.choice(PRODUCTS))
    for i in range(3):
        add(NOW - timedelta(minutes=50 - i * 15), HOSTILE, "Firefox", "132.0.1", "Linux",
            AbortMessage=HOSTILE, GraphicsCriticalError=HOSTILE_ATTR, Notes="ñ ☃ & <b>not bold</b>",
            Comments=PROTECTED)
    counts = Counter(signature for _s, _c, signature, *_rest in crashes)
    assert max(n for signature, n in counts.items() if signature != TOP) < counts[TOP]
    return sorted(crashes, key=lambda crash: crash[0])


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """``(base URL, {signature: [crash id, newest first]})`` of a threaded Werkzeug server of
    ``create_app`` on 127.0.0.1 (a free port), over an embedded store of saved and processed crashes."""
    crashes = _store_crashes(random.Random(2611))
    with open_store(f"embedded://{tmp_path_factory.mktemp('browser') / 'store'}") as store:
        store.create_tables()
        store.save_raw_crashes([
            (raw_crash(cid, submitted, ProductName=product, Version=version, **extra),
             {"upload_file_minidump": b"MDMP" + bytes(2044)}, cid)
            for submitted, cid, _sig, product, version, _os, extra in crashes])
        store.save_processed_crashes([
            processed(cid, signature=signature, product=product, version=version, os_name=os_name,
                      completeddatetime=(submitted + timedelta(seconds=40)).isoformat())
            for submitted, cid, signature, product, version, os_name, _extra in crashes])
        ids = {}
        for _submitted, cid, signature, *_rest in reversed(crashes):
            ids.setdefault(signature, []).append(cid)
        # make_web_server's own server, with the clock pinned (create_app's now=)
        server = make_server("127.0.0.1", 0, create_app(store, now=lambda: NOW), threaded=True)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_port}", ids
        finally:
            server.shutdown()
            server.server_close()
            thread.join(10)


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium, headless, launched once for the module."""
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            yield launched
        finally:
            launched.close()


def _watched_page(browser, base):
    """A fresh page whose ``problems`` list records console errors and warnings, page errors and
    every request to another origin than ``base``."""
    context = browser.new_context(viewport=VIEWPORT)
    opened = context.new_page()
    opened.problems = []

    def on_console(message):
        if message.type in ("error", "warning"):
            opened.problems.append(f"console {message.type}: {message.text}")

    def on_request(request):
        if not (request.url == base or request.url.startswith(base + "/")):
            opened.problems.append(f"off-origin request: {request.url}")

    opened.on("console", on_console)
    opened.on("pageerror", lambda error: opened.problems.append(f"page error: {error}"))
    opened.on("request", on_request)
    return context, opened


@pytest.fixture
def page(browser, site):
    """A fresh watched page (:func:`_watched_page`) of :func:`site`."""
    context, opened = _watched_page(browser, site[0])
    yield opened
    context.close()


@pytest.fixture(scope="module")
def demo_site(tmp_path_factory):
    """``(base URL, store)``: a server over what ``socorro-store demo`` writes (1,500 crashes
    submitted today up to :data:`NOW`, processed by its processors)."""
    from socorro_store.demo import run_demo  # noqa: PLC0415

    url = f"embedded://{tmp_path_factory.mktemp('demo') / 'store'}"
    run_demo(url, crashes=1500, processors=2, dump_kb=2, seed=33, now=NOW)
    with open_store(url) as store:
        server = make_server("127.0.0.1", 0, create_app(store, now=lambda: NOW), threaded=True)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_port}", store
        finally:
            server.shutdown()
            server.server_close()
            thread.join(10)


@pytest.fixture
def demo_page(browser, demo_site):
    context, opened = _watched_page(browser, demo_site[0])
    yield opened
    context.close()


@pytest.fixture
def artifacts(tmp_path):
    where = Path(os.environ.get("SOCORRO_STORE_ARTIFACTS") or tmp_path)
    where.mkdir(parents=True, exist_ok=True)
    return where


def _png_size(data):
    """``(width, height)`` of a PNG (its IHDR chunk), after checking the signature."""
    assert data[:8] == PNG and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def _shot(page, artifacts, name):
    path = artifacts / f"web-{name}.png"
    page.screenshot(path=str(path), full_page=False)
    assert _png_size(path.read_bytes()) == (VIEWPORT["width"], VIEWPORT["height"])
    return path


def _visible_chart(page):
    chart = page.locator("svg.chart").first
    chart.wait_for(state="visible")
    box = chart.bounding_box()
    assert box["width"] > 100 and box["height"] > 20
    assert chart.locator("rect").count() > 1  # bars drawn, not an empty frame


def test_journey_home_to_signature_to_report(page, site, artifacts):
    base, ids = site
    response = page.goto(base + "/")
    assert response.status == 200
    _visible_chart(page)
    links = page.locator("a.signature-link")
    assert 1 < links.count() <= 10
    assert TOP in links.all_inner_texts() and HOSTILE in links.all_inner_texts()
    _shot(page, artifacts, "journey-home")

    first = links.first
    assert first.inner_text() == TOP  # today's top signature, ranked first
    first.click()
    page.wait_for_url("**/signature/?**")
    assert urlsplit(page.url).path == "/signature/"
    assert parse_qs(urlsplit(page.url).query)["signature"] == [TOP]
    assert page.locator("h1#signature").inner_text() == TOP
    _visible_chart(page)
    crash_links = page.locator("a.crash-link")
    assert crash_links.all_inner_texts() == ids[TOP]  # every crash of it, newest first
    _shot(page, artifacts, "journey-signature")

    newest = ids[TOP][0]
    crash_links.first.click()
    page.wait_for_url(f"**/report/index/{newest}")
    assert page.locator("#crash-id").inner_text() == newest
    assert page.locator("#processing-state").is_visible()
    assert TOP in page.locator("#processing-state").inner_text()
    _shot(page, artifacts, "journey-report")
    assert page.problems == []


def test_topcrashers_links_to_signatures(page, site):
    base, _ids = site
    page.goto(base + "/topcrashers/?days=3")
    links = page.locator("a.signature-link")
    names = links.all_inner_texts()
    assert names[0] == TOP and set(names) == {TOP, HOSTILE} | {name for name, _w in BACKGROUND}
    links.nth(1).click()
    page.wait_for_url("**/signature/?**")
    assert page.locator("h1#signature").inner_text() == names[1]
    assert page.problems == []


def test_topcrashers_filtered_by_process_type_in_the_form(page, site):
    base, _ids = site
    page.goto(base + "/topcrashers/?days=3")
    headers = page.locator("th.pt").all_inner_texts()
    assert headers[-1] == "other process" and set(headers[:-1]) <= {"parent", "content", "gpu"}
    page.select_option("select[name=process_type]", "content")
    page.locator("form.filters button[type=submit]").click()
    page.wait_for_url("**process_type=content**")
    with urllib.request.urlopen(base + "/api/topcrashers?days=3&process_type=content") as response:
        expected = [s["signature"] for s in json.load(response)["signatures"]]
    assert expected and page.locator("a.signature-link").all_inner_texts() == expected
    assert page.locator("select[name=process_type]").input_value() == "content"
    assert page.locator("th.pt").count() == 0  # one process type shown: no split columns
    assert page.problems == []


def test_search_box_takes_a_pasted_bp_id(page, site):
    base, ids = site
    target = ids[HOSTILE][-1]
    page.goto(base + "/topcrashers/")
    page.fill("#search input[name=q]", f"  bp-{target} ")
    page.press("#search input[name=q]", "Enter")
    page.wait_for_url(f"**/report/index/{target}")
    assert page.locator("#crash-id").inner_text() == target
    assert page.problems == []


def test_hostile_strings_are_shown_as_text_and_never_run(page, site):
    base, ids = site
    page.goto(base + "/")
    link = page.locator("a.signature-link", has_text="window.__xss")
    assert link.inner_text() == HOSTILE
    link.click()
    page.wait_for_url("**/signature/?**")
    assert parse_qs(urlsplit(page.url).query)["signature"] == [HOSTILE]  # the link carried it intact
    assert page.locator("h1#signature").inner_text() == HOSTILE
    assert page.locator("main script, main img").count() == 0
    assert page.evaluate("typeof window.__xss") == "undefined"

    page.locator("a.crash-link").first.click()
    page.wait_for_url(f"**/report/index/{ids[HOSTILE][0]}")
    raw = page.locator("#raw-crash").inner_text()
    assert HOSTILE in raw and HOSTILE_ATTR in raw and "ñ ☃ & <b>not bold</b>" in raw
    assert "jane.doe" not in page.locator("main").inner_text()
    assert HOSTILE in page.locator("#processing-state").inner_text()
    assert page.locator("main script, main img, main b").count() == 0
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert page.problems == []


def test_the_browser_enforces_the_content_security_policy(page, site):
    """Markup that slipped into a page could neither run script nor reach another host: the
    browser refuses both under the page's CSP, and ``problems`` records the refusals and the
    attempt (so the other tests' empty ``problems`` means none happened)."""
    base, _ids = site
    failed = {}
    page.on("requestfailed", lambda request: failed.setdefault(request.url, request.failure))
    page.goto(base + "/")
    assert page.problems == []
    page.evaluate("""() => document.body.insertAdjacentHTML('beforeend',
        '<img id="probe" src="/nothing-here.png" onerror="window.__csp = 1">' +
        '<img src="http://192.0.2.1/tracker.png">')""")
    page.wait_for_timeout(300)  # let the images fail and the console messages arrive
    assert page.evaluate("typeof window.__csp") == "undefined"
    refusals = [p for p in page.problems if "Content Security Policy" in p]
    assert any("inline event handler" in p for p in refusals), page.problems
    assert any("192.0.2.1" in p for p in refusals), page.problems
    # the attempt is seen (the journey's "no off-origin request" check would catch it) and blocked
    assert "off-origin request: http://192.0.2.1/tracker.png" in page.problems
    assert failed["http://192.0.2.1/tracker.png"] == "csp"  # Chromium: blocked:csp


def test_error_pages_render_without_console_errors(page, site):
    base, _ids = site
    for path, status in (("/report/index/not-a-crash", 400), ("/nope", 404), ("/topcrashers/?days=0", 400),
                         (f"/report/index/{crash_id('0', day=NOW, rng=random.Random(1))}", 404)):
        response = page.goto(base + path)
        assert response.status == status and page.locator("h1.error").inner_text() == str(status)
        assert page.locator("#search input[name=q]").is_visible()
    # Chromium logs the document's own 4xx status, once per page; nothing else may appear
    assert len(page.problems) == 4
    assert [p for p in page.problems if "the server responded with a status of 4" not in p] == []


def test_the_readme_screenshots_are_the_demos():
    """docs/images/web-*.png, shown by the README, are what the demo's screenshots test saves
    (the module docstring's command): PNGs of the viewport, small enough for the repository."""
    images = Path(__file__).resolve().parent.parent / "docs" / "images"
    for name in ("home", "signature", "report"):
        data = (images / f"web-{name}.png").read_bytes()
        assert _png_size(data) == (VIEWPORT["width"], VIEWPORT["height"]) and len(data) < 300_000


def _demo_crash(store, wanted):
    """The newest crash of the demo whose raw crash satisfies ``wanted``."""
    start = NOW.replace(hour=0, minute=0)
    for cid in reversed(list(store.crashes_submitted(start, NOW))):
        raw = store.get_raw_crash(cid)
        if wanted(raw):
            return cid, raw
    raise AssertionError("the demo wrote no such crash")


def test_readme_screenshots_of_the_demo(demo_page, demo_site, artifacts):
    base, _store = demo_site
    page = demo_page
    assert page.goto(base + "/").status == 200
    _visible_chart(page)
    today = page.locator("p.meta", has_text="processed crashes today").inner_text()
    assert int(today.split(" ")[0].replace(",", "")) > 1000
    _shot(page, artifacts, "home")
    page.locator("a.signature-link").first.click()
    page.wait_for_url("**/signature/?**")
    _visible_chart(page)
    page.locator("table.crashes").scroll_into_view_if_needed()
    page.evaluate("window.scrollTo(0, 0)")
    _shot(page, artifacts, "signature")
    page.locator("a.crash-link").first.click()
    page.wait_for_url("**/report/index/**")
    assert page.locator("table.frames tbody tr").count() >= 3
    _shot(page, artifacts, "report")
    assert page.problems == []


def test_report_page_as_crash_stats_shows_it(demo_page, demo_site):
    base, store = demo_site
    cid, raw = _demo_crash(store, lambda raw: "Comments" in raw and "HangID" not in raw)
    processed = store.get_unredacted_processed(cid)
    page = demo_page
    assert page.goto(f"{base}/report/index/{cid}").status == 200
    details = dict(row.split("\t", 1) for row in page.locator("#details-table tr").all_inner_texts())
    for label, field in (("OS", "os_name"), ("OS Version", "os_pretty_version"), ("Crash Reason", "reason"),
                         ("Crash Address", "address"), ("Build ID", "build"), ("Process Type", "process_type"),
                         ("Release Channel", "release_channel"), ("Build Architecture", "cpu_arch")):
        assert details[label] == str(processed[field]), label
    assert details["Date Processed"].endswith(" UTC") and details["Startup Crash"] in ("yes", "no")
    functions = page.locator("table.frames td.function").all_inner_texts()
    top = processed["signature"].split(" | ")[0]
    assert functions[0].startswith(top) or processed["signature"].startswith(("OOM", "libxul", "IPCError"))
    modules = page.locator("table.modules tbody tr").all_inner_texts()
    assert len(modules) == len(processed["json_dump"]["modules"]) and processed["json_dump"]["modules"][0]["debug_id"] in modules[0]
    page.click("nav.tabs a[href='#modules']")
    assert page.url.endswith("#modules") and page.locator("#modules").is_visible()
    text = page.locator("main").inner_text()
    assert raw["Comments"] not in text and raw["URL"] not in text and "someone@example.com" not in text
    assert "protected or unlisted annotations left out" in text
    assert page.problems == []


def test_signature_pages_walked_by_their_cursors(demo_page, demo_site):
    base, store = demo_site
    page = demo_page
    page.goto(base + "/")
    page.locator("a.signature-link").first.click()
    page.wait_for_url("**/signature/?**")
    signature = page.locator("h1#signature").inner_text()
    every = list(reversed(list(store.crashes_by_signature(signature))))  # newest first
    assert len(every) > 100
    seen, pages = [], []
    while True:
        ids = page.locator("a.crash-link").all_inner_texts()
        assert 0 < len(ids) <= 50
        pages.append(ids)
        seen += ids
        older = page.locator("a.pager-older")
        if older.count() == 0:
            break
        older.click()
        page.wait_for_url("**before=**")
        assert page.locator("a.pager-newer").count() == 1
    assert seen == every and len(pages) == -(-len(every) // 50)
    page.locator("a.pager-newer").click()
    page.wait_for_url("**after=**")
    assert page.locator("a.crash-link").all_inner_texts() == pages[-2]
    page.locator("a.pager-newest").click()
    assert page.locator("a.crash-link").all_inner_texts() == pages[0] and page.locator("a.pager-newer").count() == 0
    response = page.goto(base + "/signature/?signature=x&before=not-a-cursor")
    assert response.status == 400 and "not a page cursor" in page.locator("#error-message").inner_text()
    assert [p for p in page.problems if "status of 400" not in p] == []


def test_unfiltered_top_crashers_fit_a_1400_px_window(demo_page, demo_site):
    """Issue 39: at 1,400 px the process columns and First appearance were cut off behind a
    horizontal scrollbar; the internal markers (``##null##``, ``##other##``) were shown as they
    are stored, in the ranking and in the process-type menu."""
    base, _store = demo_site
    page = demo_page
    page.set_viewport_size({"width": 1400, "height": 900})
    assert page.goto(base + "/topcrashers/").status == 200
    assert page.locator("th.os").count() >= 3 and page.locator("th.pt").count() >= 3
    width = page.evaluate("document.documentElement.clientWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    headers = page.locator("table.top thead th")
    assert "First appearance" in headers.last.inner_text()
    for header in headers.all():
        box = header.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width, header.inner_text()
    assert "(no signature)" in page.locator("a.signature-link").all_inner_texts()
    options = page.locator("select[name=process_type] option")
    assert "(other)" in options.all_inner_texts() and "##" not in page.locator("main").inner_text()
    assert "##" not in " ".join(options.all_inner_texts())
    assert page.problems == []
