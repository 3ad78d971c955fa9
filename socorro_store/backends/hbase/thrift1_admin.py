"""Table admin over HBase's Thrift1 gateway: the DDL half of the Thrift1 backend
(:class:`~.thrift1.HBaseBackend`), and the calls that say where its tables and servers are.

Thrift1's ``createTable`` takes column descriptors only: no split keys, no block size (see the
backend's ``presplit_at_create`` and ``unreachable_attributes``).  A create is not retried after
the request was sent (a lost reply to a create that worked would turn into TableExists); a drop is
retried, and a retry that finds the table gone after an earlier attempt sent the delete reports
it dropped.
"""

import logging

import happybase  # noqa: F401 - registers the Hbase_thrift module
import Hbase_thrift as thrift  # noqa: E402

from ...errors import TableNotFound
from ...schema.specs import FOREVER, FamilySpec
from .thrift1_wire import _text, translate_error

log = logging.getLogger("socorro_store")
_COMPRESSION_NAMES = {"NONE": "NONE", "GZ": "GZ", "LZO": "LZO", "SNAPPY": "SNAPPY", "LZ4": "LZ4",
                      "ZSTD": "ZSTD", "BZIP2": "BZIP2"}


class Thrift1Admin:
    """Table admin methods of :class:`~.thrift1.HBaseBackend` (a mixin: it uses the backend's
    ``_call``, ``_name``, ``_get_pool``, ``_families`` and ``table_prefix``)."""

    def probe_servers(self):
        """Ask each Thrift server once, on a fresh connection, within ``timeout_ms``:
        ``[{"server", "ok", "ms", "answer": number of tables | "error"}]``."""
        return self._get_pool().probe(lambda c: len(c.getTableNames()))

    def table_regions(self, table):
        """``[{"start", "end", "server", "id"}]`` of the table's regions, by start key: keys as
        bytes (``b""`` at the table's ends), ``server`` as ``host:port`` of the region server
        holding it (Thrift1 ``getTableRegions``)."""
        name = self._name(table)
        regions = self._call("table_regions", lambda c: c.getTableRegions(name), table)
        return sorted(({"start": r.startKey or b"", "end": r.endKey or b"",
                        "server": f"{_text(r.serverName)}:{r.port}", "id": r.id} for r in regions),
                      key=lambda r: r["start"])

    def create_table(self, spec):
        descriptors = [thrift.ColumnDescriptor(
            name=fam.name.encode() + b":", maxVersions=fam.versions,
            compression=_COMPRESSION_NAMES[fam.compression], inMemory=fam.in_memory,
            bloomFilterType="NONE", blockCacheEnabled=fam.blockcache, timeToLive=fam.ttl)
            for fam in spec.families]
        name = self._name(spec.name)
        # Not retried: a lost reply to a create that worked would turn into AlreadyExists.
        self._call("create_table", lambda c: c.createTable(name, descriptors), spec.name, idempotent=False)
        self._families[spec.name] = set(spec.family_names)

    def drop_table(self, table):
        """Disable (if enabled) and delete ``table``; :class:`TableNotFound` if it does not exist.

        Retried like an idempotent call.  A retry that finds the table gone after an earlier
        attempt sent its delete reports it dropped (that attempt's reply was lost) and logs a
        warning that it was already gone on the retry.
        """
        name = self._name(table)
        delete_sent = []

        def drop(client):
            retried_after_delete = bool(delete_sent)
            try:
                if client.isTableEnabled(name):
                    client.disableTable(name)
                delete_sent.append(True)
                client.deleteTable(name)
            except thrift.IOError as exc:
                if retried_after_delete and isinstance(translate_error(exc, table), TableNotFound):
                    return False
                raise
            return True

        self._families.pop(table, None)
        if not self._call("drop_table", drop, table):
            log.warning("drop_table %r: dropped; the table was already gone on the retry (the reply "
                        "to the delete was lost)", table)

    def list_tables(self):
        names = self._call("list_tables", lambda c: c.getTableNames())
        prefix = (self.table_prefix.encode() + b"_") if self.table_prefix else b""
        return sorted(n[len(prefix):].decode("utf-8", "replace") for n in names if n.startswith(prefix))

    def describe_table(self, table):
        name = self._name(table)
        descriptors = self._call("describe_table", lambda c: c.getColumnDescriptors(name), table)
        families = {}
        for raw_name, d in descriptors.items():
            fam = raw_name.rstrip(b":").decode("utf-8", "replace")
            ttl = d.timeToLive if d.timeToLive and d.timeToLive > 0 else FOREVER
            # blocksize None: Thrift1 does not carry it (see unreachable_attributes)
            families[fam] = FamilySpec(name=fam, compression=_text(d.compression).upper(),
                                       versions=d.maxVersions, ttl=ttl, blocksize=None,
                                       in_memory=bool(d.inMemory), blockcache=bool(d.blockCacheEnabled))
        return families

    def compact(self, table):
        name = self._name(table)
        self._call("compact", lambda c: c.majorCompact(name), table)
