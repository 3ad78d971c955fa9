"""The report page (issue 33, part 3): details, crashing thread and modules read from Socorro's
processor output, and the allowlist of public fields (`web/public_fields.json`), on the page and
in `/api/report/<id>`, with and without `--unredacted`.
"""

import json
import random
import re
from datetime import timedelta

import pytest
from store_helpers import BASE_TIME, crash_id, processed, raw_crash

from socorro_store import open_store

pytest.importorskip("flask", reason="the web view needs Flask (pip install 'socorro-store[web]')")
from socorro_store.web import create_app  # noqa: E402
from socorro_store.web.public_fields import PublicFields  # noqa: E402

NOW = BASE_TIME + timedelta(hours=3)
EMAIL = "jane.doe@example.com"
TOKEN = "tok_9f8e7d6c5b4a"
CLIENT_ID = "4b1e2c3d-5e6f-4a1b-9c8d-7e6f5a4b3c2d"
SECRETS = (EMAIL, TOKEN, CLIENT_ID, "hunter2-breadcrumb", "rsp-0x7ffd1234", "https://bank.example/")
FRAMES = [
    {"frame": 0, "module": "xul.dll", "function": "mozilla::dom::ScriptLoader::ProcessRequest(mozilla::dom::ScriptLoadRequest*)",
     "file": "hg:hg.mozilla.org/mozilla-central:dom/script/ScriptLoader.cpp:4f3a", "line": 2811, "offset": "0x7ffa1234",
     "module_offset": "0x1234", "registers": {"rip": "0x7ffa1234", "rsp": "rsp-0x7ffd1234"}, "trust": "context"},
    {"frame": 1, "module": "xul.dll", "function": "nsThread::ProcessNextEvent(bool, bool*)", "file": "xpcom/threads/nsThread.cpp",
     "line": 1148, "trust": "cfi"},
    {"frame": 2, "module": "ntdll.dll", "module_offset": "0x9a2c", "trust": "scan"},
]
MODULES = [{"filename": "xul.dll", "version": "132.0.1.9012", "debug_id": "8E2A1B3C4D5E6F708192A3B4C5D6E7F81",
            "debug_file": "xul.pdb", "code_id": "6723A1B2c4e5000", "base_addr": "0x7ffa0000"},
           {"filename": "ntdll.dll", "version": "10.0.22621.2506", "debug_id": "1F2E3D4C5B6A79880F1E2D3C4B5A6978C1",
            "debug_file": "ntdll.pdb"}]


def _socorro_processed(cid, shape="crashing_thread"):
    """A processed crash as Socorro's processor writes it, with protected fields too."""
    dump = {"crash_info": {"type": "EXCEPTION_ACCESS_VIOLATION_READ", "address": "0x0", "crashing_thread": 0},
            "modules": MODULES, "system_info": {"os": "Windows NT", "os_ver": "10.0.22621", "cpu_arch": "amd64",
                                                "cpu_info": "AuthenticAMD family 25 model 80 stepping 0", "cpu_count": 16},
            "thread_count": 2, "pid": 4242, "soft_errors": [{"detail": EMAIL}], "sensitive": {"exploitability": "high"}}
    threads = [{"thread_name": "Main Thread", "frames": FRAMES}, {"thread_name": "Timer", "frames": FRAMES[1:]}]
    if shape == "crashing_thread":
        dump["crashing_thread"] = {"thread_index": 0, "thread_name": "Main Thread", "frames": FRAMES}
        dump["threads"] = threads
    else:  # only threads[] and the index: older processed crashes
        dump["threads"] = threads
    return processed(
        cid, signature="mozilla::dom::ScriptLoader::ProcessRequest", product="Firefox", version="132.0.1",
        release_channel="release", build="20241104181025", os_name="Windows NT", os_pretty_version="Windows 11",
        cpu_arch="amd64", cpu_info="AuthenticAMD family 25 model 80 stepping 0", reason="EXCEPTION_ACCESS_VIOLATION_READ",
        address="0x0", uptime=3725, install_age=864000, process_type="content", startup_crash=False,
        app_notes="AdapterVendorID: 0x1002\nD3D11 Layers+", processor_notes="signature generator: ok",
        date_processed="2016-09-18T13:00:05.123456+00:00", crashing_thread=0, json_dump=dump,
        user_comments=f"it crashed, mail me at {EMAIL}", url=f"https://bank.example/?token={TOKEN}",
        glean_client_id=CLIENT_ID, breadcrumbs=[{"message": "hunter2-breadcrumb"}], email=EMAIL)


@pytest.fixture(scope="module")
def report_store(tmp_path_factory):
    rng = random.Random(33)
    ids = {}
    with open_store(f"embedded://{tmp_path_factory.mktemp('report') / 'store'}") as store:
        store.create_tables()
        for name, shape in (("full", "crashing_thread"), ("threads", "threads"), ("partial", None)):
            cid = ids[name] = crash_id(K_SALT[name], rng=rng)
            store.save_raw_crash(raw_crash(cid, BASE_TIME + timedelta(minutes=5), Comments=f"mail {EMAIL}",
                                           URL=f"https://bank.example/?token={TOKEN}", GleanClientId=CLIENT_ID,
                                           ServerURL=f"https://crash-reports.example/submit?token={TOKEN}",
                                           CustomUnlistedAnnotation=EMAIL, ProcessType="content"),
                                 {"upload_file_minidump": b"MDMP" + bytes(28)}, cid)
            if shape is None:  # a processed crash holding only some fields, of odd types
                store.save_processed(processed(cid, signature="partial", os_name="Linux", uptime="not a number",
                                               json_dump={"threads": "garbage", "modules": [1, None, {"filename": "a.so"}]},
                                               crashing_thread=7))
            else:
                store.save_processed(_socorro_processed(cid, shape))
        store.flush_counters()
        yield store, ids


K_SALT = {"full": "1", "threads": "2", "partial": "3"}


@pytest.fixture(scope="module")
def client(report_store):
    return create_app(report_store[0], now=lambda: NOW).test_client()


@pytest.fixture(scope="module")
def unredacted(report_store):
    return create_app(report_store[0], unredacted=True, now=lambda: NOW).test_client()


def _detail(html, label):
    found = re.search(rf"<th>{re.escape(label)}</th><td>(.*?)</td></tr>", html, re.S)
    return found.group(1) if found else None


@pytest.mark.parametrize("name", ["full", "threads"])
def test_details_crashing_thread_and_modules_as_crash_stats_shows_them(client, report_store, name):
    cid = report_store[1][name]
    html = client.get(f"/report/index/{cid}").get_data(as_text=True)
    expected = {"Product": "Firefox", "Version": "132.0.1", "Release Channel": "release", "Build ID": "20241104181025",
                "OS": "Windows NT", "OS Version": "Windows 11", "Build Architecture": "amd64",
                "CPU Info": "AuthenticAMD family 25 model 80 stepping 0", "Crash Reason": "EXCEPTION_ACCESS_VIOLATION_READ",
                "Crash Address": "0x0", "Uptime": "3,725 seconds (1 h 2 min)", "Install Age": "864,000 seconds (10 d)",
                "Process Type": "content", "Processor Notes": "signature generator: ok", "Startup Crash": "no",
                "Date Processed": "2016-09-18 13:00:05 UTC"}
    assert {label: _detail(html, label) for label in expected} == expected
    assert "D3D11 Layers+" in _detail(html, "App Notes")
    frames = re.findall(r'<td class="function">(.*?)</td><td class="source">(.*?)</td>', html)
    assert frames == [("mozilla::dom::ScriptLoader::ProcessRequest(mozilla::dom::ScriptLoadRequest*)",
                       "hg:hg.mozilla.org/mozilla-central:dom/script/ScriptLoader.cpp:4f3a:2811"),
                      ("nsThread::ProcessNextEvent(bool, bool*)", "xpcom/threads/nsThread.cpp:1148"),
                      ("ntdll.dll@0x9a2c", "")]
    assert "Crashing thread (0, Main Thread)" in html
    assert "8E2A1B3C4D5E6F708192A3B4C5D6E7F81" in html and "xul.pdb" in html and "10.0.22621.2506" in html
    data = client.get(f"/api/report/{cid}").get_json()
    assert [f["function"] for f in data["crashing_thread"]["frames"]][1] == "nsThread::ProcessNextEvent(bool, bool*)"
    assert [m["filename"] for m in data["modules"]] == ["xul.dll", "ntdll.dll"]
    assert {d["label"]: d["text"] for d in data["details"]}["OS"] == "Windows NT"


def test_a_crash_with_only_some_fields_shows_what_it_has(client, report_store):
    cid = report_store[1]["partial"]
    response = client.get(f"/report/index/{cid}")
    html = response.get_data(as_text=True)
    assert response.status_code == 200
    assert _detail(html, "OS") == "Linux" and _detail(html, "Uptime") == "not a number"
    assert _detail(html, "Crash Reason") is None and "No crashing thread in this crash." in html
    assert client.get(f"/api/report/{cid}").get_json()["modules"] == [
        {"filename": "a.so", "version": None, "debug_id": None, "debug_file": None, "code_id": None}]


@pytest.mark.parametrize("name", ["full", "threads", "partial"])
def test_no_protected_field_without_unredacted_on_the_page_nor_the_api(client, report_store, name):
    cid = report_store[1][name]
    html = client.get(f"/report/index/{cid}").get_data(as_text=True)
    api = client.get(f"/api/report/{cid}").get_data(as_text=True)
    for text in (html, api):
        assert [secret for secret in SECRETS if secret in text] == []
        for name_ in ("Comments", "GleanClientId", "ServerURL", "CustomUnlistedAnnotation", "user_comments",
                      "glean_client_id", "breadcrumbs", "registers", "soft_errors", "sensitive"):
            assert f'"{name_}"' not in text and f"<th>{name_}</th>" not in text
    data = json.loads(api)
    assert data["raw_crash"]["ProductName"] == "Firefox" and data["raw_crash"]["BuildID"] == "20231120093012"
    # Comments, URL, GleanClientId (protected); ServerURL, legacy_processing, the custom one (unlisted)
    assert data["withheld"]["raw_crash"] == 6
    assert "6 protected or unlisted annotations left out" in html


def test_unredacted_shows_every_field(unredacted, report_store):
    cid = report_store[1]["full"]
    html = unredacted.get(f"/report/index/{cid}").get_data(as_text=True)
    api = unredacted.get(f"/api/report/{cid}").get_json()
    for secret in (EMAIL, TOKEN, CLIENT_ID, "hunter2-breadcrumb", "rsp-0x7ffd1234"):
        assert secret in html
    assert api["raw_crash"]["GleanClientId"] == CLIENT_ID and TOKEN in api["raw_crash"]["ServerURL"]
    assert api["processed_crash"]["user_comments"].endswith(EMAIL) and api["withheld"] == {"raw_crash": 0, "processed_crash": 0}


def test_the_allowlist_is_configurable(report_store, tmp_path):
    listed = tmp_path / "fields.json"
    listed.write_text(json.dumps({"raw_crash": ["ProductName", "ServerURL"], "processed_crash": ["reason", "json_dump.modules.filename"]}))
    client = create_app(report_store[0], now=lambda: NOW, public_fields=str(listed)).test_client()
    data = client.get(f"/api/report/{report_store[1]['full']}").get_json()
    assert set(data["raw_crash"]) == {"ProductName", "ServerURL"}
    assert data["processed_crash"] == {"reason": "EXCEPTION_ACCESS_VIOLATION_READ",
                                       "json_dump": {"modules": [{"filename": "xul.dll"}, {"filename": "ntdll.dll"}]}}
    assert data["crashing_thread"] is None and [d["label"] for d in data["details"]] == ["Product", "Crash Reason"]
    page = client.get("/api/signature?signature=mozilla::dom::ScriptLoader::ProcessRequest").get_json()
    assert page["crashes"][0]["reason"] == "EXCEPTION_ACCESS_VIOLATION_READ" and page["crashes"][0]["build"] is None
    for bad in ('{"raw_crash": []}', '[1]', '{"raw_crash": [1], "processed_crash": []}', "not json"):
        listed.write_text(bad)
        with pytest.raises(Exception, match="public fields file|must be a list"):
            PublicFields.load(listed)


def test_the_default_allowlist_follows_socorros_permissions():
    fields = PublicFields.load()
    for public in ("ProductName", "Version", "BuildID", "ReleaseChannel", "ProcessType", "CPUArchitecture", "Notes"):
        assert fields.allows("raw_crash", public)
    for protected in ("Comments", "URL", "Breadcrumbs", "JavaStackTrace", "MozCrashReason", "GleanClientId",
                      "RemoteType", "PHCAllocStack", "metadata", "ServerURL", "Email"):
        assert not fields.allows("raw_crash", protected)
    for public in ("product", "os_name", "reason", "address", "uptime", "moz_crash_reason", "json_dump.modules.debug_id"):
        assert fields.allows("processed_crash", public)
    for protected in ("url", "user_comments", "breadcrumbs", "memory_report", "java_stack_trace_raw",
                      "moz_crash_reason_raw", "glean_client_id", "remote_type", "json_dump",
                      "json_dump.threads.frames.registers", "json_dump.sensitive", "exploitability"):
        assert not fields.allows("processed_crash", protected)


@pytest.mark.parametrize("value, shown", [("1474156800", "2016-09-18 00:00:00 UTC"), ("\u00b2", "\u00b2"),
                                          ("\u0663", "\u0663")])
def test_an_install_time_in_other_digits_is_shown_as_it_is(value, shown):
    """Before: "\u00b2" (isdigit(), but no int()) raised ValueError, a 500 on its report page."""
    from socorro_store.web import display

    assert display.epoch(value) == shown
