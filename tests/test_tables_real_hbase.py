"""``socorro-store tables …`` on a real Apache HBase 2.6 over its own Thrift1 server.

What HBase reports back is checked attribute by attribute: through Thrift1's
``getColumnDescriptors`` (COMPRESSION, VERSIONS, TTL, IN_MEMORY, BLOCKCACHE) and, when the
cluster's root directory is known, from HBase's own table descriptor on disk (which also holds
BLOCKSIZE, an attribute Thrift1 can neither set nor read).  The root directory is known for the
HBase the fixture starts; for one given by ``$SOCORRO_STORE_TEST_HBASE``, set
``$SOCORRO_STORE_TEST_HBASE_ROOTDIR`` to its ``hbase.rootdir`` path to check it too.

Codec refusal needs a codec the cluster lacks: the first of SNAPPY, BZIP2, LZ4, ZSTD, LZO that
it refuses (a local HBase maps LZO, LZ4 and ZSTD to pure-Java codecs and has no native SNAPPY).

Every test works under a table prefix of its own and drops what it made.
"""

import json
import os
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from socorro_store.backends import open_backend
from socorro_store.cli import main
from socorro_store.schema import table_admin as admin
from socorro_store.schema.spec_loader import load_specs
from socorro_store.schema.specs import SALTS, FamilySpec, TableSpec

SHIPPED = load_specs()
THRIFT1_ATTRIBUTES = ("COMPRESSION", "VERSIONS", "TTL", "IN_MEMORY", "BLOCKCACHE")


@pytest.fixture
def url(hbase_real_url):
    """A table prefix of this test's own on the real HBase; every table in it dropped after."""
    prefix = "tt" + uuid.uuid4().hex[:10]
    sep = "&" if "?" in hbase_real_url else "?"
    url = f"{hbase_real_url}{sep}table_prefix={prefix}"
    yield url
    with open_backend(url) as backend:
        for table in backend.list_tables():
            backend.drop_table(table)


@pytest.fixture
def rootdir(hbase_real):
    """HBase's root directory on local disk, or skip saying why it is unknown."""
    _url, local = hbase_real
    root = Path(local.directory) / "data" / "root" if local is not None else None
    if root is None and os.environ.get("SOCORRO_STORE_TEST_HBASE_ROOTDIR"):
        root = Path(os.environ["SOCORRO_STORE_TEST_HBASE_ROOTDIR"])
    if root is None or not (root / "data").is_dir():
        pytest.skip("HBase's root directory is unknown for $SOCORRO_STORE_TEST_HBASE "
                    "(set $SOCORRO_STORE_TEST_HBASE_ROOTDIR to check the descriptors on disk)")
    return root


def run(url, *args, env=None):
    return CliRunner().invoke(main, ["--url", url, *args], env=env, catch_exceptions=False)


def prefix_of(url):
    return url.rsplit("table_prefix=", 1)[1]


def write_spec(directory, name, families, salted=False):
    """A spec file ``name.toml``: ``families`` is ``{family: {ATTRIBUTE: value}}``."""
    lines = ["[table]", f'name = "{name}"', f"salted = {str(salted).lower()}"]
    for fam, attrs in families.items():
        lines.append(f"[families.{fam}]")
        for key, value in attrs.items():
            value = f'"{value}"' if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else value
            lines.append(f"{key} = {value}")
    directory.mkdir(exist_ok=True)
    (directory / f"{name}.toml").write_text("\n".join(lines) + "\n")


# -- HBase's own descriptor on disk -------------------------------------------------------------

def _varint(data, pos):
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _fields(data):
    """(field number, bytes) of a protobuf message's length-delimited fields (all HBase's
    TableSchema and ColumnFamilySchema hold, besides varints we do not need)."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        kind = key & 7
        if kind == 2:
            size, pos = _varint(data, pos)
            yield key >> 3, data[pos:pos + size]
            pos += size
        elif kind == 0:
            _value, pos = _varint(data, pos)
        else:
            raise AssertionError(f"unexpected protobuf wire type {kind}")


def disk_families(root, table):
    """``{family: {ATTRIBUTE: text}}`` from ``.tabledesc/.tableinfo.*`` (a PBUF TableSchema:
    field 3 is a ColumnFamilySchema, whose field 1 is the name and field 2 a name/value pair)."""
    infos = sorted((root / "data" / "default" / table / ".tabledesc").glob(".tableinfo.*"))
    assert infos, f"no table descriptor for {table} under {root}"
    data = infos[-1].read_bytes()
    assert data[:4] == b"PBUF"
    families = {}
    for number, family in _fields(data[4:]):
        if number != 3:
            continue
        name, attrs = None, {}
        for fnum, value in _fields(family):
            if fnum == 1:
                name = value.decode()
            elif fnum == 2:
                pair = dict(_fields(value))
                attrs[pair[1].decode()] = pair[2].decode()
        families[name] = attrs
    return families


# -- the shipped specs --------------------------------------------------------------------------

def test_create_gives_every_shipped_table_the_wikis_attributes(url):
    created = run(url, "tables", "create", "--json")
    assert created.exit_code == 0, created.output
    report = json.loads(created.output)
    assert sorted(report["created"]) == sorted(SHIPPED) and report["mismatched"] == {}
    assert "unset" not in report and "codec_map" not in report  # every spec BLOCKSIZE is HBase's 65536
    with open_backend(url) as backend:
        for name, spec in SHIPPED.items():
            live = backend.describe_table(name)
            assert sorted(live) == sorted(spec.family_names), name
            for fam in spec.families:
                want, have = fam.attributes(), live[fam.name].attributes()
                for attr in THRIFT1_ATTRIBUTES:
                    assert have[attr] == want[attr], (name, fam.name, attr)
                assert have["BLOCKSIZE"] is None  # Thrift1 cannot read it: unknown, not guessed

    salted = sorted(name for name, spec in SHIPPED.items() if spec.salted)
    presplit = report["not_presplit"]
    assert presplit["tables"] == salted and "Thrift1" in presplit["reason"]
    splits = "SPLITS => [" + ", ".join(f"'{s}'" for s in SALTS[1:]) + "]"
    assert [s.split("'")[1] for s in presplit["ddl"]] == [f"{prefix_of(url)}_{n}" for n in salted]
    assert all(s.endswith(splits) for s in presplit["ddl"])

    verified = run(url, "tables", "verify", "--json")
    assert verified.exit_code == 0, verified.output
    assert json.loads(verified.output) == {"ok": True, "drift": {}, "not_applicable": [],
                                           "unchecked": ["BLOCKSIZE"]}
    described = json.loads(run(url, "tables", "describe", "crash_reports", "--json").output)
    assert described["unreadable"] == ["BLOCKSIZE"]
    assert described["families"]["raw_data"] == {"COMPRESSION": "LZO", "VERSIONS": 3, "TTL": 2147483647,
                                                 "BLOCKSIZE": None, "IN_MEMORY": False, "BLOCKCACHE": True}


def test_create_text_output_names_unsplit_tables_once(url):
    result = run(url, "tables", "create")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    notes = [line for line in lines if line.startswith("not pre-split")]
    assert len(notes) == 1 and "Thrift1" in notes[0]
    assert f"socorro-store tables ddl --table-prefix {prefix_of(url)} crash_report_changes crash_report_derived crash_reports " in notes[0]
    again = run(url, "tables", "create")  # nothing created: nothing to say about splits
    assert again.exit_code == 0 and "pre-split" not in again.output
    ddl = run(url, "tables", "ddl", "--table-prefix", prefix_of(url), "crash_reports", "metrics").output
    assert ddl.splitlines()[0].startswith(f"create '{prefix_of(url)}_crash_reports',")
    assert "SPLITS" in ddl.splitlines()[0] and "SPLITS" not in ddl.splitlines()[1]


def test_non_default_attributes_reach_hbase(url, tmp_path):
    """Values that differ from HBase's defaults, so a dropped field could not pass unseen."""
    specs = tmp_path / "specs"
    write_spec(specs, "attrs", {"a": {"COMPRESSION": "GZ", "VERSIONS": 7, "TTL": 3600, "IN_MEMORY": True,
                                      "BLOCKCACHE": False},
                                "b": {"COMPRESSION": "LZO", "VERSIONS": 2, "TTL": 86400}})
    assert run(url, "tables", "create", "--specs", str(specs)).exit_code == 0
    described = json.loads(run(url, "tables", "describe", "attrs", "--json").output)["families"]
    assert described["a"] == {"COMPRESSION": "GZ", "VERSIONS": 7, "TTL": 3600, "BLOCKSIZE": None,
                              "IN_MEMORY": True, "BLOCKCACHE": False}
    assert described["b"] == {"COMPRESSION": "LZO", "VERSIONS": 2, "TTL": 86400, "BLOCKSIZE": None,
                              "IN_MEMORY": False, "BLOCKCACHE": True}
    assert run(url, "tables", "verify", "--specs", str(specs)).exit_code == 0


def test_hbases_own_descriptors_hold_the_wikis_attributes(url, rootdir):
    """BLOCKSIZE included: Thrift1 cannot carry it, HBase's default is what the wiki asks."""
    assert run(url, "tables", "create").exit_code == 0
    for name, spec in SHIPPED.items():
        on_disk = disk_families(rootdir, f"{prefix_of(url)}_{name}")
        assert sorted(on_disk) == sorted(spec.family_names), name
        for fam in spec.families:
            want = {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in fam.attributes().items()}
            have = {k: on_disk[fam.name][k].lower() if k in ("IN_MEMORY", "BLOCKCACHE") else on_disk[fam.name][k]
                    for k in want}
            assert have == want, (name, fam.name)


def test_a_blocksize_thrift1_cannot_set_is_reported_unset(url, tmp_path):
    specs = tmp_path / "specs"
    write_spec(specs, "blocks", {"f": {"BLOCKSIZE": 32768}})
    result = run(url, "tables", "create", "--specs", str(specs))
    assert result.exit_code == 1, result.output
    assert "created blocks" in result.output
    unset = [line for line in result.output.splitlines() if line.startswith("UNSET")]
    assert len(unset) == 1 and "BLOCKSIZE 32768" in unset[0] and "65536" in unset[0]
    assert f"alter '{prefix_of(url)}_blocks', {{NAME => 'f', BLOCKSIZE => '32768'}}" in unset[0]
    verified = run(url, "tables", "verify", "--specs", str(specs))
    assert verified.exit_code == 0 and "unchecked" in verified.output and "BLOCKSIZE" in verified.output


# -- codecs the cluster lacks -------------------------------------------------------------------

@pytest.fixture
def missing_codec(url):
    """A codec this cluster refuses, found by asking it."""
    with open_backend(url) as backend:
        for codec in ("SNAPPY", "BZIP2", "LZ4", "ZSTD", "LZO"):
            if admin.check_codecs(backend, [codec]):
                return codec
    pytest.skip("this cluster has every codec (SNAPPY, BZIP2, LZ4, ZSTD, LZO): none to refuse")


def codec_specs(directory, codec):
    write_spec(directory, "packed", {"raw": {"COMPRESSION": codec, "VERSIONS": 3}, "ids": {}}, salted=True)
    write_spec(directory, "plain", {"f": {"COMPRESSION": "GZ"}})
    return directory


def test_refused_codec_without_a_map_is_one_line_and_creates_nothing(url, tmp_path, missing_codec):
    specs = codec_specs(tmp_path / "specs", missing_codec)
    result = run(url, "tables", "create", "--specs", str(specs))
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: the cluster refuses COMPRESSION "), result.stderr
    assert missing_codec in lines[0] and "packed:raw" in lines[0]
    assert f"--codec-map {missing_codec}=GZ" in lines[0] and "nothing was created" in lines[0]
    assert "Traceback" not in result.output and result.stdout == ""
    with open_backend(url) as backend:
        assert backend.list_tables() == []  # not "plain" either, and no scratch table left
    with open_backend(url) as backend, pytest.raises(admin.CodecUnavailable) as caught:
        admin.create_tables(backend, load_specs(specs))
    assert list(caught.value.codecs) == [missing_codec]
    assert caught.value.needed_by == {missing_codec: ["packed:raw"]}


def test_a_map_to_another_missing_codec_is_refused_too(url, tmp_path, missing_codec):
    specs = tmp_path / "specs"
    write_spec(specs, "plain", {"f": {"COMPRESSION": "GZ"}})
    result = run(url, "tables", "create", "--specs", str(specs), "--codec-map", f"GZ={missing_codec}")
    assert result.exit_code == 1
    assert f"{missing_codec} (the codec map's choice for GZ)" in result.stderr
    assert "(no --codec-map for GZ;" in result.stderr and "GZ=GZ" not in result.stderr
    with open_backend(url) as backend:
        assert backend.list_tables() == []


def test_mapped_codec_is_created_named_and_verified(url, tmp_path, missing_codec):
    specs = codec_specs(tmp_path / "specs", missing_codec)
    result = run(url, "tables", "create", "--specs", str(specs), "--codec-map", f"{missing_codec}=GZ")
    assert result.exit_code == 0, result.output + result.stderr
    lines = result.output.splitlines()
    assert lines[0] == f"codec map: {missing_codec}->GZ (applies to 1 family in 1 table(s))"
    assert sorted(line for line in lines if line.startswith("created")) == ["created packed", "created plain"]
    with open_backend(url) as backend:
        assert backend.describe_table("packed")["raw"].compression == "GZ"
        assert backend.describe_table("packed")["raw"].versions == 3

    as_json = run(url, "tables", "create", "--specs", str(specs), "--codec-map", f"{missing_codec}=GZ", "--json")
    assert as_json.exit_code == 0
    report = json.loads(as_json.output)
    assert report["codec_map"] == {missing_codec: "GZ"}
    assert report["mapped"] == {"packed": {"raw": [missing_codec, "GZ"]}}
    assert sorted(report["existing"]) == ["packed", "plain"]

    clean = run(url, "tables", "verify", "--specs", str(specs), "--codec-map", f"{missing_codec}=GZ")
    assert clean.exit_code == 0 and "OK: every table matches its spec" in clean.output, clean.output
    from_env = run(url, "tables", "verify", "--specs", str(specs),
                   env={"SOCORRO_STORE_CODEC_MAP": f"{missing_codec}=GZ"})
    assert from_env.exit_code == 0, from_env.output
    unmapped = run(url, "tables", "verify", "--specs", str(specs))
    assert unmapped.exit_code == 1
    assert f"packed: family raw: COMPRESSION is 'GZ', spec says '{missing_codec}'" in unmapped.output
    # the ddl an operator would run follows the same map
    ddl = run(url, "tables", "ddl", "--specs", str(specs), "--codec-map", f"{missing_codec}=GZ", "packed").output
    assert "{NAME => 'raw', COMPRESSION => 'GZ'" in ddl and missing_codec not in ddl


def test_verify_flags_a_codec_other_than_the_mapped_one(url, tmp_path, missing_codec):
    specs = codec_specs(tmp_path / "specs", missing_codec)
    with open_backend(url) as backend:  # made by hand with a third codec (NONE: every cluster has it)
        backend.create_table(TableSpec("packed", (FamilySpec("raw", compression="NONE", versions=3),
                                                  FamilySpec("ids"))))
        backend.create_table(TableSpec("plain", (FamilySpec("f", compression="GZ"),)))
    drift = run(url, "tables", "verify", "--specs", str(specs), "--codec-map", f"{missing_codec}=GZ", "--json")
    assert drift.exit_code == 1
    report = json.loads(drift.output)
    assert report["codec_map"] == {missing_codec: "GZ"}
    assert report["drift"] == {"packed": [f"packed: family raw: COMPRESSION is 'NONE', spec says "
                                          f"'{missing_codec}' (mapped to 'GZ')"]}
    # create judges the existing table by the same map: a mismatch, never overwritten
    created = run(url, "tables", "create", "--specs", str(specs), "--codec-map", f"{missing_codec}=GZ")
    assert created.exit_code == 1 and "MISMATCH packed: family raw: COMPRESSION is 'NONE'" in created.output
