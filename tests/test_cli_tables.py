"""``socorro-store tables …`` through click's CliRunner, and as a real ``python -m`` subprocess."""

import json
import os
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

from socorro_store.backends import RowMutation, open_backend
from socorro_store.cli import main
from socorro_store.config import ENV_VAR
from socorro_store.errors import BackendError, InvalidArgument
from socorro_store.schema import table_admin as admin
from socorro_store.schema.spec_loader import default_spec_dir, load_specs
from socorro_store.schema.specs import SALTS

SHIPPED = sorted(load_specs())


@pytest.fixture
def url(tmp_path):
    return f"embedded://{tmp_path / 'store'}"


@pytest.fixture
def spec_copy(tmp_path):
    """A writable copy of the shipped spec directory."""
    directory = tmp_path / "specs"
    shutil.copytree(default_spec_dir(), directory, ignore=shutil.ignore_patterns("__*"))
    return directory


def run(url, *args, env=None):
    runner = CliRunner()
    return runner.invoke(main, ["--url", url, *args], env=env, catch_exceptions=False)


def one_line_error(result, code=2):
    """Exit ``code`` (2: bad input, 1: a failure), one ``Error:`` line on stderr, no traceback."""
    assert result.exit_code == code, (result.output, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0]


def live_tables(url):
    with open_backend(url) as backend:
        return backend.list_tables()


def set_attribute(spec_dir, table, family, attribute, value):
    path = spec_dir / f"{table}.toml"
    lines = path.read_text().splitlines()
    section = f"[families.{family}]"
    start = lines.index(section)
    for i in range(start + 1, len(lines)):
        if lines[i].startswith(f"{attribute} ="):
            lines[i] = f"{attribute} = {value}"
            break
    else:
        raise AssertionError(f"{attribute} not in {section}")
    path.write_text("\n".join(lines) + "\n")


# -- create / verify --------------------------------------------------------------------------

def test_create_then_verify(url):
    created = run(url, "tables", "create")
    assert created.exit_code == 0, created.output
    assert sorted(line.split()[1] for line in created.output.splitlines()) == SHIPPED
    assert all(line.startswith("created ") for line in created.output.splitlines())
    assert live_tables(url) == SHIPPED
    verified = run(url, "tables", "verify")
    assert verified.exit_code == 0, verified.output
    assert "OK: every table matches its spec" in verified.output


def test_create_is_idempotent(url):
    assert run(url, "tables", "create").exit_code == 0
    with open_backend(url) as backend:
        backend.mutate_rows("metrics", [RowMutation(b"2024", {b"counters:x": b"1"})])
    again = run(url, "tables", "create", "--json")
    assert again.exit_code == 0
    # no codec map, pre-split note or unset attribute on embedded: the report is just this
    assert json.loads(again.output) == {"created": [], "existing": list(load_specs()), "mismatched": {}}
    with open_backend(url) as backend:
        assert backend.get_row("metrics", b"2024") == {b"counters:x": b"1"}


def test_verify_reports_a_changed_attribute(url, spec_copy):
    assert run(url, "tables", "create").exit_code == 0
    set_attribute(spec_copy, "metrics", "counters", "VERSIONS", 4)
    set_attribute(spec_copy, "crash_reports", "raw_data", "COMPRESSION", '"GZ"')
    drift = run(url, "tables", "verify", "--specs", str(spec_copy))
    assert drift.exit_code == 1
    assert "metrics: family counters: VERSIONS is 1, spec says 4" in drift.output
    assert "crash_reports: family raw_data: COMPRESSION is 'LZO', spec says 'GZ'" in drift.output
    assert "DRIFT in 2 table(s)" in drift.output
    as_json = run(url, "tables", "verify", "--specs", str(spec_copy), "--json")
    assert as_json.exit_code == 1
    report = json.loads(as_json.output)
    assert report["ok"] is False and sorted(report["drift"]) == ["crash_reports", "metrics"]


def test_verify_reports_missing_tables(url):
    assert run(url, "tables", "verify").exit_code == 1
    with open_backend(url) as backend:
        assert backend.list_tables() == []  # verify creates nothing


def test_create_reports_a_mismatch_and_does_not_overwrite(url, spec_copy):
    assert run(url, "tables", "create").exit_code == 0
    set_attribute(spec_copy, "jobs", "lease", "VERSIONS", 9)
    result = run(url, "tables", "create", "--specs", str(spec_copy))
    assert result.exit_code == 1
    assert "MISMATCH jobs: family lease: VERSIONS is 5, spec says 9" in result.output
    described = json.loads(run(url, "tables", "describe", "jobs", "--json").output)
    assert described["families"]["lease"]["VERSIONS"] == 5


def test_create_with_a_new_spec_adds_only_that_table(url, spec_copy):
    assert run(url, "tables", "create").exit_code == 0
    (spec_copy / "extra.toml").write_text('[table]\nname = "extra"\n[families.f]\nVERSIONS = 2\n')
    result = run(url, "tables", "create", "--specs", str(spec_copy))
    assert result.exit_code == 0
    assert "created extra" in result.output and result.output.count("created") == 1
    assert live_tables(url) == sorted(SHIPPED + ["extra"])


# -- list / describe / ddl / drop -------------------------------------------------------------

def test_list_and_describe(url):
    # a read command never creates a store: exit 1 and nothing on disk
    missing = run(url, "tables", "list")
    assert missing.exit_code == 1 and "no store at" in missing.stderr and "tables create" in missing.stderr
    assert not os.path.exists(url.split("://", 1)[1])
    run(url, "tables", "create")
    assert run(url, "tables", "list").output.splitlines() == SHIPPED
    assert json.loads(run(url, "tables", "list", "--json").output) == SHIPPED
    described = json.loads(run(url, "tables", "describe", "crash_reports", "--json").output)
    assert described["name"] == "crash_reports"
    assert list(described["families"]) == ["flags", "ids", "meta_data", "processed_data", "raw_data",
                                           "timestamps"]
    assert described["families"]["meta_data"] == {"COMPRESSION": "LZO", "VERSIONS": 3, "TTL": 2147483647,
                                                  "BLOCKSIZE": 65536, "IN_MEMORY": False, "BLOCKCACHE": True}
    text = run(url, "tables", "describe", "metrics").output
    assert text.splitlines()[0] == "metrics" and "counters: COMPRESSION=NONE, VERSIONS=1" in text


def test_ddl(url):
    result = run(url, "tables", "ddl")
    assert result.exit_code == 0
    statements = result.output.splitlines()
    assert len(statements) == len(SHIPPED)
    splits = "SPLITS => [" + ", ".join(f"'{s}'" for s in SALTS[1:]) + "]"
    by_table = {line.split("'")[1]: line for line in statements}
    for name, spec in load_specs().items():
        assert (splits in by_table[name]) == spec.salted, name
    assert "{NAME => 'raw_data', COMPRESSION => 'LZO', VERSIONS => '3'" in by_table["crash_reports"]
    prefixed = run(url, "tables", "ddl", "--table-prefix", "prod").output
    assert "create 'prod_crash_reports'," in prefixed
    as_json = run(url, "tables", "ddl", "--json")
    assert as_json.exit_code == 0 and json.loads(as_json.output) == statements


def test_drop_needs_yes(url):
    run(url, "tables", "create")
    refused = run(url, "tables", "drop", "metrics")
    assert refused.exit_code == 2 and "--yes" in refused.stderr
    assert "metrics" in live_tables(url)
    dropped = run(url, "tables", "drop", "metrics", "jobs", "--yes")
    assert dropped.exit_code == 0 and dropped.output.splitlines() == ["dropped metrics", "dropped jobs"]
    assert live_tables(url) == [n for n in SHIPPED if n not in ("metrics", "jobs")]
    everything = run(url, "tables", "drop", "--yes", "--json")
    assert sorted(json.loads(everything.output)["dropped"]) == [n for n in SHIPPED if n not in ("metrics", "jobs")]
    assert live_tables(url) == []


# -- errors: one line on stderr, exit 2, no traceback, nothing created ------------------------

@pytest.mark.parametrize("bad_url", ["mysql://x", "hbase://h:port", "embedded://d?sync=maybe", "hbase://h?x=1"])
def test_bad_url(bad_url):
    line = one_line_error(run(bad_url, "tables", "list"))
    assert "URL" in line or "url" in line or "option" in line or "port" in line


def test_bad_url_from_environment(tmp_path):
    result = CliRunner().invoke(main, ["tables", "list"], env={ENV_VAR: "nosuch://x"})
    one_line_error(result)


def test_missing_table(url):
    run(url, "tables", "create")
    # a missing table is a failure (exit 1), not bad input
    assert "nope" in one_line_error(run(url, "tables", "describe", "nope"), code=1)
    assert "nope" in one_line_error(run(url, "tables", "drop", "metrics", "nope", "--yes"), code=1)
    assert "metrics" in live_tables(url)  # nothing dropped when one name is missing


def test_malformed_spec_dir_creates_nothing(url, spec_copy):
    set_attribute(spec_copy, "metrics", "counters", "VERSIONS", '"many"')
    line = one_line_error(run(url, "tables", "create", "--specs", str(spec_copy)))
    assert "metrics.toml" in line and "table metrics" in line and "families.counters.VERSIONS" in line
    assert live_tables(url) == []
    one_line_error(run(url, "tables", "verify", "--specs", str(spec_copy)))


def test_missing_spec_dir(url, tmp_path):
    line = one_line_error(run(url, "tables", "create", "--specs", str(tmp_path / "empty")))
    assert "no *.toml" in line
    assert live_tables(url) == []


# -- a real process ---------------------------------------------------------------------------

def cli_process(*args, env_url=None):
    env = dict(os.environ)
    env.pop(ENV_VAR, None)
    if env_url:
        env[ENV_VAR] = env_url
    return subprocess.run([sys.executable, "-m", "socorro_store", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def test_subprocess_create_verify_and_errors(url, spec_copy):
    created = cli_process("--url", url, "tables", "create")
    assert created.returncode == 0, created.stderr
    assert created.stdout.count("created ") == len(SHIPPED)
    verified = cli_process("tables", "verify", env_url=url)  # URL from the environment
    assert verified.returncode == 0, verified.stdout + verified.stderr
    set_attribute(spec_copy, "crash_reports_index_unprocessed_flag", "processor_state", "TTL", 3600)
    drift = cli_process("--url", url, "tables", "verify", "--specs", str(spec_copy))
    assert drift.returncode == 1
    assert ("crash_reports_index_unprocessed_flag: family processor_state: TTL is 2147483647, spec says 3600"
            in drift.stdout)
    bad = cli_process("--url", "hbase://h?pool_size=zero", "tables", "list")
    assert bad.returncode == 2
    assert bad.stdout == "" and len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr


def test_unusable_store_directory_is_one_line_exit_1(tmp_path):
    """A corrupt or missing store is a failure (exit 1), not bad input."""
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "catalog.sqlite").write_bytes(b"this is not a database")
    for url in (f"embedded://{corrupt}", "embedded:///proc/no-such-dir"):
        result = CliRunner().invoke(main, ["--url", url, "tables", "list"])
        assert result.exit_code == 1, result.output
        assert result.stderr.count("\n") == 1
        assert result.stderr.startswith(("Error: embedded store", "Error: no store at")), result.stderr


# -- codec maps (embedded has every codec; a real HBase that lacks one: test_tables_real_hbase) ---

LZO_FAMILIES = sum(1 for spec in load_specs().values() for fam in spec.families if fam.compression == "LZO")
LZO_TABLES = sorted(name for name, spec in load_specs().items()
                    if any(fam.compression == "LZO" for fam in spec.families))


def test_create_under_a_codec_map_names_it_and_verify_judges_by_it(url):
    created = run(url, "tables", "create", "--codec-map", "lzo=gz")
    assert created.exit_code == 0, created.output
    assert created.output.splitlines()[0] == (f"codec map: LZO->GZ (applies to {LZO_FAMILIES} families in "
                                              f"{len(LZO_TABLES)} table(s))")
    described = json.loads(run(url, "tables", "describe", "crash_reports", "--json").output)
    assert described["families"]["raw_data"]["COMPRESSION"] == "GZ"
    assert described["families"]["flags"]["COMPRESSION"] == "NONE"  # only LZO families are mapped

    as_json = json.loads(run(url, "tables", "create", "--codec-map", "LZO=GZ", "--json").output)
    assert as_json["codec_map"] == {"LZO": "GZ"} and sorted(as_json["mapped"]) == LZO_TABLES
    assert as_json["mapped"]["crash_reports"] == {"meta_data": ["LZO", "GZ"], "processed_data": ["LZO", "GZ"],
                                                  "raw_data": ["LZO", "GZ"]}
    assert as_json["mismatched"] == {} and sorted(as_json["existing"]) == SHIPPED

    clean = run(url, "tables", "verify", "--codec-map", "LZO=GZ", "--json")
    assert clean.exit_code == 0 and json.loads(clean.output)["codec_map"] == {"LZO": "GZ"}
    unmapped = run(url, "tables", "verify")
    assert unmapped.exit_code == 1
    assert "crash_reports: family raw_data: COMPRESSION is 'GZ', spec says 'LZO'" in unmapped.output
    assert f"DRIFT in {len(LZO_TABLES)} table(s)" in unmapped.output
    other = run(url, "tables", "verify", "--codec-map", "LZO=ZSTD")
    assert other.exit_code == 1
    assert "crash_reports: family raw_data: COMPRESSION is 'GZ', spec says 'LZO' (mapped to 'ZSTD')" in other.output
    # without a mapping, create reports the mapped tables as mismatched and keeps them
    again = run(url, "tables", "create")
    assert again.exit_code == 1 and "MISMATCH crash_reports: family raw_data: COMPRESSION is 'GZ'" in again.output


def test_a_table_with_the_specs_own_codec_matches_under_a_map(url):
    assert run(url, "tables", "create").exit_code == 0
    assert run(url, "tables", "verify", "--codec-map", "LZO=GZ").exit_code == 0


def test_codec_map_from_the_environment_and_in_ddl(url):
    env = {"SOCORRO_STORE_CODEC_MAP": "LZO=GZ, GZ=NONE"}
    assert run(url, "tables", "create", env=env).output.startswith("codec map: LZO->GZ, GZ->NONE")
    assert run(url, "tables", "verify", env=env).exit_code == 0
    log = json.loads(run(url, "tables", "describe", "jobs", "--json").output)["families"]["log"]
    assert log["COMPRESSION"] == "NONE"  # applied once: LZO->GZ does not go on to NONE
    raw = json.loads(run(url, "tables", "describe", "crash_reports", "--json").output)["families"]["raw_data"]
    assert raw["COMPRESSION"] == "GZ"
    ddl = run(url, "tables", "ddl", "--codec-map", "LZO=GZ", "crash_reports", "metrics")
    assert ddl.exit_code == 0 and len(ddl.output.splitlines()) == 2
    assert "COMPRESSION => 'LZO'" not in ddl.output and "{NAME => 'raw_data', COMPRESSION => 'GZ'" in ddl.output
    assert "nope" in one_line_error(run(url, "tables", "ddl", "nope"))


@pytest.mark.parametrize("bad", ["LZO", "LZO=", "LZO=ZIP", "NONE=GZ", "GZ=gz", "LZO=GZ,LZO=NONE"])
def test_bad_codec_map_is_bad_input_and_creates_nothing(url, bad):
    line = one_line_error(run(url, "tables", "create", "--codec-map", bad))
    assert "codec map" in line
    assert not os.path.exists(url.split("://", 1)[1])  # refused before the store was opened
    one_line_error(run(url, "tables", "verify", "--codec-map", bad))
    one_line_error(run(url, "tables", "ddl", "--codec-map", bad))


def test_embedded_create_says_nothing_of_splits_or_unset_attributes(url):
    """Embedded has no regions and sets every attribute: no pre-split note, nothing unchecked."""
    text = run(url, "tables", "create").output
    assert all(line.startswith("created ") for line in text.splitlines())
    report = json.loads(run(url, "tables", "create", "--json").output)
    assert set(report) == {"created", "existing", "mismatched"}
    verified = json.loads(run(url, "tables", "verify", "--json").output)
    assert verified["unchecked"] == [] and verified["not_applicable"] == []


class RefusingBackend:
    """An embedded backend that refuses, as HBase does, to create a family with some codecs."""

    def __init__(self, inner, refused):
        self.inner, self.refused, self.created = inner, set(refused), []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def create_table(self, spec):
        bad = [fam.compression for fam in spec.families if fam.compression in self.refused]
        if bad:
            raise BackendError(f"org.apache.hadoop.hbase.DoNotRetryIOException: java.lang.UnsatisfiedLinkError: "
                               f"no {bad[0].lower()} Set hbase.table.sanity.checks to false at conf")
        self.created.append(spec.name)
        self.inner.create_table(spec)


def test_refused_codec_is_caught_before_any_table_is_created(url):
    with open_backend(url) as inner:
        backend = RefusingBackend(inner, {"LZO"})
        with pytest.raises(admin.CodecUnavailable) as caught:
            admin.create_tables(backend)
        assert inner.list_tables() == []
        assert all(name.startswith(admin.PROBE_TABLE) for name in backend.created)  # probes only
        err = caught.value
        assert list(err.codecs) == ["LZO"] and err.codecs["LZO"] == "java.lang.UnsatisfiedLinkError: no lzo"
        assert len(err.needed_by["LZO"]) == LZO_FAMILIES and "crash_reports:raw_data" in err.needed_by["LZO"]
        assert "--codec-map LZO=GZ" in str(err) and "sanity" not in str(err)
        # mapped to a codec the cluster has: everything is created, the probes are gone
        report = admin.create_tables(backend, codec_map={"LZO": "GZ"})
        assert sorted(report.created) == SHIPPED and inner.list_tables() == SHIPPED
        assert admin.verify_tables(backend, codec_map={"LZO": "GZ"}) == {}


def test_codec_check_skips_tables_that_exist(url):
    """Only the codecs of tables still to create are checked: a re-run makes no scratch table."""
    with open_backend(url) as inner:
        admin.create_tables(inner)
        backend = RefusingBackend(inner, {"LZO"})
        report = admin.create_tables(backend)
        assert backend.created == [] and sorted(report.existing) == SHIPPED


def test_library_codec_map_is_validated_up_front(url):
    with open_backend(url) as backend:
        with pytest.raises(InvalidArgument, match="ZIP"):
            admin.check_codecs(backend, ["GZ", "ZIP"])
        assert admin.check_codecs(backend, ["NONE", "LZO", "GZ"]) == {}  # embedded has them all
        for bad in ({"LZO": "ZIP"}, {"NONE": "GZ"}, ["LZO=GZ"]):
            with pytest.raises(InvalidArgument):
                admin.create_tables(backend, codec_map=bad)
        assert backend.list_tables() == []


def test_compact_purges_delete_markers(url):
    run(url, "tables", "create")
    with open_backend(url) as backend:
        backend.mutate_rows("metrics", [RowMutation(b"2016", {b"counters:x": b"1"})])
        backend.mutate_rows("metrics", [RowMutation(b"2016", delete_row=True)])
        # a put older than the delete is masked until a compaction drops the marker
        backend.mutate_rows("metrics", [RowMutation(b"2016", {b"counters:x": b"old"})], timestamp=1)
        assert backend.get_row("metrics", b"2016") == {}
    result = run(url, "tables", "compact", "metrics", "--json")
    assert result.exit_code == 0 and json.loads(result.output) == {"compacted": ["metrics"]}
    with open_backend(url) as backend:
        backend.mutate_rows("metrics", [RowMutation(b"2016", {b"counters:x": b"old"})], timestamp=1)
        assert backend.get_row("metrics", b"2016") == {b"counters:x": b"old"}
    assert run(url, "tables", "compact", "nope").exit_code == 1
