"""The spec loader (``table_specs/*.toml``) and store-URL parsing.

The expected attributes below are copied from the Socorro wiki page "Socorro:HBase"
(``seeds/socorro-hbase-schema.txt``); tables the wiki gives no attribute block for use HBase's
defaults with VERSIONS 1.
"""

import shutil

import pytest

from socorro_store.config import DEFAULT_URL, ENV_VAR, parse_url
from socorro_store.errors import ConfigError, InvalidArgument, SpecError
from socorro_store.schema.spec_loader import (
    apply_codec_map,
    check_codec_map,
    compare,
    default_spec_dir,
    hbase_shell_ddl,
    load_spec_file,
    load_specs,
    parse_codec_map,
)
from socorro_store.schema.specs import FOREVER, SALTS, FamilySpec, TableSpec


def wiki(compression="NONE", versions=1):
    return {"COMPRESSION": compression, "VERSIONS": versions, "TTL": FOREVER, "BLOCKSIZE": 65536,
            "IN_MEMORY": False, "BLOCKCACHE": True}


WIKI_TABLES = {
    "crash_reports": {"flags": wiki(), "ids": wiki(), "meta_data": wiki("LZO", 3),
                      "processed_data": wiki("LZO"), "raw_data": wiki("LZO", 3), "timestamps": wiki()},
    "crash_reports_index_hang_id": {"ids": wiki("LZO")},
    "crash_reports_index_hang_id_submitted_time": {"ids": wiki("LZO")},
    "crash_reports_index_legacy_submitted_time": {"ids": wiki("LZO")},
    "crash_reports_index_legacy_unprocessed_flag": {"ids": wiki(), "processor_state": wiki(versions=5)},
    "crash_reports_index_signature_ooid": {"ids": wiki("LZO")},
    "crash_reports_index_submitted_time": {"ids": wiki("LZO")},
    "crash_reports_index_unprocessed_flag": {"ids": wiki(), "processor_state": wiki(versions=5)},
    "metrics": {"counters": wiki(), "timestamps": wiki()},
    "crash_report_signatures": {"counters": wiki()},
}
SALTED = {"crash_reports", "crash_reports_index_hang_id_submitted_time",
          "crash_reports_index_legacy_submitted_time", "crash_reports_index_legacy_unprocessed_flag",
          "crash_reports_index_submitted_time", "crash_reports_index_unprocessed_flag"}

GOOD_FILE = """
[table]
name = "demo"
salted = true

[families.ids]
COMPRESSION = "NONE"
VERSIONS = 1

[families.data]
COMPRESSION = "GZ"
VERSIONS = 3
TTL = 86400
"""


# -- the shipped specs ------------------------------------------------------------------------

def test_every_wiki_table_is_shipped_with_the_wikis_attributes():
    specs = load_specs()
    for name, families in WIKI_TABLES.items():
        spec = specs[name]
        assert spec.family_names == list(families), name
        for fam in spec.families:
            assert fam.attributes() == families[fam.name], f"{name}.{fam.name}"
        assert spec.salted == (name in SALTED), name
        assert not spec.addition, name


def test_additions_are_marked_and_nothing_else_is_shipped():
    specs = load_specs()
    extra = set(specs) - set(WIKI_TABLES)
    assert extra == {"jobs", "crash_report_signatures_seen", "crash_report_changes", "crash_report_derived"}
    assert specs["jobs"].addition and specs["jobs"].description


def test_default_spec_dir_holds_the_shipped_files():
    assert sorted(p.stem for p in default_spec_dir().glob("*.toml")) == sorted(load_specs())


def test_load_a_spec_file(tmp_path):
    (tmp_path / "demo.toml").write_text(GOOD_FILE)
    spec = load_spec_file(tmp_path / "demo.toml")
    assert spec == TableSpec("demo", (FamilySpec("ids"), FamilySpec("data", compression="GZ", versions=3, ttl=86400)),
                             salted=True, path=str(tmp_path / "demo.toml"))
    assert spec.family("data").compressed and not spec.family("ids").compressed
    assert spec.family("nope") is None
    assert spec.to_dict()["families"]["data"]["TTL"] == 86400


def test_ddl_splits_salted_tables_on_salt_boundaries():
    specs = load_specs()
    ddl = hbase_shell_ddl(specs["crash_reports"], "p_")
    assert ddl.startswith("create 'p_crash_reports', {NAME => 'flags', COMPRESSION => 'NONE', VERSIONS => '1'")
    assert ddl.endswith("SPLITS => [" + ", ".join(f"'{s}'" for s in SALTS[1:]) + "]")
    assert "SPLITS" not in hbase_shell_ddl(specs["metrics"])
    assert "IN_MEMORY => 'false'" in ddl


def test_compare_reports_each_difference():
    spec = TableSpec("t", (FamilySpec("a", versions=3), FamilySpec("b")))
    assert compare(spec, {"a": FamilySpec("a", versions=3), "b": FamilySpec("b")}) == []
    diffs = compare(spec, {"a": FamilySpec("a", versions=1, compression="GZ"), "c": FamilySpec("c")})
    assert diffs == ["t: family a: COMPRESSION is 'GZ', spec says 'NONE'",
                     "t: family a: VERSIONS is 1, spec says 3",
                     "t: family b is missing",
                     "t: family c is not in the spec"]
    assert compare(spec, {"a": FamilySpec("a", versions=3, blocksize=1024), "b": FamilySpec("b")},
                   not_applicable=("BLOCKSIZE",)) == []


def test_compare_under_a_codec_map():
    spec = TableSpec("t", (FamilySpec("a", compression="LZO"), FamilySpec("b", compression="GZ")))
    mapped = {"a": FamilySpec("a", compression="GZ"), "b": FamilySpec("b", compression="GZ")}
    assert compare(spec, mapped, codec_map={"LZO": "GZ"}) == []
    assert compare(spec, mapped) == ["t: family a: COMPRESSION is 'GZ', spec says 'LZO'"]
    own = {"a": FamilySpec("a", compression="LZO"), "b": FamilySpec("b", compression="GZ")}
    assert compare(spec, own, codec_map={"LZO": "GZ"}) == []  # the spec's own codec still matches
    other = {"a": FamilySpec("a", compression="ZSTD"), "b": FamilySpec("b", compression="NONE")}
    assert compare(spec, other, codec_map={"LZO": "GZ"}) == [
        "t: family a: COMPRESSION is 'ZSTD', spec says 'LZO' (mapped to 'GZ')",
        "t: family b: COMPRESSION is 'NONE', spec says 'GZ'"]
    # a BLOCKSIZE the backend cannot read (None) is never compared when not applicable
    unread = {"a": FamilySpec("a", compression="LZO", blocksize=None), "b": FamilySpec("b", compression="GZ")}
    assert compare(spec, unread, not_applicable=("BLOCKSIZE",)) == []


def test_parse_and_apply_a_codec_map():
    assert parse_codec_map(["lzo=gz", " SNAPPY = NONE , LZ4=GZ", ""]) == {"LZO": "GZ", "SNAPPY": "NONE", "LZ4": "GZ"}
    assert parse_codec_map([]) == {} and check_codec_map(None) == {}
    assert parse_codec_map(["LZO=GZ", "LZO=gz"]) == {"LZO": "GZ"}  # the same pair twice is fine
    for bad, why in [(["LZO"], "FROM=TO"), (["=GZ"], "FROM=TO"), (["LZO=ZIP"], "unknown codec"),
                     (["NONE=GZ"], "NONE cannot"), (["GZ=GZ"], "itself"), (["LZO=GZ", "LZO=NONE"], "twice")]:
        with pytest.raises(InvalidArgument, match=why):
            parse_codec_map(bad)
    with pytest.raises(InvalidArgument):
        check_codec_map([("LZO", "GZ")])
    spec = load_specs()["crash_reports"]
    effective, mapped = apply_codec_map(spec, {"LZO": "SNAPPY", "SNAPPY": "GZ"})
    assert mapped == {"meta_data": ("LZO", "SNAPPY"), "processed_data": ("LZO", "SNAPPY"),
                      "raw_data": ("LZO", "SNAPPY")}  # applied once, not followed through SNAPPY
    assert effective.family("raw_data").compression == "SNAPPY" and effective.family("raw_data").versions == 3
    assert effective.family("flags") == spec.family("flags") and spec.family("raw_data").compression == "LZO"
    assert apply_codec_map(spec, {}) == (spec, {})
    ddl = hbase_shell_ddl(spec, "p_", {"LZO": "GZ"})
    assert ddl.startswith("create 'p_crash_reports', ") and "'LZO'" not in ddl and ddl.count("COMPRESSION => 'GZ'") == 3


# -- bad spec files: SpecError naming file, table and field -----------------------------------

BAD_FILES = {
    "unknown attribute": ('[table]\nname = "t1"\n[families.ids]\nVERSION = 1\n', "t1", "families.ids.VERSION"),
    "bad compression": ('[table]\nname = "t2"\n[families.ids]\nCOMPRESSION = "ZIP"\n', "t2",
                        "families.ids.COMPRESSION"),
    "zero versions": ('[table]\nname = "t3"\n[families.ids]\nVERSIONS = 0\n', "t3", "families.ids.VERSIONS"),
    "string versions": ('[table]\nname = "t4"\n[families.ids]\nVERSIONS = "1"\n', "t4",
                        "families.ids.VERSIONS"),
    "bool as int": ('[table]\nname = "t5"\n[families.ids]\nTTL = true\n', "t5", "families.ids.TTL"),
    "ttl too big": ('[table]\nname = "t6"\n[families.ids]\nTTL = 2147483648\n', "t6", "families.ids.TTL"),
    "in_memory string": ('[table]\nname = "t7"\n[families.ids]\nIN_MEMORY = "false"\n', "t7",
                         "families.ids.IN_MEMORY"),
    "duplicate family": ('[table]\nname = "t8"\n[families.ids]\nVERSIONS = 1\n[families.ids]\nVERSIONS = 2\n',
                         "t8", "families.ids"),
    "bad family name": ('[table]\nname = "t9"\n[families."a:b"]\nVERSIONS = 1\n', "t9", 'families.a:b'),
    "no families": ('[table]\nname = "t10"\n', "t10", "families"),
    "unknown table key": ('[table]\nname = "t11"\nsalt = true\n[families.ids]\n', "t11", "table.salt"),
    "salted not bool": ('[table]\nname = "t12"\nsalted = "yes"\n[families.ids]\n', "t12", "table.salted"),
    "unknown section": ('[table]\nname = "t13"\n[families.ids]\n[extra]\nx = 1\n', "t13", "extra"),
    "missing name": ('[table]\nsalted = true\n[families.ids]\n', None, "table.name"),
    "missing table": ('[families.ids]\nVERSIONS = 1\n', None, "table"),
    "toml syntax": ('[table\nname = "t16"\n', "t16", "syntax"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_spec_file(tmp_path, case):
    text, table, field = BAD_FILES[case]
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(SpecError) as raised:
        load_spec_file(path)
    error = raised.value
    assert (error.path, error.table, error.field) == (str(path), table, field)
    message = str(error)
    assert str(path) in message and field in message and (table is None or f"table {table}" in message)


def test_unreadable_and_non_utf8_files(tmp_path):
    with pytest.raises(SpecError, match="cannot read") as raised:
        load_spec_file(tmp_path / "absent.toml")
    assert raised.value.field == "file"
    (tmp_path / "latin.toml").write_bytes(b'[table]\nname = "caf\xe9"\n')
    with pytest.raises(SpecError, match="not UTF-8"):
        load_spec_file(tmp_path / "latin.toml")


def test_duplicate_table_names_the_second_file(tmp_path):
    (tmp_path / "a.toml").write_text(GOOD_FILE)
    (tmp_path / "b.toml").write_text(GOOD_FILE)
    with pytest.raises(SpecError) as raised:
        load_specs(tmp_path)
    assert raised.value.path == str(tmp_path / "b.toml")
    assert (raised.value.table, raised.value.field) == ("demo", "table.name")
    assert str(tmp_path / "a.toml") in str(raised.value)


def test_one_bad_file_fails_the_whole_directory(tmp_path):
    for spec_file in default_spec_dir().glob("*.toml"):
        shutil.copy(spec_file, tmp_path)
    assert set(load_specs(tmp_path)) == set(load_specs())
    (tmp_path / "zz_bad.toml").write_text(BAD_FILES["bad compression"][0])
    with pytest.raises(SpecError, match="zz_bad.toml"):
        load_specs(tmp_path)


def test_empty_spec_directory(tmp_path):
    with pytest.raises(SpecError, match="no \\*.toml"):
        load_specs(tmp_path)


# -- store URLs -------------------------------------------------------------------------------

def test_url_defaults(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert parse_url().text == DEFAULT_URL
    monkeypatch.setenv(ENV_VAR, "embedded:///tmp/x")
    assert parse_url().path == "/tmp/x"
    assert parse_url("embedded://./d?sync=full").options == {"sync": "full"}
    assert parse_url("embedded://run[2]/d?sync=full").path == "run[2]/d"  # a directory, not an IPv6 host
    assert parse_url("embedded:///tmp/a[1").path == "/tmp/a[1"
    hbase = parse_url("hbase://h?transport=framed&protocol=compact&table_prefix=p&pool_size=2")
    assert (hbase.host, hbase.port) == ("h", 9090)
    assert hbase.options["transport"] == "framed" and hbase.options["pool_size"] == 2
    assert parse_url("hbase://127.0.0.1:9191").port == 9191
    big = parse_url("bigtable://proj/inst")
    assert (big.host, big.path) == ("proj", "inst")


@pytest.mark.parametrize("url", [
    "mysql://h/db", "embedded:/x", "embedded://", "embedded://d?sync=sometimes", "embedded://d?bogus=1",
    "hbase://h:notaport", "hbase://h:99999", "hbase://:9090", "hbase://h/path", "hbase://h?transport=http",
    "hbase://h?protocol=json", "hbase://h?pool_size=0", "hbase://h?pool_size=x", "hbase://h?timeout_ms=-1",
    "hbase://h?retries=-1", "hbase://h?nope=1", "bigtable://proj", "bigtable://proj/inst/extra",
    "bigtable:///inst", "nothing",
    # options take ASCII digits only: int() and float() take each of these
    "hbase://h?pool_size=%2B4", "hbase://h?pool_size=1_0", "hbase://h?retries=%201", "hbase://h?timeout_ms=\u0663\u0660",
    "hbase://h?transport=framed&max_frame_mb=\u0662", "hbase://h?transport=framed&max_frame_mb=1_0",
    "hbase://h?transport=framed&max_frame_mb=%201",
])
def test_bad_urls_raise_config_error(url):
    with pytest.raises(ConfigError):
        parse_url(url)


def test_config_error_is_a_value_error_with_the_url():
    with pytest.raises(ValueError, match="pool_size"):
        parse_url("hbase://h?pool_size=abc")
