"""The operator commands through click's runner and as real subprocesses, on a demo store:
crash show/raw/processed/dumps/reprocess/delete, crashes list, queue status, signatures top/show,
metrics show, raw get/scan, export/import, --version, exit codes."""

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pytest
from cli_helpers import DAY, copy_url, fails, make_demo_store, ok, run
from click.testing import CliRunner

from socorro_store import open_store
from socorro_store.cli import main
from socorro_store.config import ENV_VAR
from socorro_store.jobs import scrutiny
from socorro_store.schema import keys as K

@pytest.fixture(scope="module")
def demo_store(tmp_path_factory):
    return make_demo_store(tmp_path_factory, "demo", crashes=60, seed=5, processors=2)


@pytest.fixture
def url(demo_store, tmp_path):
    """A private copy of the demo store (commands here may change it)."""
    return copy_url(demo_store, tmp_path)


def day_ids(url):
    return ok(run(url, "crashes", "list", "--day", DAY.isoformat())).split()


# -- crashes -------------------------------------------------------------------------------------

def test_version():
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0 and result.stdout.startswith("socorro-store ")


def test_usage_errors_are_one_line_exit_2(url):
    assert "--bogus" in fails(run(url, "crash", "show", "--bogus"), 2)
    assert "--bogus" in fails(CliRunner().invoke(main, ["--bogus"]), 2)
    fails(run(url, "no-such-command"), 2)
    fails(run(url, "crash", "show"), 2)


def test_crashes_list(url):
    ids = day_ids(url)
    assert len(ids) == 60 and all(K.validate_crash_id(i) for i in ids)
    assert ok(run(url, "crashes", "list", "--day", DAY.isoformat(), "--limit", "5")).split() == ids[:5]
    start = datetime(DAY.year, DAY.month, DAY.day, tzinfo=timezone.utc)
    ranged = ok(run(url, "crashes", "list", "--from", start.isoformat(), "--to", (start + timedelta(hours=12)).isoformat()))
    assert ranged.split() == ids[:len(ranged.split())]
    lines = [json.loads(line) for line in ok(run(url, "crashes", "list", "--day", DAY.isoformat(), "--nl")).splitlines()]
    assert [item["crash_id"] for item in lines] == ids and {item["state"] for item in lines} == {"processed"}
    signature = next(item["signature"] for item in lines if item["signature"] not in ("##null##", "##empty##"))
    of_signature = ok(run(url, "crashes", "list", "--day", DAY.isoformat(), "--signature", signature)).split()
    assert of_signature == [item["crash_id"] for item in lines if item["signature"] == signature]
    fails(run(url, "crashes", "list", "--day", "last tuesday"), 2)
    fails(run(url, "crashes", "list", "--day", DAY.isoformat(), "--from", "2016-01-01"), 2)
    assert ok(run(url, "crashes", "list")) == ""  # today's (the demo's day is yesterday)
    fails(run(url, "crashes", "list", "--day", DAY.isoformat(), "--limit", "-1"), 2)


def test_crash_show_raw_processed_and_dumps(url, tmp_path):
    crash_id = day_ids(url)[0]
    text = ok(run(url, "crash", "show", crash_id))
    assert crash_id in text and "upload_file_minidump" in text and "signature" in text
    info = json.loads(ok(run(url, "crash", "show", crash_id, "--json")))
    assert info["processed"] is True and info["queues"] == [] and info["dumps"]["upload_file_minidump"] > 0
    raw = json.loads(ok(run(url, "crash", "raw", crash_id)))
    assert raw["uuid"] == crash_id and info["product"] == raw["ProductName"]
    redacted = json.loads(ok(run(url, "crash", "processed", crash_id)))
    unredacted = json.loads(ok(run(url, "crash", "processed", crash_id, "--unredacted")))
    assert "email" not in redacted and unredacted["email"] == "someone@example.com"
    assert redacted["signature"] == info["signature"] or info["signature"] in ("##null##", "##empty##")
    paths = ok(run(url, "crash", "dumps", crash_id, "--dir", str(tmp_path / "dumps"))).split()
    assert paths == [str(tmp_path / "dumps" / f"{crash_id}.upload_file_minidump.dump")]
    with open(paths[0], "rb") as handle:
        assert len(handle.read()) == info["dumps"]["upload_file_minidump"]
    # bad input: exit 2; a crash that is not there: exit 1
    assert "crash id" in fails(run(url, "crash", "show", "not-a-crash-id"), 2)
    missing = crash_id[:-12] + "00000" + crash_id[-7:]
    fails(run(url, "crash", "show", missing), 1)
    fails(run(url, "crash", "raw", missing), 1)
    fails(run(url, "crash", "processed", missing), 1)
    fails(run(url, "crash", "dumps", missing, "--dir", str(tmp_path)), 1)


def test_crash_reprocess_from_stdin_and_arguments(url):
    ids = day_ids(url)
    out = json.loads(ok(run(url, "crash", "reprocess", ids[0], "-", "--json", input=f"{ids[1]}\n{ids[2]}\n")))
    assert out == {"requested": 3, "queued": 3}
    assert "queued 0 of 1" in ok(run(url, "crash", "reprocess", ids[0]))
    status = json.loads(ok(run(url, "queue", "status", "--json")))
    assert status["queues"]["priority"]["indexed"] == status["queues"]["priority"]["counted"] == 3
    fails(run(url, "crash", "reprocess", "bogus"), 2)


def test_crash_delete(url):
    ids = day_ids(url)
    store_path = url.split("://", 1)[1]
    with open_store(url) as store:
        metrics_before = store.get_metrics(DAY.isoformat())
    assert "--yes" in fails(run(url, "crash", "delete", ids[0]), 2)
    assert ok(run(url, "crash", "delete", ids[0], ids[1], "--yes")).splitlines() == [
        f"deleted {ids[0]}", f"deleted {ids[1]}"]
    assert day_ids(url) == ids[2:]
    fails(run(url, "crash", "show", ids[0]), 1)
    fails(run(url, "crash", "delete", ids[0], "--yes"), 1)
    assert json.loads(ok(run(url, "crash", "delete", ids[0], "--yes", "--missing-ok", "--json"))) == {"deleted": []}
    with open_store(url) as store:
        # the counts follow the crash rows: the two deleted crashes are no longer counted
        assert store.get_metrics(DAY.isoformat())["submitted_crash_reports"] == \
            metrics_before["submitted_crash_reports"] - 2
        report = scrutiny.verify_indexes(store.backend, orphan_age_s=0)
    assert all(t["missing"] == 0 and t["orphan"] == 0 for t in report.values()), report
    assert os.path.isdir(store_path)


REPORT_URL = "https://crash-stats.mozilla.org/report/index/"


def test_every_crash_command_takes_bp_ids_and_report_urls(url, tmp_path):
    """Issue 24: the bare id, bp-<id> and a crash-stats report URL name the same crash, as
    arguments and on stdin (reprocess -, delete -)."""
    ids = day_ids(url)
    crash_id = ids[0]
    for form in (f"bp-{crash_id}", f"{REPORT_URL}{crash_id}", f"{REPORT_URL}bp-{crash_id}#tab-details"):
        assert json.loads(ok(run(url, "crash", "show", form, "--json")))["crash_id"] == crash_id
    assert json.loads(ok(run(url, "crash", "raw", f"bp-{crash_id}")))["uuid"] == crash_id
    assert json.loads(ok(run(url, "crash", "processed", f"{REPORT_URL}{crash_id}")))["uuid"] == crash_id
    paths = ok(run(url, "crash", "dumps", f"bp-{crash_id}", "--dir", str(tmp_path / "d"))).split()
    assert paths == [str(tmp_path / "d" / f"{crash_id}.upload_file_minidump.dump")]
    out = json.loads(ok(run(url, "crash", "reprocess", f"bp-{ids[0]}", "-", "--json",
                            input=f"{REPORT_URL}{ids[1]}\n\nbp-{ids[2]}\n")))
    assert out == {"requested": 3, "queued": 3}
    deleted = ok(run(url, "crash", "delete", "-", "--yes", input=f"bp-{ids[3]}\n{REPORT_URL}bp-{ids[4]}\n"))
    assert deleted.splitlines() == [f"deleted {ids[3]}", f"deleted {ids[4]}"]
    assert day_ids(url) == ids[:3] + ids[5:]


def test_a_bad_crash_id_is_one_line_with_the_form_and_nothing_changes(url):
    from store_helpers import all_rows

    from socorro_store.backends import open_backend

    ids = day_ids(url)
    with open_backend(url, create=False) as backend:
        before = all_rows(backend)
    line = fails(run(url, "crash", "show", "6a3f"), 2)
    assert "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxDYYMMDD" in line and "bp-<id>" in line and "e.g." in line
    fails(run(url, "crash", "show", f"https://crash-stats.mozilla.org/report/{ids[0]}"), 2)
    # one bad stdin line refuses the whole batch, naming the line; nothing is queued or deleted
    assert "stdin line 2" in fails(run(url, "crash", "reprocess", "-", input=f"bp-{ids[0]}\nnope\n"), 2)
    assert "stdin line 1" in fails(run(url, "crash", "delete", "-", "--yes", input=f"{ids[1]}x\n{ids[2]}\n"), 2)
    with open_backend(url, create=False) as backend:
        assert all_rows(backend) == before


# -- queue, signatures, metrics ---------------------------------------------------------------------

def test_queue_status(url):
    text = ok(run(url, "queue", "status"))
    assert text.splitlines()[0].split() == ["queue", "counted", "indexed", "leased", "oldest"]
    assert "dead-lettered 0" in text
    status = json.loads(ok(run(url, "queue", "status", "--json")))
    assert {q: v["indexed"] for q, v in status["queues"].items()} == {"standard": 0, "legacy": 0, "priority": 0}


def test_signatures_top_and_show(url):
    report = json.loads(ok(run(url, "signatures", "top", "--day", DAY.isoformat(), "--limit", "5", "--json")))
    assert report["total"] == 60 and report["submitted"] == 60 and len(report["signatures"]) <= 5
    counts = [s["count"] for s in report["signatures"]]
    assert counts == sorted(counts, reverse=True) and all(s["movement"] == "new" for s in report["signatures"])
    text = ok(run(url, "signatures", "top", "--day", DAY.isoformat()))
    top = report["signatures"][0]
    assert "top crashers" in text and top["signature"] in text.splitlines()[2]
    shown = json.loads(ok(run(url, "signatures", "show", top["signature"], "--json")))
    assert shown["counters"]["day"] == {DAY.isoformat(): top["count"]}
    assert shown["first_seen"]["start"].startswith(DAY.isoformat())
    assert len(shown["hourly"]) == 48 and len(shown["daily"]) == 30
    assert dict(shown["daily"])[DAY.isoformat()] == top["count"]
    text = ok(run(url, "signatures", "show", top["signature"]))
    assert "first seen" in text and "#" in text and "daily, last 30 days:" in text
    fails(run(url, "signatures", "top", "--from", "2016-01-01T00:30", "--to", "2016-01-02"), 2)


def test_metrics_show(url):
    counters = json.loads(ok(run(url, "metrics", "show", DAY.isoformat(), "--json")))
    assert counters["submitted_crash_reports"] == 60
    assert "inserts_unprocessed " in ok(run(url, "metrics", "show", "crash_report_queues"))
    # any sane row name is read (Socorro's too); one with no counters is not found (issue 24)
    assert "no counters" in fails(run(url, "metrics", "show", "no-such-row", "--json"), 1)
    fails(run(url, "metrics", "show", "two words"), 2)


# -- raw rows ------------------------------------------------------------------------------------------

def test_raw_get_and_scan(url):
    row = json.loads(ok(run(url, "raw", "get", "metrics", DAY.isoformat(), "--json")))
    cell = row["cells"]["counters:submitted_crash_reports"]
    assert cell["as_counter"] == 60 and cell["value"] == "\\x00" * 7 + "<" and cell["size"] == 8
    assert "(= 60)" in ok(run(url, "raw", "get", "metrics", DAY.isoformat()))
    crash_id = day_ids(url)[0]
    crash_row = json.loads(ok(run(url, "raw", "get", "crash_reports", crash_id[0] + DAY.strftime("%y%m%d") + crash_id, "--json")))
    assert crash_row["cells"]["ids:ooid"]["value"] == crash_id and "raw_data:dump" in crash_row["cells"]
    lines = ok(run(url, "raw", "scan", "crash_reports_index_submitted_time", "--prefix", crash_id[0],
                   "--limit", "3", "--json")).splitlines()
    assert 1 <= len(lines) <= 3 and all(json.loads(line)["row"].startswith(crash_id[0]) for line in lines)
    ranged = ok(run(url, "raw", "scan", "metrics", "--start", DAY.isoformat(), "--stop", DAY.isoformat() + "T01",
                    "--limit", "1"))
    assert ranged.splitlines()[0] == DAY.isoformat()
    assert "no row" in fails(run(url, "raw", "get", "metrics", "no-such-row", "--json"), 1)  # issue 24
    fails(run(url, "raw", "get", "no_such_table", "x"), 1)
    fails(run(url, "raw", "scan", "metrics", "--prefix", "2", "--start", "1"), 2)


# -- no store, no creation -----------------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["tables", "list"], ["crash", "show", "00000000-0000-0000-0000-000000160918"], ["crashes", "list", "--day", "2016-09-18"],
    ["queue", "status"], ["signatures", "top", "--day", "2016-09-18"], ["signatures", "show", "x"],
    ["metrics", "show", "2016"], ["raw", "scan", "metrics"], ["export", "--day", "2016-09-18", "-o", "-"],
    ["verify-indexes"], ["jobs", "list"],
])
def test_read_commands_on_a_missing_store_fail_and_create_nothing(tmp_path, args):
    typo = tmp_path / "typo"
    line = fails(run(f"embedded://{typo}", *args), 1)
    assert f"no store at {typo}" in line and "tables create" in line
    assert not typo.exists()


# -- export / import -------------------------------------------------------------------------------

def test_export_import_through_the_runner(url, tmp_path):
    stream = tmp_path / "day.msgpack"
    assert "exported 60 crashes" in run(url, "export", "--day", DAY.isoformat(), "-o", str(stream)).stderr
    fresh = f"embedded://{tmp_path / 'fresh'}"
    first = json.loads(ok(run(fresh, "import", str(stream), "--create", "--json")))
    assert (first["imported"], first["processed"], first["skipped"]) == (60, 60, 0)
    assert day_ids(fresh) == day_ids(url)
    again = ok(run(fresh, "import", str(stream)))
    assert "imported 0" in again and "skipped 60" in again
    stream.write_bytes(stream.read_bytes()[:-40])
    assert "truncated" in fails(run(f"embedded://{tmp_path / 'other'}", "import", "--create", str(stream)), 1)


def cli(*args, url=None, stdin=None, input_bytes=None):
    env = dict(os.environ)
    env.pop(ENV_VAR, None)
    if url:
        env[ENV_VAR] = url
    return subprocess.run([sys.executable, "-m", "socorro_store", *args], capture_output=True, env=env,
                          stdin=stdin, input=input_bytes, timeout=300, check=False)


def test_subprocess_export_pipe_import_and_commands(url, tmp_path):
    """``export -o - | import -`` between two stores, and the read commands as processes."""
    fresh = f"embedded://{tmp_path / 'fresh'}"
    exporter = subprocess.Popen([sys.executable, "-m", "socorro_store", "--url", url, "export", "--day",
                                 DAY.isoformat(), "-o", "-"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    importer = cli("--url", fresh, "import", "--create", "-", stdin=exporter.stdout)
    exporter.stdout.close()
    assert exporter.wait(timeout=300) == 0, exporter.stderr.read()
    assert importer.returncode == 0, importer.stderr
    assert b"imported 60 (60 processed, 0 queued)" in importer.stdout
    with open_store(url) as source, open_store(fresh) as target:
        ids = list(source.crashes_submitted(DAY, DAY + timedelta(days=1)))
        assert list(target.crashes_submitted(DAY, DAY + timedelta(days=1))) == ids
        for crash_id in ids[:10]:
            assert target.get_unredacted_processed(crash_id) == source.get_unredacted_processed(crash_id)
            assert target.get_raw_dumps(crash_id) == source.get_raw_dumps(crash_id)
        assert target.get_metrics(DAY.isoformat()) == source.get_metrics(DAY.isoformat())
    top = cli("signatures", "top", "--day", DAY.isoformat(), "--json", url=fresh)
    assert top.returncode == 0 and json.loads(top.stdout)["total"] == 60
    shown = cli("crash", "show", ids[0], url=fresh)
    assert shown.returncode == 0 and ids[0].encode() in shown.stdout
    bad = cli("crash", "show", "nope", url=fresh)
    assert bad.returncode == 2 and bad.stdout == b"" and bad.stderr.count(b"\n") == 1
    gone = cli("--url", f"embedded://{tmp_path / 'typo'}", "queue", "status")
    assert gone.returncode == 1 and b"no store at" in gone.stderr and not (tmp_path / "typo").exists()
    version = cli("--version")
    assert version.returncode == 0 and version.stdout.startswith(b"socorro-store ")


@pytest.fixture(params=["gateway-buffered-binary", "hbase-real"])
def hbase_target(request, tmp_path):
    """An empty hbase:// store URL: through our gateway, or on a real HBase."""
    if request.param == "hbase-real":
        with request.getfixturevalue("hbase_real_pool").lease(want_specs=False) as url:
            yield url
        return
    from conftest import isolated_url

    yield isolated_url(request.param, request.getfixturevalue("gateway_buffered_binary_url"), tmp_path)


def test_export_from_embedded_import_into_hbase(url, tmp_path, hbase_target):
    """Outgrowing the embedded store: a day moves to an hbase:// store (happybase against the
    Thrift1 gateway on loopback, or a real HBase); the commands then read it there."""
    hbase = hbase_target
    stream = tmp_path / "day.msgpack"
    run(url, "export", "--day", DAY.isoformat(), "-o", str(stream))
    first = json.loads(ok(run(hbase, "import", str(stream), "--create", "--json")))
    assert (first["imported"], first["processed"]) == (60, 60) and first["rollup"]["drift"] == {}
    assert day_ids(hbase) == day_ids(url)
    top = lambda u: json.loads(ok(run(u, "signatures", "top", "--day", DAY.isoformat(), "--json")))
    assert top(hbase) == top(url)
    assert json.loads(ok(run(hbase, "metrics", "show", DAY.isoformat(), "--json"))) == \
        json.loads(ok(run(url, "metrics", "show", DAY.isoformat(), "--json")))
    assert json.loads(ok(run(hbase, "import", str(stream), "--json")))["skipped"] == 60
    victim = day_ids(hbase)[0]
    ok(run(hbase, "crash", "delete", victim, "--yes"))
    fails(run(hbase, "crash", "show", victim), 1)
    verified = json.loads(ok(run(hbase, "verify-indexes", "--json")))
    assert all(t["missing"] == 0 and t["orphan"] == 0 for t in verified.values()), verified
