"""``socorro-store ping`` and ``serve --access-log`` / ``serve --create`` (issue 24, point 3)."""

import re
import subprocess
import sys
import time

import happybase
from click.testing import CliRunner

from socorro_store.cli import main

LINE = re.compile(r"\A\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z 127\.0\.0\.1:\d+ (\S+) (\S+) (\S+) \d+\.\d (\S+)\Z")


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def one_error_line(result, code):
    assert result.exit_code == code, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def test_ping_answers_0_on_a_store_and_1_with_one_line_otherwise(tmp_path):
    url = f"embedded://{tmp_path / 'store'}"
    assert f"run `socorro-store --url {url} tables create`" in one_error_line(run("--url", url, "ping"), 1)
    assert not (tmp_path / "store").exists()
    assert run("--url", url, "tables", "create").exit_code == 0
    result = run("--url", url, "ping")
    assert result.exit_code == 0 and "answers" in result.stdout and result.stderr == ""


def test_ping_of_an_unreachable_server_names_it_and_asks_about_the_thrift_server():
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    line = one_error_line(run("--url", f"hbase://127.0.0.1:{port}?timeout_ms=2000&retries=5", "ping"), 1)
    assert f"127.0.0.1:{port}" in line and "Thrift server running" in line and "1 attempt:" in line
    assert "TTransportException(type=" not in line
    assert time.monotonic() - started < 10  # one attempt, not the retry budget
    # any other command: the same one line, after its retries
    line = one_error_line(run("--url", f"hbase://127.0.0.1:{port}?retries=1", "tables", "list"), 1)
    assert f"127.0.0.1:{port}" in line and "2 attempts" in line and "Thrift server running" in line


def _serve(tmp_path, *args):
    proc = subprocess.Popen([sys.executable, "-m", "socorro_store", "--url", f"embedded://{tmp_path / 'store'}",
                             "serve", "--port", "0", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    return proc


def test_serve_refuses_a_missing_store_and_creates_nothing(tmp_path):
    proc = _serve(tmp_path)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and out == ""
    assert err.strip().splitlines() == [f"Error: no store at {tmp_path / 'store'} "
                                        f"(run `socorro-store --url embedded://{tmp_path / 'store'} tables create`)"]
    assert not (tmp_path / "store").exists()


def test_serve_create_and_access_log(tmp_path):
    log_path = tmp_path / "access.log"
    proc = _serve(tmp_path, "--create", "--access-log", str(log_path))
    try:
        port = int(re.search(r":(\d+) ", proc.stdout.readline()).group(1))
        conn = happybase.Connection("127.0.0.1", port)
        assert b"crash_reports" in conn.tables()  # --create made the tables
        table = conn.table("metrics")
        table.put(b"r1", {b"counters:a": b"1"})
        assert list(table.scan()) == [(b"r1", {b"counters:a": b"1"})]
        try:
            conn.table("no_such_table").row(b"x")
        except Exception:  # noqa: BLE001 - happybase raises the Thrift IOError
            pass
        conn.close()
        deadline = time.monotonic() + 10
        while log_path.read_text().count("\n") < 7 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    calls = [LINE.match(line).groups() for line in log_path.read_text().splitlines()]
    assert calls[0] == ("getTableNames", "-", "-", "ok")
    assert ("mutateRows", "metrics", "1", "ok") in calls
    assert ("scannerOpenWithScan", "metrics", "-", "ok") in calls
    assert ("scannerGetList", "-", "1", "ok") in calls
    assert ("getRowWithColumns", "no_such_table", "1", "IOError") in calls


def test_serve_access_log_path_error_is_one_line(tmp_path):
    assert run("--url", f"embedded://{tmp_path / 'store'}", "tables", "create").exit_code == 0
    proc = _serve(tmp_path, "--access-log", str(tmp_path / "no" / "such" / "log"))
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and out == ""
    assert err.strip().splitlines() == [f"Error: No such file or directory: '{tmp_path / 'no' / 'such' / 'log'}'"]
