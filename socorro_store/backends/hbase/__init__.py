"""The hbase backends: the contract over HBase's Thrift servers.

* :mod:`.thrift1`: :class:`HBaseBackend`, over HBase's Thrift1 gateway through happybase
  (``hbase://…``, ``api=thrift1``, the default); its table admin in :mod:`.thrift1_admin`, its
  values and errors in :mod:`.thrift1_wire`.
* :mod:`.thrift2`: :class:`HBaseThrift2Backend`, over HBase's Thrift2 server through thriftpy2
  (``api=thrift2``); its table admin in :mod:`.thrift2_admin`, its pool and errors in
  :mod:`.thrift2_conn`, the IDL (``thrift2.thrift``, the calls it makes) in :mod:`.thrift2_idl`.
* :mod:`.servers`: the pool both share over every Thrift server a URL names (spread, left out,
  failover); :mod:`.thrift_sizes`: the encoded size of a request, to fit a framed server's limit.

The rest of the package reaches them only through the backend contract
(:func:`socorro_store.backends.open_backend` and :class:`~socorro_store.backends.base.Backend`).
"""

from .thrift1 import HBaseBackend
from .thrift2 import HBaseThrift2Backend

__all__ = ["HBaseBackend", "HBaseThrift2Backend"]
