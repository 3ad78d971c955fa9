"""Our Thrift2 IDL subset (``socorro_store/backends/hbase/thrift2.thrift``) against HBase's own.

Field ids, types and required-ness are the wire protocol: a wrong id or type would make HBase
read a field as another or skip it.  HBase's IDL is in the hbase-thrift jar that
``tools/servers/local_hbase.py`` fetches (``org/apache/hadoop/hbase/thrift2/hbase.thrift``); without the
jar (no Java or Maven, nothing cached) the comparison skips and says so.  The checks themselves
are tested on a deliberately wrong IDL, so they would fail if an id or a type were wrong.
"""

import sys
import zipfile
from pathlib import Path

import pytest
import thriftpy2
from thriftpy2.thrift import TType

from socorro_store.backends.hbase.thrift2_idl import IDL_PATH

JAR_IDL = "org/apache/hadoop/hbase/thrift2/hbase.thrift"


def _hbase_thrift_jar():
    """The cached hbase-thrift jar, or skip saying why there is none."""
    try:
        from servers.hbase_jars import HBaseUnavailable, cache_root, fetch_jars
    except ImportError as exc:  # pragma: no cover - tools/ is on pytest's pythonpath
        pytest.skip(f"tools/servers/local_hbase.py not importable: {exc}")
    cached = sorted(cache_root().glob("*/lib/hbase-thrift-*.jar"))
    if not cached:
        try:
            lib = fetch_jars(log=lambda msg: None)
        except HBaseUnavailable as exc:
            pytest.skip(f"HBase's Thrift2 IDL comes from the hbase-thrift jar, and there is none: {exc}")
        cached = sorted(lib.glob("hbase-thrift-*.jar"))
    if not cached:
        pytest.skip(f"no hbase-thrift jar under {cache_root()}")
    return cached[-1]


@pytest.fixture(scope="module")
def hbase_idl(tmp_path_factory):
    jar = _hbase_thrift_jar()
    path = tmp_path_factory.mktemp("idl") / "hbase.thrift"
    with zipfile.ZipFile(jar) as archive:
        path.write_bytes(archive.read(JAR_IDL))
    return thriftpy2.load(str(path), module_name="jar_hbase2_thrift")


@pytest.fixture(scope="module")
def ours():
    return thriftpy2.load(IDL_PATH, module_name="ours_hbase2_thrift")


def _type(ttype, extra):
    """A field's type as a comparable tree: struct, exception and enum types by name."""
    if ttype in (TType.STRUCT, TType.I32) and isinstance(extra, type):
        return (ttype, extra.__name__)
    if ttype in (TType.LIST, TType.SET):
        return (ttype, _type(*extra) if isinstance(extra, tuple) else _type(extra, None))
    if ttype == TType.MAP:
        key, value = extra
        return (ttype, _type(*key) if isinstance(key, tuple) else _type(key, None),
                _type(*value) if isinstance(value, tuple) else _type(value, None))
    return (ttype,)


def fields(cls):
    """``{id: (name, type tree, required)}`` of a thriftpy2 struct, exception or args class."""
    out = {}
    for fid, spec in cls.thrift_spec.items():
        if len(spec) == 3:
            ttype, name, required = spec
            extra = None
        else:
            ttype, name, extra, required = spec
        out[fid] = (name, _type(ttype, extra), required)
    return out


def declared(module):
    """Struct, exception and enum classes the IDL module declares, by name."""
    return {name: obj for name, obj in vars(module).items()
            if isinstance(obj, type) and (hasattr(obj, "thrift_spec") or hasattr(obj, "_VALUES_TO_NAMES"))
            and obj.__module__ == module.__name__}


def differences(ours, theirs):
    """Every way our IDL's declarations differ from HBase's (an empty list when they match).

    A struct may declare a subset of HBase's fields (a reader skips the others); each field it
    declares must have HBase's id, name, type and required-ness.  Enums must have HBase's values
    for the names we use.  Each method must have HBase's arguments, result and exceptions.
    """
    problems = []
    mine, hbase = declared(ours), declared(theirs)
    for name, cls in mine.items():
        if name not in hbase:
            problems.append(f"{name}: not in HBase's IDL")
            continue
        if hasattr(cls, "_VALUES_TO_NAMES"):
            for value, label in cls._VALUES_TO_NAMES.items():
                if hbase[name]._NAMES_TO_VALUES.get(label) != value:
                    problems.append(f"enum {name}.{label} = {value}, HBase has {hbase[name]._NAMES_TO_VALUES.get(label)}")
            continue
        problems += _field_problems(name, fields(cls), fields(hbase[name]))
    service, theirs_service = ours.THBaseService, theirs.THBaseService
    for method in service.thrift_services:
        if method not in theirs_service.thrift_services:
            problems.append(f"method {method}: not in HBase's IDL")
            continue
        for part in ("args", "result"):
            mine_fields = fields(getattr(service, f"{method}_{part}"))
            hbase_fields = fields(getattr(theirs_service, f"{method}_{part}"))
            if set(mine_fields) != set(hbase_fields):
                problems.append(f"{method} {part}: ids {sorted(mine_fields)}, HBase has {sorted(hbase_fields)}")
            problems += _field_problems(f"{method} {part}", mine_fields, hbase_fields)
    return problems


def _field_problems(where, mine, hbase):
    problems = []
    for fid, field in mine.items():
        if fid not in hbase:
            problems.append(f"{where}: field {fid} {field[0]} is not in HBase's IDL")
        elif field != hbase[fid]:
            problems.append(f"{where}: field {fid} is {field}, HBase has {hbase[fid]}")
    return problems


def test_every_declaration_matches_hbases_idl(ours, hbase_idl):
    assert differences(ours, hbase_idl) == []
    # and it is the subset the backend needs, not HBase's whole IDL
    assert len(ours.THBaseService.thrift_services) < len(hbase_idl.THBaseService.thrift_services)


@pytest.mark.parametrize("edit", [
    ("1: required binary family,\n  2: optional binary qualifier", "1: required binary family,\n  4: optional binary qualifier"),
    ("4: optional i32 blockSize", "4: optional i64 blockSize"),
    ("1: optional binary row,\n  2: required list<TColumnValue>", "1: required binary row,\n  2: required list<TColumnValue>"),
    ("3: optional list<TColumn> columns\n  4: optional i32 caching", "3: optional list<TColumnValue> columns\n  4: optional i32 caching"),
    ("  GZ = 1,", "  GZ = 7,"),
    ("    5: binary value,\n    6: required TPut tput", "    5: binary value,\n    7: required TPut tput"),
    ("3: i32 numRows = 1", "3: i64 numRows = 1"),
    ("2: optional bool canRetry", "2: optional string canRetry"),
])
def test_a_wrong_id_or_type_is_found(ours, hbase_idl, tmp_path, edit):
    old, new = edit
    text = open(IDL_PATH).read()
    assert text.count(old) == 1, old
    wrong = tmp_path / "wrong.thrift"
    wrong.write_text(text.replace(old, new))
    module = thriftpy2.load(str(wrong), module_name=f"wrong{abs(hash(new))}_thrift")
    assert differences(module, hbase_idl) != []


def test_the_idl_ships_as_package_data():
    """A non-editable install (``pip install .``) must carry the IDL the backend loads."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    pyproject = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    setuptools = pyproject["tool"]["setuptools"]
    assert "socorro_store.backends.hbase" in setuptools["packages"]
    assert "*.thrift" in setuptools["package-data"]["socorro_store.backends.hbase"]
    assert Path(IDL_PATH).parent.name == "hbase" and Path(IDL_PATH).suffix == ".thrift"
