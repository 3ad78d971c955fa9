"""Table administration from specs: create, verify, describe, DDL, drop.

Library functions behind ``socorro-store tables …``.  They speak only the backend contract.
"""

from dataclasses import dataclass, field

from ..errors import InvalidArgument, TableNotFound
from .spec_loader import compare, hbase_shell_ddl, load_specs


@dataclass
class CreateReport:
    """What :func:`create_tables` did: tables created, already matching, and mismatches."""

    created: list = field(default_factory=list)
    existing: list = field(default_factory=list)
    mismatched: dict = field(default_factory=dict)

    def to_dict(self):
        return {"created": self.created, "existing": self.existing, "mismatched": self.mismatched}


def create_tables(backend, specs=None, only=None):
    """Create every table of ``specs`` (default: the shipped specs) that does not exist yet.

    Idempotent: an existing table that matches its spec is left alone; one that differs is
    reported in ``mismatched`` and never overwritten.  Specs are all loaded and validated
    before the first table is created.
    """
    specs = specs if specs is not None else load_specs()
    if only is not None:
        unknown = sorted(set(only) - set(specs))
        if unknown:
            raise InvalidArgument(f"no spec for table(s): {', '.join(unknown)}")
        specs = {name: specs[name] for name in only}
    report = CreateReport()
    live = set(backend.list_tables())
    for name, spec in specs.items():
        if name in live:
            diffs = compare(spec, backend.describe_table(name), backend.not_applicable_attributes)
            if diffs:
                report.mismatched[name] = diffs
            else:
                report.existing.append(name)
        else:
            backend.create_table(spec)
            report.created.append(name)
    return report


def verify_tables(backend, specs=None):
    """Compare live tables with specs.  Returns ``{table: [difference, …]}`` for drifted tables.

    A missing table is a difference.  Attributes the backend has no notion of are not drift.
    """
    specs = specs if specs is not None else load_specs()
    live = set(backend.list_tables())
    drift = {}
    for name, spec in specs.items():
        if name not in live:
            drift[name] = [f"{name}: table is missing"]
            continue
        diffs = compare(spec, backend.describe_table(name), backend.not_applicable_attributes)
        if diffs:
            drift[name] = diffs
    return drift


def describe_table(backend, name):
    """``{"name":…, "families": {family: {ATTRIBUTE: value}}}`` of a live table."""
    families = backend.describe_table(name)
    out = {"name": name, "families": {fam: spec.attributes() for fam, spec in families.items()}}
    na = list(backend.not_applicable_attributes)
    if na:
        out["not_applicable"] = na
    return out


def ddl_statements(specs=None, table_prefix=""):
    """HBase shell ``create`` statements for every spec."""
    specs = specs if specs is not None else load_specs()
    return [hbase_shell_ddl(spec, table_prefix) for spec in specs.values()]


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
