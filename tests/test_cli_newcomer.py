"""The CLI as a newcomer meets it, following the README (issue 39, section 3): help on every
option, whole summaries, default periods, private export and dump files, an import that does
not create a mistyped store, output without pages of zeros, markers in words, and a demo whose
crashes agree with themselves (an export cut short: test_cli_edges.py)."""

import json
import os
import random
import shutil
import stat
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import click
import pytest
from cli_helpers import DAY, copy_url, fails, make_demo_store, ok, run
from store_helpers import crash_id, processed, raw_crash

from socorro_store import open_store
from socorro_store.cli import main
from socorro_store.cli.reports import bars_with_data
from socorro_store.demo import processed_crash, synthetic_crashes
from socorro_store.schema import keys as K

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory):
    """A demo store of 200 crashes with ~1 KB dumps on :data:`DAY` (yesterday)."""
    return make_demo_store(tmp_path_factory, "newcomer", crashes=200, seed=39)


@pytest.fixture
def url(demo_store, tmp_path):
    return copy_url(demo_store, tmp_path)


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _commands(group, path=()):
    for name, command in group.commands.items():
        yield (*path, name), command
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))


# -- help ------------------------------------------------------------------------------------------

def test_every_option_of_every_command_has_help():
    missing = [f"{' '.join(path)} {'/'.join(param.opts)}" for path, command in _commands(main)
               for param in command.params if isinstance(param, click.Option) and not param.hidden and not param.help]
    assert missing == []


def test_command_lists_show_whole_summaries():
    """click cut each summary at the terminal's width ("Simulate a collector, processors and
    readers on the..."); verify-indexes' was a list of pointer states."""
    for path, command in [((), main)] + [(p, c) for p, c in _commands(main) if isinstance(c, click.Group)]:
        result = run("embedded:///nowhere", *path, "--help")
        listed = result.stdout.split("Commands:", 1)[1]
        assert "..." not in listed, (path, listed)
    summary = " ".join(run("embedded:///nowhere", "--help").stdout.split("verify-indexes", 1)[1].split())
    assert summary.startswith("Check every pointer of the 7 index tables against its crash row")


# -- default periods -------------------------------------------------------------------------------

@pytest.fixture
def recent_url(tmp_path):
    """Crashes of "recent" today (2), 3 days ago (1) and 8 days ago (4, outside the last 7 days)."""
    url = f"embedded://{tmp_path / 'recent'}"
    now = datetime.now(timezone.utc)
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    rng = random.Random(7)
    with open_store(url) as store:
        store.create_tables()
        for submitted, n in ((today, 2), (today - timedelta(days=3), 1), (today - timedelta(days=8), 4)):
            for i in range(n):
                cid = crash_id(K.SALTS[i], day=submitted, rng=rng)
                store.save_raw_crash(raw_crash(cid, submitted + timedelta(seconds=i)), {}, cid)
                store.save_processed(processed(cid, signature="recent", completeddatetime=now.isoformat()))
        store.flush_counters()
    return url


def test_signatures_top_defaults_to_the_last_7_days_and_crashes_list_to_today(recent_url):
    report = json.loads(ok(run(recent_url, "signatures", "top", "--json")))
    assert report["total"] == 3 and [s["count"] for s in report["signatures"]] == [3]
    assert len(ok(run(recent_url, "crashes", "list")).split()) == 2
    fails(run(recent_url, "crashes", "list", "--from", "2016-09-18"), 2)  # half a range is still refused
    fails(run(recent_url, "export", "-o", os.devnull), 2)  # an export names its range


# -- private files ---------------------------------------------------------------------------------

def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_export_files_are_private_whatever_the_umask(url, tmp_path, umask_022):
    created = tmp_path / "day.msgpack"
    ok(run(url, "export", "--day", DAY.isoformat(), "-o", str(created)))
    assert _mode(created) == 0o600
    existing = tmp_path / "old.msgpack"
    existing.write_bytes(b"x" * 10)
    existing.chmod(0o644)
    ok(run(url, "export", "--day", DAY.isoformat(), "-o", str(existing)))
    assert _mode(existing) == 0o600 and existing.read_bytes() == created.read_bytes()


def test_crash_dumps_takes_the_directory_people_type_and_writes_private_files(url, tmp_path, umask_022):
    cid = ok(run(url, "crashes", "list", "--day", DAY.isoformat(), "--limit", "1")).strip()
    out = tmp_path / "dumps"
    paths = ok(run(url, "crash", "dumps", cid, str(out))).split()
    assert paths == [str(out / f"{cid}.upload_file_minidump.dump")]
    assert _mode(out) == 0o700 and _mode(paths[0]) == 0o600
    assert ok(run(url, "crash", "dumps", cid, "--dir", str(tmp_path / "older"))).split()  # the option still works
    fails(run(url, "crash", "dumps", cid), 2)
    fails(run(url, "crash", "dumps", cid, str(out), "--dir", str(out)), 2)


# -- import ----------------------------------------------------------------------------------------

def test_import_refuses_a_missing_store_unless_asked_to_create_it(url, tmp_path):
    stream = tmp_path / "day.msgpack"
    ok(run(url, "export", "--day", DAY.isoformat(), "-o", str(stream)))
    typo = tmp_path / "typo"
    line = fails(run(f"embedded://{typo}", "import", str(stream)), 1)
    assert f"no store at {typo}" in line and "tables create" in line and "--create" in line
    assert not typo.exists()
    out = ok(run(f"embedded://{typo}", "import", "--create", str(stream)))
    assert "imported 200" in out and "counters written 0" not in out
    assert "counted as each crash was saved" in out and "0 cell(s) corrected" in out


# -- output with data ------------------------------------------------------------------------------

def test_bars_show_the_span_with_crashes_and_name_what_was_left_out():
    points = [("h00", 0), ("h01", 0), ("h02", 3), ("h03", 0), ("h04", 1), ("h05", 0)]
    lines = bars_with_data(points, "hour")
    assert lines[0] == "  (2 earlier hours with no crashes left out: h00 to h01)"
    assert [line.split()[0] for line in lines[1:4]] == ["h02", "h03", "h04"]  # a gap inside stays
    assert lines[4] == "  (1 later hour with no crashes left out: h05)" and len(lines) == 5
    assert bars_with_data([("d1", 0), ("d2", 0)], "day") == ["  no crashes in these 2 days"]


def test_signatures_show_leaves_out_the_empty_hours_and_days(recent_url):
    out = ok(run(recent_url, "signatures", "show", "recent")).splitlines()
    assert len(out) < 30, out  # 86 lines before, almost all zeros
    assert any("earlier hours with no crashes left out" in line for line in out)
    assert any("earlier days with no crashes left out" in line for line in out)


def test_demo_prints_no_rows_for_the_hours_still_to_come(tmp_path):
    out = ok(run(f"embedded://{tmp_path / 'demo'}", "demo", "--crashes", "60", "--dump-kb", "0", "--seed", "1"))
    now = datetime.now(timezone.utc)  # after the demo's own clock: its crashes are all before it
    if now.hour == 23:
        pytest.skip("the last hour of the UTC day: no hour of today is still to come")
    hourly = out.split("hourly counts (submitted_crash_reports):\n", 1)[1].split("lifecycle", 1)[0].splitlines()
    bars = [line for line in hourly if not line.strip().startswith("(")]
    assert int(bars[-1].split()[1]) > 0 and bars[-1].split()[0] <= now.strftime("%Y-%m-%dT%H")
    assert "later hours with no crashes left out" in hourly[-1] and now.strftime("T23") in hourly[-1]


# -- markers in words ------------------------------------------------------------------------------

def test_the_cli_shows_markers_in_words_where_people_read(tmp_path):
    url = f"embedded://{tmp_path / 'markers'}"
    rng = random.Random(3)
    with open_store(url) as store:
        store.create_tables()
        for i, signature in enumerate([None, None, "", "named"]):
            cid = crash_id(K.SALTS[i], day=DAY, rng=rng)
            store.save_raw_crash(raw_crash(cid, datetime(DAY.year, DAY.month, DAY.day, 1, i, tzinfo=timezone.utc)), {}, cid)
            store.save_processed(processed(cid, signature=signature))
        store.flush_counters()
        null_crash = next(c for c in store.crashes_submitted(DAY, DAY + timedelta(days=1))
                          if store.get_unredacted_processed(c)["signature"] is None)
    top = ok(run(url, "signatures", "top", "--day", DAY.isoformat()))
    assert "(no signature)" in top and "(empty signature)" in top and "##" not in top
    assert "(no signature)" in ok(run(url, "crashes", "list", "--day", DAY.isoformat(), "--table"))
    assert "signature    (no signature)" in ok(run(url, "crash", "show", null_crash))
    assert "(no signature)" in ok(run(url, "signatures", "show", "##null##")).splitlines()[0]
    # what programs read keeps the stored name
    rows = json.loads(ok(run(url, "signatures", "top", "--day", DAY.isoformat(), "--json")))["signatures"]
    assert rows[0]["signature"] == "##null##"
    assert "##null##" in ok(run(url, "crashes", "list", "--day", DAY.isoformat(), "--csv"))


# -- the demo's crashes agree with themselves ------------------------------------------------------

def test_each_demo_crash_agrees_with_itself():
    """cpu_arch x86 came with 64-bit frame and module addresses, and a raw CPUArchitecture the
    processed crash contradicted (x86 on an Android phone)."""
    crashes = synthetic_crashes(600, DAY, seed=11, dump_kb=0)
    seen = set()
    for raw, _dumps, cid, signature in crashes:
        doc = processed_crash(raw, cid, signature or "js::GC::Mark")
        arch = doc["cpu_arch"]
        seen.add(arch)
        assert raw["CPUArchitecture"] == arch == doc["json_dump"]["system_info"]["cpu_arch"]
        assert ("I386" in doc["reason"]) <= (arch in ("x86", "amd64")), (arch, doc["reason"])
        bits = 32 if arch in ("x86", "arm") else 64
        addresses = [doc["address"]] + [f["offset"] for f in doc["json_dump"]["crashing_thread"]["frames"]]
        addresses += [m[k] for m in doc["json_dump"]["modules"] for k in ("base_addr", "end_addr")]
        assert all(int(a, 16) < 2 ** 32 for a in addresses) if bits == 32 else \
            any(int(a, 16) >= 2 ** 32 for a in addresses), (arch, addresses)
    assert {"x86", "arm", "amd64", "arm64"} <= seen


# -- the repository --------------------------------------------------------------------------------

@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(), reason="not a git checkout")
def test_the_readmes_local_hbase_directory_is_ignored():
    """``python tools/servers/local_hbase.py ./hbase-local`` (the README's example) left it untracked."""
    result = subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q", "hbase-local/"], check=False)
    assert result.returncode == 0
