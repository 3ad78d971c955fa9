"""Table admin over HBase's Thrift2 server: the DDL half of the thrift2 backend.

What Thrift2 adds over Thrift1 here:

* ``createTable(TTableDescriptor, splitKeys)``: a salted table (``TableSpec.salted``) is created
  pre-split on the 15 salt boundaries ``1``…``f`` (16 regions, one per salt), the same split
  points the HBase shell DDL (``tables ddl``) and the Bigtable backend use.
* Every family attribute the specs have is set and read back: COMPRESSION, VERSIONS, TTL,
  BLOCKSIZE, IN_MEMORY, BLOCKCACHE.  Bloom filters: the specs have no such attribute; families are
  created with none (``NONE``), as the Thrift1 backend creates them, so both APIs make the same
  tables.
* :meth:`split_points` reads a table's region boundaries (``getAllRegionLocations``), so
  ``tables verify`` can report a salted table that is not split on its salt boundaries.

A create is not retried after the request was sent: a lost reply to a create that worked would
turn into TableExists.  A drop is retried, and a retry that finds the table gone after an
earlier attempt sent the delete reports it dropped (as the Thrift1 backend does).
"""

import logging

from ...errors import InvalidArgument, TableNotFound
from ...schema.specs import FOREVER, SALTS, FamilySpec
from ..base import check_table_spec_names
from .thrift2_conn import translate_error
from .thrift2_idl import hbase2

log = logging.getLogger("socorro_store")

_CODECS = hbase2.TCompressionAlgorithm
_CODEC_NAMES = {getattr(_CODECS, name): name for name in ("NONE", "GZ", "LZO", "SNAPPY", "LZ4", "ZSTD", "BZIP2")}
#: the namespace every table of the store lives in (HBase's default one)
NAMESPACE = "default"


def salt_split_keys():
    """The split keys of a salted table: the 15 inner salt boundaries (16 regions)."""
    return [salt.encode() for salt in SALTS[1:]]


def family_descriptor(fam):
    """A :class:`FamilySpec` as a ``TColumnFamilyDescriptor`` with every attribute set."""
    codec = getattr(_CODECS, fam.compression, None)
    if codec is None:
        raise InvalidArgument(f"family {fam.name}: unknown COMPRESSION {fam.compression!r}")
    return hbase2.TColumnFamilyDescriptor(
        name=fam.name.encode(), maxVersions=fam.versions, timeToLive=fam.ttl, blockSize=fam.blocksize,
        compressionType=codec, inMemory=fam.in_memory, blockCacheEnabled=fam.blockcache,
        bloomnFilterType=hbase2.TBloomFilterType.NONE)


def family_spec(descriptor):
    """A live ``TColumnFamilyDescriptor`` as a :class:`FamilySpec` (HBase's defaults for unset fields)."""
    name = descriptor.name.decode("utf-8", "replace")
    ttl = descriptor.timeToLive if descriptor.timeToLive and descriptor.timeToLive > 0 else FOREVER
    return FamilySpec(name=name, compression=_CODEC_NAMES.get(descriptor.compressionType, "NONE"),
                      versions=descriptor.maxVersions or 1, ttl=ttl, blocksize=descriptor.blockSize or 65536,
                      in_memory=bool(descriptor.inMemory),
                      blockcache=True if descriptor.blockCacheEnabled is None else bool(descriptor.blockCacheEnabled))


class Thrift2Admin:
    """Table admin methods of :class:`~.thrift2.HBaseThrift2Backend` (a mixin: it uses the
    backend's ``_pool``, ``_name``, ``_families`` and ``table_prefix``)."""

    # Thrift2 carries every spec attribute and split keys
    not_applicable_attributes = ()
    presplit_at_create = True

    def _table_name(self, table):
        return hbase2.TTableName(ns=NAMESPACE.encode(), qualifier=self._name(table))

    def create_table(self, spec):
        """Create ``spec``'s table; a salted one pre-split on the salt boundaries (16 regions)."""
        check_table_spec_names(spec)
        if not spec.families:
            raise InvalidArgument("a table needs at least one family")
        wire = self._name(spec.name)
        descriptor = hbase2.TTableDescriptor(tableName=self._table_name(spec.name),
                                             columns=[family_descriptor(fam) for fam in spec.families])
        splits = salt_split_keys() if spec.salted else None
        self._pool.call("create_table", lambda c: c.createTable(descriptor, splits), spec.name, wire,
                        idempotent=False, creating=True)
        self._families[spec.name] = set(spec.family_names)

    def drop_table(self, table):
        """Disable (if enabled) and delete ``table``; :class:`TableNotFound` if it does not exist.

        Retried like an idempotent call.  A retry that finds the table gone after an earlier
        attempt sent its delete reports it dropped (that attempt's reply was lost) and logs a
        warning that it was already gone on the retry.
        """
        name, wire = self._table_name(table), self._name(table)
        self._families.pop(table, None)
        delete_sent = []

        def drop(client):
            retried_after_delete = bool(delete_sent)
            try:
                try:
                    client.disableTable(name)
                except hbase2.TIOError as exc:  # already disabled: go on to the delete
                    if "TableNotEnabledException" not in str(exc.message):
                        raise
                delete_sent.append(True)
                client.deleteTable(name)
            except hbase2.TIOError as exc:
                if retried_after_delete and isinstance(translate_error(exc, table, wire), TableNotFound):
                    return False
                raise
            return True

        if not self._pool.call("drop_table", drop, table, wire):
            log.warning("drop_table %r: dropped; the table was already gone on the retry (the reply "
                        "to the delete was lost)", table)

    def list_tables(self):
        """The store's tables (those under ``table_prefix``), sorted, without the prefix."""
        names = self._pool.call("list_tables", lambda c: c.getTableNamesByNamespace(NAMESPACE))
        prefix = (self.table_prefix.encode() + b"_") if self.table_prefix else b""
        return sorted(n.qualifier[len(prefix):].decode("utf-8", "replace")
                      for n in names if n.qualifier.startswith(prefix))

    def table_exists(self, table):
        name = self._table_name(table)
        return bool(self._pool.call("table_exists", lambda c: c.tableExists(name), table, self._name(table)))

    def describe_table(self, table):
        """``{family: FamilySpec}`` with every attribute as HBase reports it, BLOCKSIZE included."""
        name, wire = self._table_name(table), self._name(table)
        descriptor = self._pool.call("describe_table", lambda c: c.getTableDescriptor(name), table, wire)
        families = {}
        for column in descriptor.columns or []:
            spec = family_spec(column)
            families[spec.name] = spec
        self._families[table] = set(families)
        return families

    def table_regions(self, table):
        """``[{"start", "end", "server", "id"}]`` of the table's regions, by start key: keys as
        bytes (``b""`` for the table's ends), ``server`` as ``host:port`` of the region server
        holding it (``getAllRegionLocations``)."""
        wire = self._name(table)
        locations = self._pool.call("region_locations", lambda c: c.getAllRegionLocations(wire), table, wire)
        return sorted(({"start": loc.regionInfo.startKey or b"", "end": loc.regionInfo.endKey or b"",
                        "server": f"{loc.serverName.hostName}:{loc.serverName.port}",
                        "id": loc.regionInfo.regionId} for loc in locations), key=lambda r: r["start"])

    def probe_servers(self):
        """Ask each Thrift2 server once, on a fresh connection, within ``timeout_ms``:
        ``[{"server", "ok", "ms", "answer": number of tables | "error"}]`` (see
        :meth:`~.servers.ServerPool.probe`)."""
        return self._pool.probe(lambda c: len(c.getTableNamesByNamespace(NAMESPACE)))

    def split_points(self, table):
        """The table's region boundaries: every region's start key but the first (empty) one,
        sorted; ``[]`` for a table of one region."""
        wire = self._name(table)
        locations = self._pool.call("region_locations", lambda c: c.getAllRegionLocations(wire), table, wire)
        return sorted(loc.regionInfo.startKey for loc in locations if loc.regionInfo.startKey)
