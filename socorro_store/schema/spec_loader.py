"""Table specs: the declarative description of every table, loaded from ``table_specs/*.toml``.

A spec file holds one table::

    [table]
    name = "crash_reports"
    salted = true            # row keys start with one hex salt character (16 buckets)

    [families.flags]
    COMPRESSION = "NONE"
    VERSIONS = 1
    TTL = 2147483647         # seconds; 2147483647 means "forever", as in HBase
    BLOCKSIZE = 65536
    IN_MEMORY = false
    BLOCKCACHE = true

Attribute names are HBase's, as the Socorro wiki gives them.  The loader rejects unknown attributes,
bad values and duplicate families or tables with a :class:`SpecError` naming the file, the table and
the field, and it validates every file before anything is created.
"""

import dataclasses
import re
import sys
from pathlib import Path

from ..errors import InvalidArgument, SpecError
from .specs import ATTRIBUTE_NAMES, FOREVER, SALTS, FamilySpec, TableSpec, family_from_attributes

__all__ = ["FOREVER", "SALTS", "COMPRESSIONS", "FamilySpec", "TableSpec", "family_from_attributes",
           "default_spec_dir", "load_spec_file", "load_specs", "compare", "hbase_shell_ddl",
           "check_codec_map", "parse_codec_map", "apply_codec_map"]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python 3.10
    import tomli as tomllib

COMPRESSIONS = ("NONE", "GZ", "LZO", "SNAPPY", "LZ4", "ZSTD", "BZIP2")

# attribute -> (python type, validator, default); the defaults are HBase's own.
_ATTRIBUTES = {
    "COMPRESSION": (str, lambda v: v in COMPRESSIONS, "NONE"),
    "VERSIONS": (int, lambda v: 1 <= v <= 2**31 - 1, 1),
    "TTL": (int, lambda v: 1 <= v <= FOREVER, FOREVER),
    "BLOCKSIZE": (int, lambda v: 1024 <= v <= 64 * 1024 * 1024, 65536),
    "IN_MEMORY": (bool, lambda v: True, False),
    "BLOCKCACHE": (bool, lambda v: True, True),
}
assert tuple(_ATTRIBUTES) == ATTRIBUTE_NAMES
_TABLE_KEYS = {"name": str, "salted": bool, "description": str, "addition": bool}


def default_spec_dir():
    """Where the shipped specs are: ``table_specs/`` beside the package, else the installed copy."""
    package = Path(__file__).resolve().parent.parent
    checkout = package.parent / "table_specs"
    return checkout if checkout.is_dir() else package / "table_specs"


def load_spec_file(path):
    """Load and validate one spec file; return its :class:`TableSpec`."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(path, None, "file", f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise SpecError(path, None, "file", f"not UTF-8: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _syntax_error(path, text, exc) from None
    table = data.get("table")
    if not isinstance(table, dict):
        raise SpecError(path, None, "table", "missing [table] section")
    name = table.get("name")
    if not isinstance(name, str) or not name:
        raise SpecError(path, None, "table.name", "missing or not a string")
    for key, value in table.items():
        kind = _TABLE_KEYS.get(key)
        if kind is None:
            raise SpecError(path, name, f"table.{key}", "unknown key")
        if type(value) is not kind:
            raise SpecError(path, name, f"table.{key}", f"must be a {kind.__name__}")
    for key in data:
        if key not in ("table", "families"):
            raise SpecError(path, name, key, "unknown section")
    families = data.get("families")
    if not isinstance(families, dict) or not families:
        raise SpecError(path, name, "families", "a table needs at least one family")
    specs = []
    for fam_name, attrs in families.items():
        specs.append(_load_family(path, name, fam_name, attrs))
    return TableSpec(
        name=name,
        families=tuple(specs),
        salted=table.get("salted", False),
        description=table.get("description", ""),
        addition=table.get("addition", False),
        path=str(path),
    )


_DUPLICATE_FAMILY = re.compile(r"Cannot declare \('families', '([^']*)'\) twice")
_NAME_LINE = re.compile(r'^\s*name\s*=\s*"([^"]*)"', re.MULTILINE)


def _syntax_error(path, text, exc):
    """A :class:`SpecError` for a file TOML rejects, naming the table if its name line is readable.

    TOML itself rejects a family declared twice, before the table name is known, so the name is
    recovered from the text and the duplicate reported as such.
    """
    found = _NAME_LINE.search(text)
    table = found.group(1) if found else None
    duplicate = _DUPLICATE_FAMILY.search(str(exc))
    if duplicate:
        return SpecError(path, table, f"families.{duplicate.group(1)}", f"duplicate family ({exc})")
    return SpecError(path, table, "syntax", str(exc))


def _load_family(path, table, fam_name, attrs):
    where = f"families.{fam_name}"
    if not fam_name or not fam_name.replace("_", "a").isalnum():
        raise SpecError(path, table, where, "family names are letters, digits and '_'")
    if not isinstance(attrs, dict):
        raise SpecError(path, table, where, "must be a table of attributes")
    values = {}
    for key, value in attrs.items():
        rule = _ATTRIBUTES.get(key)
        if rule is None:
            raise SpecError(path, table, f"{where}.{key}", f"unknown attribute (known: {', '.join(_ATTRIBUTES)})")
        kind, valid, _default = rule
        if type(value) is not kind or not valid(value):
            raise SpecError(path, table, f"{where}.{key}", f"bad value {value!r}")
        values[key] = value
    return family_from_attributes(fam_name, values)


def load_specs(directory=None):
    """Load every ``*.toml`` in ``directory`` (default: the shipped specs).

    Returns ``{table name: TableSpec}`` in file-name order.  Every file is validated before this
    returns, so a caller that creates tables from the result never half-creates a bad set.
    """
    directory = Path(directory) if directory else default_spec_dir()
    files = sorted(directory.glob("*.toml"))
    if not files:
        raise SpecError(directory, None, "directory", "no *.toml spec files found")
    specs = {}
    for path in files:
        spec = load_spec_file(path)
        if spec.name in specs:
            raise SpecError(path, spec.name, "table.name", f"duplicate table (also in {specs[spec.name].path})")
        specs[spec.name] = spec
    return specs


def check_codec_map(codec_map):
    """Validate ``{SPEC_CODEC: CLUSTER_CODEC}`` and return it upper-cased (None gives ``{}``).

    A codec map says which codec a cluster uses in place of one it lacks: ``{"LZO": "GZ"}``
    creates every family the specs give LZO with GZ.  Both sides must be known codecs; NONE
    cannot be mapped (every cluster has it), nor a codec to itself.  A map applies once: it
    is not followed through chains (``LZO→SNAPPY, SNAPPY→GZ`` creates LZO families with SNAPPY).
    """
    if codec_map is None:
        return {}
    if not isinstance(codec_map, dict):
        raise InvalidArgument(f"codec map must be a dict {{SPEC_CODEC: CLUSTER_CODEC}}, not {codec_map!r}")
    out = {}
    for source, target in codec_map.items():
        if not isinstance(source, str) or not isinstance(target, str):
            raise InvalidArgument(f"codec map entries are codec names, not {source!r}: {target!r}")
        source, target = source.strip().upper(), target.strip().upper()
        for codec in (source, target):
            if codec not in COMPRESSIONS:
                raise InvalidArgument(f"codec map: unknown codec {codec!r} (known: {', '.join(COMPRESSIONS)})")
        if source == "NONE":
            raise InvalidArgument("codec map: NONE cannot be mapped (every cluster has it)")
        if source == target:
            raise InvalidArgument(f"codec map: {source} is mapped to itself")
        if out.get(source, target) != target:
            raise InvalidArgument(f"codec map: {source} is mapped twice ({out[source]} and {target})")
        out[source] = target
    return out


def parse_codec_map(items):
    """``["LZO=GZ", "SNAPPY=NONE,LZ4=GZ", …]`` (the CLI's ``--codec-map``) as a checked dict.

    Each item holds one or more ``FROM=TO`` pairs separated by commas.  Raises
    :class:`InvalidArgument` naming the bad item.
    """
    pairs = {}
    for item in items or ():
        for pair in str(item).split(","):
            pair = pair.strip()
            if not pair:
                continue
            source, sep, target = pair.partition("=")
            if not sep or not source.strip() or not target.strip():
                raise InvalidArgument(f"codec map: {pair!r} is not FROM=TO (e.g. LZO=GZ)")
            source = source.strip().upper()
            if source in pairs and pairs[source] != target.strip().upper():
                raise InvalidArgument(f"codec map: {source} is mapped twice ({pairs[source]} and "
                                      f"{target.strip().upper()})")
            pairs[source] = target.strip().upper()
    return check_codec_map(pairs)


def apply_codec_map(spec, codec_map):
    """``(spec as the cluster gets it, {family: (spec codec, cluster codec)})`` under a checked map."""
    mapped = {}
    families = []
    for fam in spec.families:
        target = codec_map.get(fam.compression)
        if target is None:
            families.append(fam)
        else:
            mapped[fam.name] = (fam.compression, target)
            families.append(dataclasses.replace(fam, compression=target))
    if not mapped:
        return spec, mapped
    return dataclasses.replace(spec, families=tuple(families)), mapped


def compare(spec, live_families, not_applicable=(), codec_map=None):
    """Differences between a spec and a live table's ``{family: FamilySpec}``.

    Returns a list of human-readable strings, empty when they match.  Attributes named in
    ``not_applicable`` (those a backend does not have, or cannot read) are never reported as
    drift.  Under ``codec_map`` (see :func:`check_codec_map`) a family's codec matches when it is
    the spec's or the one the map gives for it; any other codec is drift.
    """
    codec_map = codec_map or {}
    diffs = []
    for fam in spec.families:
        live = live_families.get(fam.name)
        if live is None:
            diffs.append(f"{spec.name}: family {fam.name} is missing")
            continue
        want, have = fam.attributes(), live.attributes()
        for attr, value in want.items():
            if attr in not_applicable or have[attr] == value:
                continue
            if attr == "COMPRESSION" and value in codec_map:
                if have[attr] == codec_map[value]:
                    continue
                diffs.append(f"{spec.name}: family {fam.name}: {attr} is {have[attr]!r}, spec says {value!r} "
                             f"(mapped to {codec_map[value]!r})")
                continue
            diffs.append(f"{spec.name}: family {fam.name}: {attr} is {have[attr]!r}, spec says {value!r}")
    for name in live_families:
        if spec.family(name) is None:
            diffs.append(f"{spec.name}: family {name} is not in the spec")
    return diffs


def hbase_shell_ddl(spec, table_prefix="", codec_map=None):
    """An HBase shell ``create`` statement for ``spec`` (SPLITS on salt boundaries if salted),
    with codecs as ``codec_map`` (see :func:`check_codec_map`) maps them."""
    spec, _mapped = apply_codec_map(spec, check_codec_map(codec_map))
    parts = []
    for fam in spec.families:
        attrs = fam.attributes()
        body = ", ".join(
            f"{key} => '{str(value).lower() if isinstance(value, bool) else value}'" for key, value in attrs.items()
        )
        parts.append(f"{{NAME => '{fam.name}', {body}}}")
    name = f"{table_prefix}{spec.name}"
    statement = f"create '{name}', " + ", ".join(parts)
    if spec.salted:
        statement += ", SPLITS => [" + ", ".join(f"'{s}'" for s in SALTS[1:]) + "]"
    return statement
