"""`socorro-store web` in a real browser: Debian's Chromium driven by Playwright (no download).

The journey an operator makes: the home page, a top signature, one of its crashes, its report;
the search box with a pasted ``bp-`` id; hostile strings shown as text, never run.  Every page is
checked for console errors, page errors and requests to any other host, and screenshotted
into ``$SOCORRO_STORE_ARTIFACTS`` (default: the test's tmp directory).
"""

import os
import random
import shutil
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from store_helpers import BASE_TIME, crash_id, processed, raw_crash

from socorro_store import open_store
from socorro_store.schema import keys as K

CHROMIUM = "/usr/bin/chromium"
sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed")
pytest.importorskip("flask", reason="the web view needs Flask")
if not Path(CHROMIUM).exists():
    pytest.skip(f"Debian's chromium is not installed ({CHROMIUM} missing; .ci/run installs it as root)",
                allow_module_level=True)

from socorro_store.web import make_web_server  # noqa: E402

HOSTILE = "<script>window.__xss=1</script> \"q\" 'a' & ñ ☃"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A server on 127.0.0.1 over a store whose crashes were submitted in the last hour."""
    from datetime import datetime, timezone  # noqa: PLC0415

    now = datetime.now(timezone.utc).replace(microsecond=0)
    rng = random.Random(2026)
    with open_store(f"embedded://{tmp_path_factory.mktemp('browser') / 'store'}") as store:
        store.create_tables()
        ids = {}
        for n, (signature, count) in enumerate((("mozilla::dom::Crash", 5), (HOSTILE, 2))):
            for i in range(count):
                submitted = now - timedelta(minutes=5 + n * 10 + i)
                cid = crash_id(K.SALTS[i], day=submitted, rng=rng)
                store.save_raw_crash(raw_crash(cid, submitted, Comments=HOSTILE), {"upload_file_minidump": b"MDMP"}, cid)
                store.save_processed(processed(cid, signature=signature, product="Firefox", os_name="Linux"))
                ids.setdefault(signature, []).append(cid)
        server = make_web_server(store, "127.0.0.1", 0)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_port}", ids
        finally:
            server.shutdown()
            server.server_close()


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser, site):
    """A page that records console errors, page errors and any request leaving the server."""
    base, _ids = site
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    opened = context.new_page()
    opened.problems = []
    opened.on("console", lambda msg: msg.type in ("error", "warning") and opened.problems.append(f"console {msg.type}: {msg.text}"))
    opened.on("pageerror", lambda exc: opened.problems.append(f"page error: {exc}"))
    opened.on("request", lambda req: req.url.startswith(base) or opened.problems.append(f"off-origin request: {req.url}"))
    yield opened
    context.close()


@pytest.fixture
def artifacts(tmp_path):
    where = Path(os.environ.get("SOCORRO_STORE_ARTIFACTS") or tmp_path)
    where.mkdir(parents=True, exist_ok=True)
    return where


def _shot(page, artifacts, name):
    path = artifacts / f"web-{name}.png"
    page.screenshot(path=str(path), full_page=False)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 1000
    return path


def test_home_to_signature_to_report(page, site, artifacts):
    base, ids = site
    page.goto(base + "/")
    chart = page.locator("svg.chart").first
    assert chart.is_visible() and chart.bounding_box()["width"] > 100
    _shot(page, artifacts, "home")
    first = page.locator("a.signature-link").first
    assert first.inner_text() == "mozilla::dom::Crash"
    first.click()
    page.wait_for_url("**/signature/?signature=*")
    assert page.locator("h1#signature").inner_text() == "mozilla::dom::Crash"
    assert page.locator("svg.chart").count() == 2
    _shot(page, artifacts, "signature")
    crash = page.locator("a.crash-link").first
    newest = crash.inner_text()
    assert newest == ids["mozilla::dom::Crash"][0]  # the newest crash is listed first
    crash.click()
    page.wait_for_url(f"**/report/index/{newest}")
    assert page.locator("#crash-id").inner_text() == newest
    assert page.locator("#processing-state").is_visible()
    _shot(page, artifacts, "report")
    assert page.problems == []


def test_search_box_takes_a_pasted_bp_id(page, site):
    base, ids = site
    target = ids[HOSTILE][0]
    page.goto(base + "/topcrashers/")
    page.fill("#search input[name=q]", f"  bp-{target} ")
    page.press("#search input[name=q]", "Enter")
    page.wait_for_url(f"**/report/index/{target}")
    assert page.locator("#crash-id").inner_text() == target
    assert page.problems == []


def test_hostile_strings_are_shown_as_text_and_never_run(page, site):
    base, ids = site
    page.goto(base + "/")
    page.locator("a.signature-link", has_text="window.__xss").click()
    page.wait_for_url("**/signature/**")
    assert page.locator("h1#signature").inner_text() == HOSTILE
    assert page.evaluate("typeof window.__xss") == "undefined"
    page.locator("a.crash-link").first.click()
    page.wait_for_url("**/report/index/*")
    assert HOSTILE in page.locator("#raw-crash").inner_text()
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert page.problems == []


def test_error_pages_render_without_console_errors(page, site):
    base, _ids = site
    for path, status in (("/report/index/not-a-crash", 400), ("/nope", 404), ("/topcrashers/?days=0", 400)):
        response = page.goto(base + path)
        assert response.status == status and page.locator("h1.error").inner_text() == str(status)
    # Chromium logs the document's own 4xx status; nothing else may appear
    assert [p for p in page.problems if "the server responded with a status of 4" not in p] == []
    assert len(page.problems) == 3


def test_the_readme_screenshots_come_from_this_journey():
    """docs/images/web-*.png are what `SOCORRO_STORE_ARTIFACTS=docs/images pytest tests/test_web_browser.py` saves."""
    images = Path(__file__).resolve().parent.parent / "docs" / "images"
    for name in ("home", "signature", "report"):
        data = (images / f"web-{name}.png").read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) < 400_000
    assert shutil.which("chromium") or Path(CHROMIUM).exists()
