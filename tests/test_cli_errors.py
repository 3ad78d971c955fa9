"""Errors, not silence (issue 24, point 2): bad input exits 2 with one line, what is not there
exits 1 with one line, file errors are one line, and a missing embedded store is refused with
the `tables create` hint and never created."""

import json

import pytest
from cli_helpers import DAY, copy_url, make_demo_store, run
from cli_helpers import fails as shared_fails
from store_helpers import all_rows

from socorro_store import open_store
from socorro_store.backends import open_backend
from socorro_store.errors import StoreNotFound

HINT = "run `socorro-store tables create`"


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory):
    return make_demo_store(tmp_path_factory, "errors", crashes=20, seed=3)


@pytest.fixture
def url(demo_store, tmp_path):
    return copy_url(demo_store, tmp_path)


def fails(result, code):
    """As :func:`cli_helpers.fails`, and nothing on stdout."""
    line = shared_fails(result, code)
    assert result.stdout == ""
    return line


def rows_of(url):
    with open_backend(url, create=False) as backend:
        return all_rows(backend)


@pytest.mark.parametrize("args, code, words", [
    (["metrics", "show", "2026-13-45"], 2, "not a metrics row"),
    (["metrics", "show", "2026-02-30T10"], 2, "not a metrics row"),
    (["metrics", "show", "2031-01-01"], 1, "no counters"),
    (["crashes", "list", "--from", "2026-11-24", "--to", "2026-11-23"], 2, "not before --to"),
    (["crashes", "list", "--from", "2026-11-24", "--to", "2026-11-24"], 2, "not before --to"),
    (["signatures", "top", "--from", "2026-11-24T10:00", "--to", "2026-11-24T09:00"], 2, "not before --to"),
    (["signatures", "show", "no such sig"], 1, "no counters for signature 'no such sig'"),
    (["raw", "get", "metrics", "no-such-row"], 1, "no row 'no-such-row'"),
    (["raw", "get", "no_such_table", "r"], 1, "no_such_table"),
    (["jobs", "show", "20260101T000000000Z-abcdef"], 1, "no job run"),
    (["jobs", "show", "not-a-run"], 2, "bad run id"),
])
def test_bad_input_exits_2_and_not_found_exits_1_with_one_line(url, args, code, words):
    before = rows_of(url)
    assert words in fails(run(url, *args), code)
    assert rows_of(url) == before


@pytest.mark.parametrize("bad_url, words", [
    ("hbase://[::1", "malformed store URL"),  # a ValueError traceback before
    ("hbase://h:9_090", "bad port"),
    ("hbase://h?pool_size=%2B4", "pool_size must be an integer"),
])
def test_a_malformed_store_url_is_one_line_exit_2(bad_url, words):
    assert words in fails(run(bad_url, "ping"), 2)


@pytest.mark.parametrize("args", [
    ["serve", "--port", "9_090"], ["serve", "--port", "+9090"], ["serve", "--port", "\u0669\u0660\u0669\u0660"],
    ["web", "--threads", " 16"], ["web", "--request-timeout", "3_0"], ["serve", "--idle-timeout", "\u0662"],
    ["demo", "--crashes", "1_0"], ["crashes", "list", "--limit", "\uff15"],
])
def test_a_number_option_takes_ascii_digits_only(tmp_path, args):
    """click's int() and float() took each of these (the store URL's ports had the same hole)."""
    assert "ASCII digits" in fails(run(f"embedded://{tmp_path / 'none'}", *args), 2)
    assert not (tmp_path / "none").exists()


def test_what_exists_still_answers(url):
    """The checks above refuse only what is wrong: real rows, signatures and ranges answer."""
    assert json.loads(run(url, "metrics", "show", DAY.isoformat(), "--json").stdout)
    top = json.loads(run(url, "signatures", "top", "--day", DAY.isoformat(), "--json").stdout)
    signature = top["signatures"][0]["signature"]
    assert run(url, "signatures", "show", signature).exit_code == 0
    assert run(url, "metrics", "show", "crash_report_queues").exit_code == 0


def test_file_errors_are_one_line_and_create_nothing(url, tmp_path):
    line = fails(run(url, "export", "--day", DAY.isoformat(), "-o", str(tmp_path / "no" / "such" / "x")), 1)
    assert line == f"Error: No such file or directory: '{tmp_path / 'no' / 'such' / 'x'}'"
    assert not (tmp_path / "no").exists()
    fails(run(url, "import", str(tmp_path / "missing.msgpack")), 2)  # click's own: missing input file
    (tmp_path / "file").write_text("x")
    line = fails(run(url, "crash", "dumps", run(url, "crashes", "list", "--day", DAY.isoformat(), "--limit", "1")
                     .stdout.strip(), "--dir", str(tmp_path / "file" / "sub")), 1)
    assert "Not a directory" in line or "File exists" in line


@pytest.mark.parametrize("args", [
    ["crashes", "list", "--day", "2026-11-23"], ["metrics", "show", "2026"], ["signatures", "show", "x"],
    ["export", "--day", "2026-11-23", "-o", "OUT"], ["queue", "status"], ["tables", "list"],
    ["jobs", "list"], ["rollup"], ["verify-indexes"], ["ping"], ["crash", "show", "bp-de1bb258-cbbf-4589-a673-34f800160918"],
])
def test_a_missing_embedded_store_is_refused_with_the_hint_and_not_created(tmp_path, args):
    store = tmp_path / "typo"
    args = [str(tmp_path / "out") if a == "OUT" else a for a in args]
    assert f"run `socorro-store --url embedded://{store} tables create`" in fails(run(f"embedded://{store}", *args), 1)
    assert not store.exists() and not (tmp_path / "out").exists()


def test_open_store_creates_nothing_until_create_tables(tmp_path):
    store_dir = tmp_path / "typo" / "store"
    with open_store(f"embedded://{store_dir}") as store:
        assert not (tmp_path / "typo").exists()
        with pytest.raises(StoreNotFound, match="run `socorro-store tables create`"):
            store.get_metrics("2026")
        assert store.backend.list_tables() == []
        assert not (tmp_path / "typo").exists()
        store.create_tables()
        assert "crash_reports" in store.backend.list_tables()
    assert (store_dir / "catalog.sqlite").is_file()
    with pytest.raises(StoreNotFound):
        open_backend(f"embedded://{tmp_path / 'other'}", create=False)
    assert not (tmp_path / "other").exists()
