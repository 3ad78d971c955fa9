"""Table administration from specs: create, verify, describe, DDL, drop.

Library functions behind ``socorro-store tables …``.  They speak only the backend contract, plus
three optional backend class attributes:

- ``not_applicable_attributes``: spec attributes the backend cannot set or read; never drift.
- ``unreachable_attributes``: ``{ATTRIBUTE: value}``, those of them the server *does* have but
  the backend's API cannot carry (HBase's BLOCKSIZE over Thrift1), with the value the server gives
  a family created through it.  Reported as unchecked, never silently passed.
- ``presplit_at_create``: False when ``create_table`` cannot pre-split (Thrift1).  Salted tables
  created so are reported with the HBase shell statements that pre-split them.

and optional methods: ``split_points(name)``, the live table's region boundaries (every region's
start key but the first), on backends that can read regions (HBase's Thrift2).  There
:func:`verify_tables` also reports a salted table not split on its salt boundaries.
``table_regions(name)`` (HBase, both APIs: each region's start and end keys and the region server
holding it) and ``probe_servers()`` (HBase: each Thrift server of the URL asked once) feed
:func:`describe_table` and :func:`ping`.

Codecs.  A cluster may lack a codec the specs ask for (LZO without its library, SNAPPY without
Hadoop's native code).  HBase refuses such a create; so before creating anything,
:func:`create_tables` checks each codec the new tables need on a scratch table, and raises
:class:`CodecUnavailable` (nothing created) for one the cluster refuses and no codec map covers.
A codec map (``{"LZO": "GZ"}``, see :func:`~.spec_loader.check_codec_map`) creates those families
with the codec the cluster has; :func:`verify_tables` under the same map accepts it.
"""

import uuid
from datetime import datetime, timezone
from dataclasses import dataclass, field

from ..errors import BackendError, InvalidArgument, TableNotFound
from . import derived_keys as D
from . import ranking_keys as RK
from .keys import CRASH_REPORTS, DERIVED, SIGNATURES, SIGNATURES_SEEN
from .spec_loader import COMPRESSIONS, apply_codec_map, check_codec_map, compare, hbase_shell_ddl, load_specs
from .specs import SALTS, FamilySpec, TableSpec

#: Name stem of the scratch tables that test codecs (created and dropped at once).
PROBE_TABLE = "socorro_store_codec_probe_"


class CodecUnavailable(BackendError):
    """The cluster refuses a compression codec the specs need, and no codec map covers it.

    ``codecs`` is ``{codec: server's reason}``, ``needed_by`` ``{codec: ["table:family", …]}``
    and ``sources`` ``{codec: [spec codec, …]}``: the spec codecs that led to it, itself or
    through a codec map.  Nothing was created.
    """

    def __init__(self, codecs, needed_by, sources=None):
        self.codecs, self.needed_by = dict(codecs), dict(needed_by)
        self.sources = {c: sorted((sources or {}).get(c, [c])) for c in self.codecs}
        parts, hints = [], []
        for codec, reason in self.codecs.items():
            users = self.needed_by.get(codec, [])
            mapped = [s for s in self.sources[codec] if s != codec]
            via = f" (the codec map's choice for {', '.join(mapped)})" if mapped else ""
            parts.append(f"{codec}{via} for {len(users)} famil{'y' if len(users) == 1 else 'ies'} "
                         f"({', '.join(users[:3])}{', …' if len(users) > 3 else ''}): {reason}")
            for source in self.sources[codec]:
                # a map that chose the refused codec for one the cluster has is undone, not remapped
                hints.append(f"no --codec-map for {source}" if suggested_codec(codec) == source
                             else f"--codec-map {source}={suggested_codec(codec)}")
        super().__init__(f"the cluster refuses COMPRESSION {'; '.join(parts)}; map to a codec it has "
                         f"({', '.join(hints)}; or codec_map= in the library) or install the codec; "
                         f"nothing was created")


def suggested_codec(codec):
    """A codec every HBase has in place of ``codec``: GZ (Java's own zlib), NONE for GZ itself."""
    return "NONE" if codec == "GZ" else "GZ"


def _server_reason(exc):
    """The useful part of HBase's refusal: its exception chain's innermost message, without the
    advice to turn sanity checks off (a family whose codec cannot load fails later, at flush)."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    text = text.split(" Set hbase.table.sanity.checks")[0]
    while text.startswith("org.apache.hadoop.hbase.DoNotRetryIOException: "):
        text = text[len("org.apache.hadoop.hbase.DoNotRetryIOException: "):]
    return text[:200]


def check_codecs(backend, codecs):
    """``{codec: reason}`` for each of ``codecs`` the backend refuses (``{}``: all accepted).

    Asks the backend itself: creates a scratch table with one family per codec and drops it; when
    that is refused, one scratch table per codec tells which.  A refused create creates nothing.
    Skipped (``{}``) where COMPRESSION is not applicable (Bigtable).
    """
    codecs = sorted(set(codecs))
    unknown = [c for c in codecs if c not in COMPRESSIONS]
    if unknown:
        raise InvalidArgument(f"unknown codec(s) {', '.join(map(repr, unknown))} (known: {', '.join(COMPRESSIONS)})")
    codecs = [c for c in codecs if c != "NONE"]
    if not codecs or "COMPRESSION" in backend.not_applicable_attributes:
        return {}

    def probe(group):
        spec = TableSpec(PROBE_TABLE + uuid.uuid4().hex[:8],
                         tuple(FamilySpec(f"c{i}", compression=c) for i, c in enumerate(group)))
        try:
            backend.create_table(spec)
        except (BackendError, InvalidArgument) as exc:
            return exc
        backend.drop_table(spec.name)
        return None

    if probe(codecs) is None:
        return {}
    refused = {}
    for codec in codecs:
        exc = probe([codec])
        if exc is not None:
            refused[codec] = _server_reason(exc)
    if not refused:  # the group failed, every codec alone passed: not a codec problem
        raise BackendError(f"creating a table with codecs {', '.join(codecs)} failed, each alone worked")
    return refused


def attribute_limits(backend):
    """``(not_applicable, unreachable)``: attributes the backend has no notion of, and
    ``{attribute: server default}`` for those the server has but the backend cannot set or read."""
    unreachable = dict(getattr(backend, "unreachable_attributes", None) or {})
    return [a for a in backend.not_applicable_attributes if a not in unreachable], unreachable


@dataclass
class CreateReport:
    """What :func:`create_tables` did.

    ``created``, ``existing`` (matching its spec) and ``mismatched`` (``{table: [difference]}``,
    never overwritten), as always.  Only when they apply: ``codec_map`` and ``mapped``
    (``{table: {family: [spec codec, created codec]}}``) when a map was given; ``unset``
    (``{table: [problem]}``) for spec values the backend could not set; ``not_presplit`` for
    salted tables created as one region, with the HBase shell statements that pre-split them.
    """

    created: list = field(default_factory=list)
    existing: list = field(default_factory=list)
    mismatched: dict = field(default_factory=dict)
    codec_map: dict = field(default_factory=dict)
    mapped: dict = field(default_factory=dict)
    unset: dict = field(default_factory=dict)
    not_presplit: dict = field(default_factory=dict)

    def to_dict(self):
        out = {"created": self.created, "existing": self.existing, "mismatched": self.mismatched}
        if self.codec_map:
            out["codec_map"] = self.codec_map
            out["mapped"] = self.mapped
        if self.unset:
            out["unset"] = self.unset
        if self.not_presplit:
            out["not_presplit"] = self.not_presplit
        return out


def _select(specs, only):
    specs = specs if specs is not None else load_specs()
    if only is None:
        return specs
    unknown = sorted(set(only) - set(specs))
    if unknown:
        raise InvalidArgument(f"no spec for table(s): {', '.join(unknown)}")
    return {name: specs[name] for name in only}


def _shell_prefix(backend):
    """The prefix the backend puts before table names, as the HBase shell must spell them."""
    prefix = getattr(backend, "table_prefix", None)
    return f"{prefix}_" if prefix else ""


def create_tables(backend, specs=None, only=None, codec_map=None):
    """Create every table of ``specs`` (default: the shipped specs) that does not exist yet.

    Idempotent: an existing table that matches its spec (under ``codec_map``) is left alone; one
    that differs is reported in ``mismatched`` and never overwritten.  Specs and the map are
    validated, and every codec the new tables need is checked on the backend
    (:func:`check_codecs`), before the first table is created: a refused codec raises
    :class:`CodecUnavailable` and nothing is created.  ``codec_map`` (``{"LZO": "GZ"}``) creates
    families with the codec the cluster has in place of the spec's.  A store with no signature
    counted yet gets its one data row: ``~rank/since``, its daily rankings complete from the start;
    a store with no crash yet gets the cut-over mark (``~derive/since``): its counters are derived.
    """
    codec_map = check_codec_map(codec_map)
    specs = _select(specs, only)
    report = CreateReport(codec_map=codec_map)
    not_applicable = backend.not_applicable_attributes
    live = set(backend.list_tables())
    todo = []
    for name, spec in specs.items():
        effective, mapped = apply_codec_map(spec, codec_map)
        if mapped:
            report.mapped[name] = {fam: list(pair) for fam, pair in mapped.items()}
        if name in live:
            diffs = compare(spec, backend.describe_table(name), not_applicable, codec_map)
            if diffs:
                report.mismatched[name] = diffs
            else:
                report.existing.append(name)
        else:
            todo.append((spec, effective, mapped))
    _require_codecs(backend, todo)
    _, unreachable = attribute_limits(backend)
    for spec, effective, _mapped in todo:
        backend.create_table(effective)
        report.created.append(spec.name)
        for fam in spec.families:
            for attr, server_value in unreachable.items():
                value = fam.attributes()[attr]
                if value != server_value:
                    report.unset.setdefault(spec.name, []).append(
                        f"{spec.name}: family {fam.name}: {attr} {value!r} cannot be set through this "
                        f"backend (the server used {server_value!r}); in the HBase shell: alter "
                        f"'{_shell_prefix(backend)}{spec.name}', {{NAME => '{fam.name}', {attr} => '{value}'}}")
    salted = [spec for spec, _e, _m in todo if spec.salted]
    if salted and getattr(backend, "presplit_at_create", True) is False:
        report.not_presplit = {
            "tables": [spec.name for spec in salted],
            "reason": "Thrift1's createTable takes no split keys: each table starts as one region",
            "ddl": [hbase_shell_ddl(spec, _shell_prefix(backend), codec_map) for spec in salted],
        }
    if SIGNATURES_SEEN in specs and SIGNATURES in specs and not any(True for _ in backend.scan(SIGNATURES, limit=1)):
        # no signature counted yet (a new store): its daily rankings are complete from its first
        # crash on (a store with counts from an older version: once rollup recomputed them)
        backend.check_and_put(SIGNATURES_SEEN, RK.SINCE_ROW, RK.COL_SINCE, None, RK.since_cells(RK.FIRST_DAY))
    if DERIVED in specs and CRASH_REPORTS in specs and not any(True for _ in backend.scan(CRASH_REPORTS, limit=1)):
        # a store with no crash yet: its counters are derived from its first crash on (a store
        # with crashes from an older version is cut over by ``socorro-store derive cut-over``)
        backend.check_and_put(DERIVED, D.SINCE_ROW, D.COL_SINCE, None, {
            D.COL_SINCE: datetime.now(timezone.utc).isoformat().encode("ascii")})
    return report


def _require_codecs(backend, todo):
    """Raise :class:`CodecUnavailable` unless the backend takes every codec ``todo`` needs."""
    needed_by, sources = {}, {}
    for spec, effective, _mapped in todo:
        for wanted, fam in zip(spec.families, effective.families):
            needed_by.setdefault(fam.compression, []).append(f"{spec.name}:{fam.name}")
            sources.setdefault(fam.compression, set()).add(wanted.compression)
    refused = check_codecs(backend, needed_by)
    if refused:
        raise CodecUnavailable(refused, {c: needed_by[c] for c in refused}, sources)


def verify_tables(backend, specs=None, codec_map=None):
    """Compare live tables with specs.  Returns ``{table: [difference, …]}`` for drifted tables.

    A missing table is a difference.  Attributes the backend cannot read are not drift (see
    :func:`attribute_limits`: the caller reports them as unchecked).  Under ``codec_map`` a family
    with the mapped codec matches; one with any codec other than the spec's or the mapped one is
    drift.
    """
    codec_map = check_codec_map(codec_map)
    specs = specs if specs is not None else load_specs()
    live = set(backend.list_tables())
    drift = {}
    for name, spec in specs.items():
        if name not in live:
            drift[name] = [f"{name}: table is missing"]
            continue
        diffs = compare(spec, backend.describe_table(name), backend.not_applicable_attributes, codec_map)
        diffs += split_drift(backend, spec)
        if diffs:
            drift[name] = diffs
    return drift


def split_drift(backend, spec):
    """``[difference]`` when a salted table lacks a split point on a salt boundary (HBase splits
    a growing region on its own, so split points beyond them are not drift); ``[]`` where the
    backend cannot read regions (no ``split_points``) or the table is not salted."""
    split_points = getattr(backend, "split_points", None)
    if not spec.salted or split_points is None:
        return []
    points = set(split_points(spec.name))
    missing = [salt for salt in SALTS[1:] if salt.encode() not in points]
    if not missing:
        return []
    return [f"{spec.name}: not split on the salt boundaries: no region starts at "
            f"{', '.join(repr(s) for s in missing)} ({len(points) + 1} region(s); a salted table "
            f"has one region per salt: recreate it empty, or split it in the HBase shell)"]


def _key_text(key):
    """A region boundary as text: the store's keys are ASCII; any other byte as ``\\xNN``."""
    return key.decode("utf-8", "backslashreplace")


def ping(backend):
    """Whether the store answers, and through which servers.

    ``{"ok": True, "tables": N}`` after one cheap call (list the tables; it raises
    :class:`~socorro_store.errors.BackendUnavailable` when no server answers).  On a backend with
    several servers (``probe_servers``: an ``hbase://H1:P1,H2:P2`` URL) also ``"servers"``:
    ``[{"server": "host:port", "ok": bool, "ms": float, "error": str (when not ok)}]``, each
    asked once on a fresh connection, and ``"servers_down"``, how many did not answer; the store
    answers while one server does.
    """
    servers = ping_servers(backend)
    out = {"ok": True, "tables": len(backend.list_tables())}
    if servers is not None:
        out["servers"] = servers
        out["servers_down"] = sum(not item["ok"] for item in servers)
    return out


def describe_table(backend, name):
    """``{"name":…, "families": {family: {ATTRIBUTE: value}}}`` of a live table.

    An attribute the backend cannot read has the value None, and is listed under
    ``not_applicable`` (the backend has no such thing) or ``unreadable`` (the server has it, the
    backend's API cannot read it: ask the server's own tools).

    On HBase also ``"regions"``: ``[{"start", "end", "server"}]``, each region's keys (text;
    ``""`` at the table's ends) and the region server holding it, and ``"region_servers"``:
    ``{server: number of the table's regions}``; and, for a URL naming several Thrift servers,
    ``"servers"`` as :func:`ping` gives them.
    """
    families = backend.describe_table(name)
    not_applicable, unreachable = attribute_limits(backend)
    hidden = set(backend.not_applicable_attributes)
    out = {"name": name,
           "families": {fam: {k: (None if k in hidden else v) for k, v in spec.attributes().items()}
                        for fam, spec in families.items()}}
    if not_applicable:
        out["not_applicable"] = not_applicable
    if unreachable:
        out["unreadable"] = sorted(unreachable)
    table_regions = getattr(backend, "table_regions", None)
    if table_regions is not None:
        regions = table_regions(name)
        out["regions"] = [{"start": _key_text(r["start"]), "end": _key_text(r["end"]), "server": r["server"]}
                          for r in regions]
        counts = {}
        for region in regions:
            counts[region["server"]] = counts.get(region["server"], 0) + 1
        out["region_servers"] = dict(sorted(counts.items()))
    pinged = ping_servers(backend)
    if pinged is not None:
        out["servers"] = pinged
    return out


def ping_servers(backend):
    """Each Thrift server of a URL naming several, asked once (as in :func:`ping`); None for a
    backend of one server."""
    probe, servers = getattr(backend, "probe_servers", None), getattr(backend, "servers", None)
    if probe is None or servers is None or len(servers) < 2:
        return None
    return [{k: v for k, v in item.items() if k != "answer"} for item in probe()]


def ddl_statements(specs=None, table_prefix="", codec_map=None, only=None):
    """HBase shell ``create`` statements for every spec (or the tables in ``only``), codecs
    mapped by ``codec_map``."""
    codec_map = check_codec_map(codec_map)
    return [hbase_shell_ddl(spec, table_prefix, codec_map) for spec in _select(specs, only).values()]


def _existing_tables(backend, names, specs):
    """``names`` (each must exist), or by default every spec'd table that exists."""
    live = set(backend.list_tables())
    if names:
        missing = [n for n in names if n not in live]
        if missing:
            raise TableNotFound(f"table {missing[0]!r} does not exist")
        return list(names)
    specs = specs if specs is not None else load_specs()
    return [n for n in specs if n in live]


def drop_tables(backend, names=None, specs=None):
    """Drop the named tables (default: every spec'd table that exists).  Returns the dropped names."""
    targets = _existing_tables(backend, names, specs)
    for name in targets:
        backend.drop_table(name)
    return targets


def compact_tables(backend, names=None, specs=None):
    """Major-compact the named tables (default: every spec'd table that exists); return the names.

    Compaction drops delete markers, expired cells and versions beyond VERSIONS, as HBase's major
    compaction does.  Every processed crash leaves delete markers on the queue tables, so run it
    regularly (HBase runs a major compaction weekly by default).
    """
    targets = _existing_tables(backend, names, specs)
    for name in targets:
        backend.compact(name)
    return targets
