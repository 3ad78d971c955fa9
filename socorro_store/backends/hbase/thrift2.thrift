/*
 * The part of HBase's Thrift2 IDL (org/apache/hadoop/hbase/thrift2/hbase.thrift in the
 * hbase-thrift jar, HBase 2.6.1) that socorro_store.backends.hbase_thrift2 uses: only those
 * structs, enums, exceptions and methods, and in a struct only the fields the backend sets or
 * reads (a reader skips fields it does not declare, so the others need not be here).
 *
 * Field ids, types and required-ness are the wire protocol: tests/test_thrift2_idl.py holds every
 * declaration here against the jar's IDL.
 */

namespace py socorro_store_hbase_thrift2

struct TTimeRange {
  1: required i64 minStamp,
  2: required i64 maxStamp
}

struct TColumn {
  1: required binary family,
  2: optional binary qualifier,
  3: optional i64 timestamp
}

struct TColumnValue {
  1: required binary family,
  2: required binary qualifier,
  3: required binary value,
  4: optional i64 timestamp
}

struct TColumnIncrement {
  1: required binary family,
  2: required binary qualifier,
  3: optional i64 amount = 1
}

struct TResult {
  1: optional binary row,
  2: required list<TColumnValue> columnValues
}

enum TDeleteType {
  DELETE_COLUMN = 0,
  DELETE_COLUMNS = 1,
  DELETE_FAMILY = 2,
  DELETE_FAMILY_VERSION = 3
}

struct TGet {
  1: required binary row,
  2: optional list<TColumn> columns,
  3: optional i64 timestamp,
  4: optional TTimeRange timeRange,
  5: optional i32 maxVersions
}

enum TDurability {
  USE_DEFAULT = 0,
  SKIP_WAL = 1,
  ASYNC_WAL = 2,
  SYNC_WAL = 3,
  FSYNC_WAL = 4
}

struct TPut {
  1: required binary row,
  2: required list<TColumnValue> columnValues
  3: optional i64 timestamp,
  6: optional TDurability durability
}

struct TDelete {
  1: required binary row,
  2: optional list<TColumn> columns,
  3: optional i64 timestamp,
  4: optional TDeleteType deleteType = 1,
  7: optional TDurability durability
}

struct TIncrement {
  1: required binary row,
  2: required list<TColumnIncrement> columns,
  7: optional bool returnResults
}

struct TAppend {
  1: required binary row,
  2: required list<TColumnValue> columns,
  6: optional bool returnResults
}

struct TScan {
  1: optional binary startRow,
  2: optional binary stopRow,
  3: optional list<TColumn> columns
  4: optional i32 caching,
  5: optional i32 maxVersions=1,
  6: optional TTimeRange timeRange,
  11: optional bool reversed
}

struct THRegionInfo {
  1: required i64 regionId
  2: required binary tableName
  3: optional binary startKey
  4: optional binary endKey
}

struct TServerName {
  1: required string hostName
  2: optional i32 port
  3: optional i64 startCode
}

struct THRegionLocation {
  1: required TServerName serverName
  2: required THRegionInfo regionInfo
}

enum TBloomFilterType {
  NONE = 0,
  ROW = 1,
  ROWCOL = 2,
  ROWPREFIX_FIXED_LENGTH = 3,
}

enum TCompressionAlgorithm {
  LZO = 0,
  GZ = 1,
  NONE = 2,
  SNAPPY = 3,
  LZ4 = 4,
  BZIP2 = 5,
  ZSTD = 6
}

struct TTableName {
  1: optional binary ns
  2: required binary qualifier
}

struct TColumnFamilyDescriptor {
  1: required binary name
  4: optional i32 blockSize
  5: optional TBloomFilterType bloomnFilterType
  6: optional TCompressionAlgorithm compressionType
  10: optional i32 maxVersions
  13: optional i32 timeToLive
  14: optional bool blockCacheEnabled
  20: optional bool inMemory
}

struct TTableDescriptor {
 1: required TTableName tableName
 2: optional list<TColumnFamilyDescriptor> columns
}

exception TIOError {
  1: optional string message
  2: optional bool canRetry
}

exception TIllegalArgument {
  1: optional string message
}

service THBaseService {
  TResult get(
    1: required binary table,
    2: required TGet tget
  ) throws (1: TIOError io)

  list<TResult> getMultiple(
    1: required binary table,
    2: required list<TGet> tgets
  ) throws (1: TIOError io)

  bool checkAndPut(
    1: required binary table,
    2: required binary row,
    3: required binary family,
    4: required binary qualifier,
    5: binary value,
    6: required TPut tput
  ) throws (1: TIOError io)

  void putMultiple(
    1: required binary table,
    2: required list<TPut> tputs
  ) throws (1: TIOError io)

  list<TDelete> deleteMultiple(
    1: required binary table,
    2: required list<TDelete> tdeletes
  ) throws (1: TIOError io)

  TResult increment(
    1: required binary table,
    2: required TIncrement tincrement
  ) throws (1: TIOError io)

  TResult append(
    1: required binary table,
    2: required TAppend tappend
  ) throws (1: TIOError io)

  list<TResult> getScannerResults(
    1: required binary table,
    2: required TScan tscan,
    3: i32 numRows = 1
  ) throws (
    1: TIOError io
  )

  list<THRegionLocation> getAllRegionLocations(
    1: required binary table,
  ) throws (
    1: TIOError io
  )

  TTableDescriptor getTableDescriptor(
    1: required TTableName table
  ) throws (1: TIOError io)

  bool tableExists(
    1: TTableName tableName
  ) throws (1: TIOError io)

  list<TTableName> getTableNamesByNamespace(
    1: required string name
  ) throws (1: TIOError io)

  void createTable(
    1: required TTableDescriptor desc
    2: optional list<binary> splitKeys
  ) throws (1: TIOError io)

  void deleteTable(
    1: required TTableName tableName
  ) throws (1: TIOError io)

  void disableTable(
    1: required TTableName tableName
  ) throws (1: TIOError io)
}
