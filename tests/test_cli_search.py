"""``socorro-store search``: Super Search's parameters on the command line, its three outputs,
its shorthands, its errors (one line, exit 2 or 1), protected fields for operators, and the
``fields``, ``reindex`` and ``status`` subcommands, on an embedded store whose crashes were
saved and processed through the store API."""

import csv
import io
import json
import os
import pty
import random
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pytest
from cli_helpers import copy_url, fails, ok, run
from store_helpers import crash_id, processed, raw_crash

from socorro_store import open_store
from socorro_store.crashstore.store import CrashStore
from socorro_store.errors import SearchUnavailable
from socorro_store.search.fields import DEFAULT_COLUMNS, FIELDS

#: the crashes' day: yesterday, inside search's default range (the last 7 days)
DAY = (datetime.now(timezone.utc) - timedelta(days=1)).replace(hour=8, minute=0, second=0, microsecond=0)

# (signature, product, version, build, email or None)
CRASHES = [
    ("OOM | small", "Firefox", "120.0", 20231120093012, "a@example.com"),
    ("OOM | small", "Firefox", "120.0", 20231120093012, None),
    ("OOM | small", "Firefox", "121.0", 20231201093012, None),
    ("OOM | large", "Firefox", "121.0", 20231201093012, "b@example.com"),
    ("OOM | large", "Fenix", "120.1", 20231121000000, None),
    ("js::GC::Mark", "Firefox", "120.0", 20231120093012, None),
    ("js::GC::Mark", "Fenix", "120.1", 20231121000000, "a@example.com"),
    ("mozilla::ipc::Fatal", "Firefox", "122.0b1", 20231210000000, None),
]


def _save(store, rng, n, signature, product, version, build, email):
    cid = crash_id(format(n % 16, "x"), day=DAY, rng=rng)
    submitted = DAY + timedelta(minutes=n)
    store.save_raw_crash(raw_crash(cid, submitted, ProductName=product, Version=version), {}, cid)
    extra = {"email": email, "url": f"https://example.com/{n}"} if email else {}
    store.save_processed(processed(cid, signature=signature, product=product, version=version, build=build,
                                   os_name="Windows NT", date_processed=submitted.isoformat(),
                                   completeddatetime=(submitted + timedelta(minutes=1)).isoformat(), **extra))
    return cid


@pytest.fixture(scope="module")
def search_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("search") / "store"
    rng = random.Random(40)
    with open_store(f"embedded://{path}") as store:
        store.create_tables()
        for n, crash in enumerate(CRASHES):
            _save(store, rng, n, *crash)
        store.settle()
    return path


@pytest.fixture
def url(search_store, tmp_path):
    return copy_url(search_store, tmp_path)


def library(url, params):
    """What the library answers (the CLI must print the same)."""
    with open_store(url) as store:
        return store.super_search(params, unredacted=True)


def search_json(url, *args):
    return json.loads(ok(run(url, "search", *args, "--json")))


# -- the three outputs ----------------------------------------------------------------------------

def test_json_is_the_librarys_response(url):
    params = [("product", "Firefox"), ("signature", "~OOM"), ("_facets", "version")]
    answer = search_json(url, "product=Firefox", "signature=~OOM", "_facets=version")
    assert answer == json.loads(json.dumps(library(url, params), default=str))
    assert answer["total"] == 4 and {hit["product"] for hit in answer["hits"]} == {"Firefox"}
    assert answer["facets"]["version"] == [{"term": "120.0", "count": 2}, {"term": "121.0", "count": 2}]


def test_table_shows_the_hits_each_facet_and_the_total(url):
    answer = search_json(url, "signature=~OOM", "_facets=signature", "_facets=version")
    lines = ok(run(url, "search", "signature=~OOM", "_facets=signature", "_facets=version")).splitlines()
    assert lines[0].split() == list(DEFAULT_COLUMNS) and set(lines[1]) <= {"-", " "}
    assert [line.split()[0] for line in lines[2:2 + answer["total"]]] == [hit["uuid"] for hit in answer["hits"]]
    text = "\n".join(lines)
    assert "\nsignature:\nterm" in text and "\nversion:\nterm" in text
    assert any(line.split() == ["OOM", "|", "small", "3"] for line in lines)
    assert lines[-1] == "total 5 (hits 1-5)"
    assert ok(run(url, "search", "signature=~OOM", "--table")) == "\n".join(
        ok(run(url, "search", "signature=~OOM")).splitlines()) + "\n"


def test_table_of_histograms_sub_facets_and_cardinality(url):
    out = ok(run(url, "search", "_histogram.date=product", "_aggs.signature=version",
                 "_facets=_cardinality.signature", "--number", "0"))
    lines = out.splitlines()
    assert "cardinality_signature: 4" in lines
    heading = lines.index("histogram_date:")
    assert lines[heading + 1].split() == ["term", "count", "product"]
    assert lines[heading + 3].split() == [DAY.strftime("%Y-%m-%dT00:00:00Z"), "8", "Firefox", "6,", "Fenix", "2"]
    heading = lines.index("signature:")
    assert lines[heading + 1].split() == ["term", "count", "version"]
    assert lines[heading + 3].split() == ["OOM", "|", "small", "3", "120.0", "2,", "121.0", "1"]
    assert lines[-1] == "total 8 (no hits shown)"


def test_csv_is_the_hits_with_the_columns_as_header(url):
    out = ok(run(url, "search", "product=Fenix", "--column", "uuid", "--column", "build_id", "--column", "email",
                 "--sort", "uuid", "--csv"))
    rows = list(csv.reader(io.StringIO(out)))
    answer = search_json(url, "product=Fenix", "_columns=uuid", "_columns=build_id", "_columns=email", "_sort=uuid")
    assert rows[0] == ["uuid", "build_id", "email"]
    assert rows[1:] == [[hit["uuid"], str(hit["build_id"]), hit["email"] or ""] for hit in answer["hits"]]
    assert len(rows) == 3
    assert ok(run(url, "search", "product=Nothing", "--csv")).splitlines() == [",".join(DEFAULT_COLUMNS)]


def test_no_hits_and_an_offset_past_the_end(url):
    assert ok(run(url, "search", "product=Nothing")).splitlines()[-1] == "total 0 (no hits shown)"
    lines = ok(run(url, "search", "--offset", "6", "--sort", "uuid")).splitlines()
    assert lines[-1] == "total 8 (hits 7-8)" and len([line for line in lines[2:] if "-" in line[:36]]) >= 2


# -- shorthands -------------------------------------------------------------------------------------

def test_shorthands_are_the_long_parameters(url):
    short = search_json(url, "signature=~OOM", "--facet", "version", "--facet", "product", "--column", "uuid",
                        "--column", "build_id", "--sort", "-build_id", "--number", "2", "--offset", "1")
    long = search_json(url, "signature=~OOM", "_facets=version", "_facets=product", "_columns=uuid",
                       "_columns=build_id", "_sort=-build_id", "_results_number=2", "_results_offset=1")
    assert short == long
    assert len(short["hits"]) == 2 and set(short["hits"][0]) == {"uuid", "build_id"}
    assert set(short["facets"]) == {"version", "product"}
    # an option first is the query form too, not an unknown command
    assert json.loads(ok(run(url, "search", "--json", "product=Fenix")))["total"] == 2


# -- errors -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, parameter", [
    (["produkt=Firefox"], "produkt"),
    (["_columns=nosuchcolumn"], "_columns"),
    (["build_id=~2023"], "build_id"),
    (["date=>=2026-13-45"], "date"),
    (["_results_number=1001"], "_results_number"),
    (["--number", "1001"], "_results_number"),
    (["--offset", "9950", "--number", "100"], "_results_offset"),
    (["status=1"], "status"),  # named like a subcommand: a parameter, refused as one
])
def test_a_bad_parameter_exits_2_naming_it(url, args, parameter):
    line = fails(run(url, "search", *args), 2)
    assert parameter in line, line


@pytest.mark.parametrize("args", [["product"], ["=Firefox"], ["feilds"], ["product=Firefox", "oops"]])
def test_an_argument_not_name_equals_value_is_a_usage_error(url, args):
    assert "FIELD=VALUE" in fails(run(url, "search", *args), 2)


def test_no_search_configured_exits_1_in_one_line(url, monkeypatch):
    monkeypatch.setenv("SOCORRO_SEARCH_URL", "none")
    for args in (["product=Firefox"], [], ["reindex"]):
        assert fails(run(url, "search", *args), 1).startswith("Error: this store has no search configured (")
    status = json.loads(ok(run(url, "search", "status", "--json")))
    assert status["configured"] is False
    assert ok(run(url, "search", "status")).startswith("search: not configured")
    assert "email" in ok(run(url, "search", "fields"))  # the field list needs no engine


@pytest.mark.parametrize("args", [["product=Firefox"], ["reindex"], ["status"], ["fields"]])
def test_a_missing_store_fails_and_nothing_is_created(tmp_path, args):
    missing = tmp_path / "nowhere"
    assert "tables create" in fails(run(f"embedded://{missing}", "search", *args), 1)
    assert not missing.exists()


def test_search_unavailable_exits_1_in_one_line(url, monkeypatch):
    def unavailable(self, *args, **kwargs):
        raise SearchUnavailable("the search engine did not answer")

    monkeypatch.setattr(CrashStore, "super_search", unavailable)
    assert "did not answer" in fails(run(url, "search", "product=Firefox"), 1)


# -- protected fields -------------------------------------------------------------------------------

def test_operators_may_search_facet_sort_and_show_protected_fields(url):
    answer = search_json(url, "email=a@example.com", "--column", "uuid", "--column", "email", "--column", "url",
                         "--facet", "email", "--sort", "email")
    assert answer["total"] == 2 and {hit["email"] for hit in answer["hits"]} == {"a@example.com"}
    assert all(hit["url"].startswith("https://example.com/") for hit in answer["hits"])
    assert answer["facets"]["email"] == [{"term": "a@example.com", "count": 2}]
    assert "a@example.com" in ok(run(url, "search", "email=a@example.com", "--column", "email"))
    assert search_json(url, "email=__null__")["total"] == 5


# -- fields, status, reindex ------------------------------------------------------------------------

def test_fields_lists_every_field_with_type_and_access(url):
    lines = ok(run(url, "search", "fields")).splitlines()
    assert lines[0].split() == ["name", "type", "access", "description"]
    listed = {line.split()[0]: line.split()[1:3] for line in lines[2:]}
    assert set(listed) == set(FIELDS)
    assert listed["email"][1] == "protected" and listed["product"][1] == "public"
    assert listed["signature"][0] and listed["date"][0]
    with open_store(url) as store:
        assert json.loads(ok(run(url, "search", "fields", "--json"))) == json.loads(
            json.dumps(store.search_fields(unredacted=True), default=str))


def test_status_says_how_many_documents(url):
    status = json.loads(ok(run(url, "search", "status", "--json")))
    assert status["configured"] is True and status["documents"] == len(CRASHES) and status["pending"] == 0
    lines = ok(run(url, "search", "status")).splitlines()
    assert f"documents  {len(CRASHES)}" in lines


def test_reindex_prints_the_counts_and_search_answers_the_same(url):
    args = ["signature=~OOM", "_facets=version", "_histogram.date=product", "_sort=uuid"]
    before = search_json(url, *args)
    report = json.loads(ok(run(url, "search", "reindex", "--json")))
    assert report == {"indexed": len(CRASHES), "removed": 0, "days": 0}
    assert search_json(url, *args) == before
    out = ok(run(url, "search", "reindex", "--since", DAY.date().isoformat()))
    assert out == f"indexed {len(CRASHES)} crash(es), removed 0 document(s); 2 day(s) read\n"
    assert search_json(url, *args) == before
    assert "2026-13-45" in fails(run(url, "search", "reindex", "--since", "2026-13-45"), 2)


def test_reindex_draws_a_progress_bar_on_a_terminal(url):
    """Through a pseudo-terminal: the bar is drawn only when stderr is one."""
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "socorro_store", "--url", url, "search", "reindex"],
                              stdout=subprocess.PIPE, stderr=follower, timeout=120, check=False)
        os.close(follower)
        follower = None
        drawn = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the terminal's other side is closed
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        if follower is not None:
            os.close(follower)
        os.close(leader)
    assert proc.returncode == 0, drawn
    assert b"reindex" in drawn and str(len(CRASHES)).encode() in drawn
    assert proc.stdout.decode().startswith(f"indexed {len(CRASHES)} crash(es)")


def test_every_command_sees_an_embedded_stores_own_search(url):
    """The commands' shared opener searches as open_store does: ``queue status`` (and ``web``)
    saw no search on an embedded store."""
    search = json.loads(ok(run(url, "queue", "status", "--json")))["search"]
    assert search["configured"] is True and search["documents"] == len(CRASHES)


def test_search_url_names_another_index(url, tmp_path):
    other = f"embedded://{tmp_path / 'other-index'}"
    assert search_json(url, "product=Firefox", "--search-url", other)["total"] == 0
    assert ok(run(url, "search", "reindex", "--search-url", other)).startswith(f"indexed {len(CRASHES)} crash(es)")
    assert search_json(url, "--search-url", other, "product=Firefox") == search_json(url, "product=Firefox")
    assert fails(run(url, "search", "status", "--search-url", "nosuch://x"), 2).startswith("Error: unknown search URL")


# -- help -------------------------------------------------------------------------------------------

def test_search_help_lists_the_query_form_and_the_subcommands():
    out = ok(run("embedded:///nowhere", "search", "--help"))
    assert "search [OPTIONS] [FIELD=VALUE]... | COMMAND [ARGS]..." in out
    for words in ("--facet F", "--column C", "--sort S", "--number N", "--offset N", "--csv", "--json", "--table",
                  "fields", "reindex", "status", "_histogram.date"):
        assert words in out, words
    commands = out.split("Commands:", 1)[1].split()
    assert "query" not in commands


@pytest.mark.parametrize("command", ["fields", "reindex", "status", "query"])
def test_each_subcommand_has_help(command):
    out = ok(run("embedded:///nowhere", "search", command, "--help"))
    assert out.startswith(f"Usage: main search {command} [OPTIONS]")  # CliRunner names the program "main"
