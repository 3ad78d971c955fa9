"""Operating `socorro-store web` (issue 33, part 6): the access log, a bounded number of request
threads, a time limit per request when the store is slow (503), `/api/…` with or without a
trailing slash, and the top-crashers page's OS columns and first appearance (part 5).

A slow store is a backend whose reads wait on an event the test sets: the tests count requests
that reached the backend and read status codes, never measure time.
"""

import json
import random
import threading
import urllib.error
import urllib.request
from datetime import timedelta

import pytest
from store_helpers import BASE_TIME, crash_id, processed, raw_crash

from socorro_store import open_store
from socorro_store.crashstore.store import CrashStore
from socorro_store.gateway.access_log import AccessLog

pytest.importorskip("flask", reason="the web view needs Flask (pip install 'socorro-store[web]')")
from socorro_store.web import create_app, make_web_server  # noqa: E402

NOW = BASE_TIME + timedelta(hours=3)


@pytest.fixture(scope="module")
def small_store(tmp_path_factory):
    rng = random.Random(336)
    with open_store(f"embedded://{tmp_path_factory.mktemp('operating') / 'store'}") as store:
        store.create_tables()
        ids = []
        for i, (os_name, process) in enumerate([("Windows NT", "content")] * 5 + [("Linux", "gpu")] * 2 + [("Mac OS X", None)]):
            cid = crash_id("0123456789abcdef"[i], rng=rng)
            extra = {"ProcessType": process} if process else {}
            store.save_raw_crash(raw_crash(cid, BASE_TIME + timedelta(minutes=i), **extra), {}, cid)
            store.save_processed(processed(cid, signature="opsig", product="Firefox", version="120.0", os_name=os_name))
            ids.append(cid)
        store.flush_counters()
        yield store, ids


class _Gate:
    """The backend, whose reads wait for ``opened`` while ``closed``; counts reads that began."""

    def __init__(self, backend):
        self.backend, self.closed, self.opened = backend, False, threading.Event()
        self.entered, self._lock = 0, threading.Lock()

    def __getattr__(self, name):
        attr = getattr(self.backend, name)
        if name not in ("scan", "get_row", "get_rows", "list_tables"):
            return attr

        def gated(*args, **kwargs):
            with self._lock:
                self.entered += 1
            if self.closed:
                self.opened.wait(60)
            return attr(*args, **kwargs)
        return gated


def test_a_slow_store_answers_503_within_the_time_limit(small_store):
    store, ids = small_store
    gate = _Gate(store.backend)
    client = create_app(CrashStore(gate), now=lambda: NOW, request_timeout=0.05, readers=2).test_client()
    assert client.get("/api/queue").status_code == 200
    gate.closed = True
    try:
        for path in ("/", "/topcrashers/", "/api/topcrashers", f"/api/report/{ids[0]}", "/healthz"):
            response = client.get(path)
            assert response.status_code == 503, path
            text = response.get_data(as_text=True)
            assert "did not answer within 0.05 s" in text
    finally:
        gate.opened.set()
        gate.closed = False
    assert client.get(f"/api/report/{ids[0]}").status_code == 200


def test_the_server_serves_a_bounded_number_of_requests_at_once(small_store, tmp_path):
    store, _ids = small_store
    gate = _Gate(store.backend)
    gate.closed = True
    log = AccessLog(str(tmp_path / "access.log"))
    server = make_web_server(CrashStore(gate), "127.0.0.1", 0, threads=2, access_log=log)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_port}"
    results = []

    def fetch(path):
        try:
            with urllib.request.urlopen(base + path, timeout=60) as response:
                results.append(response.status)
        except urllib.error.HTTPError as exc:
            results.append(exc.code)

    clients = [threading.Thread(target=fetch, args=("/api/queue",)) for _ in range(5)]
    try:
        for client in clients:
            client.start()
        for _ in range(200):  # until both threads are in the store (never more)
            if gate.entered >= 2:
                break
            threading.Event().wait(0.01)
        threading.Event().wait(0.2)  # room for a third request to (wrongly) enter
        assert gate.entered == 2
        gate.opened.set()
        for client in clients:
            client.join(60)
        assert results == [200] * 5 and gate.entered == 5
        fetch("/api/topcrashers/?day=2016-09-18")
        fetch("/signature/?signature=a%20b&before=bad")
    finally:
        server.shutdown()
        server.server_close()
        log.close()
    lines = (tmp_path / "access.log").read_text().splitlines()
    assert len(lines) == 7
    fields = [line.split(" ") for line in lines]
    assert all(len(f) == 7 and f[0].endswith("Z") and f[1].startswith("127.0.0.1:") and f[2] == "GET" for f in fields)
    assert [f[3] for f in fields[-2:]] == ["/api/topcrashers/?day=2016-09-18", "/signature/?signature=a%20b&before=bad"]
    assert [f[6] for f in fields] == ["200"] * 6 + ["400"] and all(f[4] == "-" and float(f[5]) >= 0 for f in fields)


def test_api_routes_answer_with_or_without_a_trailing_slash(small_store):
    store, ids = small_store
    client = create_app(store, now=lambda: NOW).test_client()
    for path in ("/api/topcrashers?day=2016-09-18", "/api/signature?signature=opsig", "/api/queue", f"/api/report/{ids[0]}"):
        plain = client.get(path)
        slashed = client.get(path.replace("?", "/?") if "?" in path else path + "/")
        assert plain.status_code == slashed.status_code == 200, path
        assert plain.get_json() == slashed.get_json()
    assert client.post("/api/queue/").status_code == 405


def test_top_crashers_split_by_os_with_the_first_appearance(small_store):
    store, _ids = small_store
    client = create_app(store, now=lambda: NOW).test_client()
    data = client.get("/api/topcrashers?day=2016-09-18").get_json()
    row = data["signatures"][0]
    assert row["os"] == {"Windows NT": 5, "Linux": 2, "Mac OS X": 1}
    assert row["first_appearance"] == {"level": "hour", "start": "2016-09-18T12:00:00+00:00"}
    assert data["os_columns"] == ["Windows NT", "Linux", "Mac OS X"]
    html = client.get("/topcrashers/?day=2016-09-18").get_data(as_text=True)
    assert '<th class="num os">Windows NT</th>' in html and "First appearance (UTC)" in html
    assert '<span title="the hour starting 2016-09-18 12:00:00 UTC">2016-09-18</span>' in html
    assert "(2016-09-18 00:00:00 UTC to 2016-09-19 00:00:00 UTC," in html
    linux = client.get("/api/topcrashers?day=2016-09-18&product=Firefox&version=120.0").get_json()
    assert linux["signatures"][0]["os"] == {"Windows NT": 5, "Linux": 2, "Mac OS X": 1}
    only = client.get("/api/topcrashers?day=2016-09-18&os=Linux").get_json()
    assert only["signatures"][0]["count"] == 2 and only["signatures"][0]["os"] == {} and only["os_columns"] == []


def test_cli_takes_the_operating_options(small_store, tmp_path):
    import re  # noqa: PLC0415
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    url = f"embedded://{tmp_path / 'cli'}"
    with open_store(url) as store:
        store.create_tables()
    log = tmp_path / "web.log"
    fields = tmp_path / "fields.json"
    fields.write_text(json.dumps({"raw_crash": ["ProductName"], "processed_crash": ["signature"]}))
    proc = subprocess.Popen([sys.executable, "-m", "socorro_store", "--url", url, "web", "--port", "0", "--threads", "3",
                             "--request-timeout", "5", "--access-log", str(log), "--public-fields", str(fields)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        match = re.match(r"serving (http://127\.0\.0\.1:\d+/) \(read-only\)", line)
        assert match, line + (proc.stderr.read() if proc.poll() is not None else "")
        with urllib.request.urlopen(match.group(1) + "api/queue/", timeout=30) as response:
            assert response.status == 200
    finally:
        proc.terminate()
        proc.wait(30)
    assert " GET /api/queue/ - " in log.read_text() and log.read_text().rstrip().endswith(" 200")
    fields.write_text("[]")
    bad = subprocess.run([sys.executable, "-m", "socorro_store", "--url", url, "web", "--public-fields", str(fields)],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "public fields file" in bad.stderr and "Traceback" not in bad.stderr
