"""Operator edges, tried as a new user would (issue 32): a closed stdout pipe is a quiet, normal
end; error texts show the text given, never a Python repr; a bad date says it is not a valid date;
the ``tables create`` hint keeps the ``--url`` the user gave; ``--help`` names all three stores.

Bad input: one line on stderr, no traceback, exit 2.  A failure: one line, exit 1."""

import os
import subprocess
import sys

import pytest
from cli_helpers import DAY, make_demo_store, ok, run
from cli_helpers import fails as shared_fails
from click.testing import CliRunner

from socorro_store.cli import main


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    """A demo store of 400 crashes on DAY (read-only here: no test writes to it)."""
    return f"embedded://{make_demo_store(tmp_path_factory, 'edges', crashes=400, seed=32)}"


def fails(result, code):
    """As :func:`cli_helpers.fails`, and nothing on stdout."""
    line = shared_fails(result, code)
    assert result.stdout == ""
    return line


# -- a closed stdout pipe --------------------------------------------------------------------------

def _run_into_closed_pipe(url, args, read=0):
    """``python -m socorro_store --url URL ARGS`` with stdout a pipe whose reader reads ``read``
    bytes and closes it (``| head -c N``); returns ``(exit code, stderr)``."""
    read_end, write_end = os.pipe()
    proc = subprocess.Popen([sys.executable, "-m", "socorro_store", "--url", url, *args], stdout=write_end,
                            stderr=subprocess.PIPE)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        if read:
            reader.read(read)
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err.decode("utf-8", "replace")


@pytest.mark.parametrize("args", [
    ["crashes", "list", "--day", DAY.isoformat(), "--csv"],
    ["crashes", "list", "--day", DAY.isoformat()],
    ["crashes", "list", "--day", DAY.isoformat(), "--json"],
    ["crashes", "list", "--day", DAY.isoformat(), "--table"],
    ["signatures", "top", "--day", DAY.isoformat()],
    ["signatures", "top", "--day", DAY.isoformat(), "--json"],
    ["tables", "list"],
    ["--help"],
    ["crashes", "list", "--help"],
], ids=lambda args: " ".join(args))
@pytest.mark.parametrize("read", [0, 40], ids=["closed-at-once", "head-c-40"])
def test_a_closed_stdout_is_a_quiet_normal_end(url, args, read):
    code, err = _run_into_closed_pipe(url, args, read)
    assert (code, err) == (0, "")


@pytest.mark.parametrize("read", [0, 100], ids=["closed-at-once", "head-c-100"])
def test_an_export_whose_reader_stops_early_fails_in_one_line(url, read):
    """``export … | head -c 100`` exited 0 with nothing on stderr (issue 39): a truncated stream
    looked like a whole one.  Unlike a listing, an export is incomplete without its end."""
    code, err = _run_into_closed_pipe(url, ["export", "--day", DAY.isoformat(), "-o", "-"], read)
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("Error: the export is incomplete: its reader closed the stream before the end")


def test_a_closed_stdout_when_reading_the_first_line_like_head_1(url):
    """``crashes list --day D --csv | head -1``, three times (it failed three times of three)."""
    for _ in range(3):
        proc = subprocess.run(f"{sys.executable} -m socorro_store --url '{url}' crashes list --day {DAY} --csv "
                              "| head -1; exit ${PIPESTATUS[0]}", shell=True, executable="/bin/bash",
                              capture_output=True, text=True, timeout=120, check=False)
        assert (proc.returncode, proc.stderr, proc.stdout) == (0, "", "crash_id,signature,state,submitted\n")


def test_an_open_stdout_still_gets_everything(url):
    proc = subprocess.run([sys.executable, "-m", "socorro_store", "--url", url, "crashes", "list", "--day",
                           DAY.isoformat(), "--csv"], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0 and proc.stderr == ""
    assert len(proc.stdout.splitlines()) == 401  # the header and 400 crashes


# -- error texts -------------------------------------------------------------------------------------

@pytest.mark.parametrize("row, words", [
    ("2026-02-30", "not a metrics row: '2026-02-30' is not a valid date: day is out of range for month"),
    ("2026-13-45", "not a metrics row: '2026-13-45' is not a valid date: month must be in 1..12"),
    ("2026-02-30T10", "not a metrics row: '2026-02-30T10' is not a valid date: day is out of range for month"),
    ("2026-01-01T24", "hour must be in 0..23"),
    ("2026-1", "not a metrics row: '2026-1' (expected yyyy, yyyy-mm"),
])
def test_a_bad_metrics_row_is_shown_as_its_text_not_a_bytes_repr(url, row, words):
    line = fails(run(url, "metrics", "show", row), 2)
    assert words in line and "b'" not in line


@pytest.mark.parametrize("args, words", [
    (["crashes", "list", "--day", "2026-13-01"], "--day '2026-13-01' is not a valid date YYYY-MM-DD: month must be in 1..12"),
    (["crashes", "list", "--day", "2026-02-30"], "is not a valid date YYYY-MM-DD: day is out of range for month"),
    (["signatures", "top", "--day", "2026-13-01"], "month must be in 1..12"),
    (["export", "--day", "2026-02-30", "-o", "-"], "day is out of range for month"),
    (["crashes", "list", "--from", "2026-13-01", "--to", "2026-12-01"], "--from '2026-13-01' is not a valid date: month must be in 1..12"),
    (["signatures", "top", "--from", "2026-01-01T00:00", "--to", "2026-01-01T25:00"], "hour must be in 0..23"),
    (["crashes", "list", "--day", "not-a-day"], "--day must be a date YYYY-MM-DD, not 'not-a-day'"),
    # the ends of the calendar: one line, not an OverflowError traceback nor a datetime repr
    (["crashes", "list", "--day", "9999-12-31"], "--day must be from 1000-01-01 to 9999-12-30, not 9999-12-31"),
    (["signatures", "top", "--day", "9999-12-31"], "--day must be from 1000-01-01 to 9999-12-30"),
    (["export", "--day", "9999-12-31", "-o", "-"], "--day must be from 1000-01-01 to 9999-12-30"),
    (["crashes", "list", "--day", "0001-01-01"], "--day must be from 1000-01-01 to 9999-12-30, not 0001-01-01"),
    (["export", "--from", "0001-01-01", "--to", "2026-01-01", "-o", "-"], "--from 0001-01-01 is before 1000-01-01"),
])
def test_a_bad_date_says_what_is_wrong_with_it_in_one_line(url, args, words):
    line = fails(run(url, *args), 2)
    assert words in line, line
    assert "ISO 8601" not in line and "datetime.datetime" not in line


def test_the_last_and_first_days_still_answer(url):
    assert ok(run(url, "crashes", "list", "--day", "9999-12-30")) == ""
    assert ok(run(url, "crashes", "list", "--day", "1000-01-01")) == ""
    assert "previous period" in ok(run(url, "signatures", "top", "--day", "9999-12-30"))


# -- the tables create hint -----------------------------------------------------------------------

def test_the_create_hint_keeps_the_url_the_user_gave(tmp_path):
    missing = tmp_path / "typo"
    line = fails(run(f"embedded://{missing}", "crashes", "list", "--day", "2026-11-23"), 1)
    assert line == f"Error: no store at {missing} (run `socorro-store --url embedded://{missing} tables create`)"
    assert not missing.exists()


def test_the_create_hint_quotes_a_url_for_the_shell(tmp_path):
    missing = tmp_path / "a typo"
    line = fails(run(f"embedded://{missing}?sync=full", "ping"), 1)
    assert f"(run `socorro-store --url 'embedded://{missing}?sync=full' tables create`)" in line


def test_the_create_hint_keeps_a_commands_own_url(tmp_path):
    missing = tmp_path / "typo"
    result = CliRunner().invoke(main, ["serve", "--url", f"embedded://{missing}", "--port", "0"], catch_exceptions=False)
    assert fails(result, 1).endswith(f"(run `socorro-store --url embedded://{missing} tables create`)")
    assert not missing.exists()


def test_the_create_hint_from_the_environment_needs_no_url(tmp_path):
    """A URL from SOCORRO_STORE_URL is still set when the hint is copied: the hint is the plain one."""
    missing = tmp_path / "typo"
    result = CliRunner().invoke(main, ["ping"], env={"SOCORRO_STORE_URL": f"embedded://{missing}"},
                                catch_exceptions=False)
    assert fails(result, 1) == f"Error: no store at {missing} (run `socorro-store tables create`)"


# -- --help ---------------------------------------------------------------------------------------

def test_the_top_level_help_names_all_three_store_kinds():
    result = CliRunner().invoke(main, ["--help"], catch_exceptions=False)
    assert result.exit_code == 0
    text = result.stdout
    for words in ("embedded://", "hbase://", "bigtable://", "Bigtable", "SOCORRO_STORE_URL"):
        assert words in text, words


# -- the same output flags everywhere, and the same answer to an unknown signature -----------------

def test_signatures_top_takes_every_list_format(url):
    """``signatures top --table`` was refused although the README says list commands take it."""
    import csv  # noqa: PLC0415
    import json  # noqa: PLC0415

    report = json.loads(ok(run(url, "signatures", "top", "--day", DAY, "--limit", "5", "--json")))
    names = [item["signature"] for item in report["signatures"]]
    table = ok(run(url, "signatures", "top", "--day", DAY, "--limit", "5", "--table")).splitlines()
    assert table[0].split()[:3] == ["rank", "signature", "count"] and set(table[1]) <= {"-", " "}
    assert len(table) == 2 + len(names)
    rows = list(csv.reader(ok(run(url, "signatures", "top", "--day", DAY, "--limit", "5", "--csv")).splitlines()))
    assert rows[0] == ["rank", "signature", "count", "share", "previous_rank", "previous_count", "movement"]
    assert [row[1] for row in rows[1:]] == names
    lines = ok(run(url, "signatures", "top", "--day", DAY, "--limit", "5", "--nl")).splitlines()
    assert [json.loads(line)["signature"] for line in lines] == names


def test_crash_raw_and_processed_take_json(url):
    import json  # noqa: PLC0415

    crash_id = ok(run(url, "crashes", "list", "--day", DAY, "--limit", "1")).strip()
    for command in ("raw", "processed"):
        assert json.loads(ok(run(url, "crash", command, crash_id, "--json")))["uuid"] == crash_id


def test_an_unknown_signature_is_not_found_in_a_list_as_in_show(url):
    """``crashes list --signature No::Such`` printed nothing and exited 0 where ``signatures
    show No::Such`` exits 1: both say the signature is unknown (a typo), exit 1."""
    for args in (["crashes", "list", "--day", DAY, "--signature", "No::Such"], ["signatures", "show", "No::Such"]):
        assert "No::Such" in fails(run(url, *args), 1)
