"""The embedded engine served over HBase's own Thrift1 protocol (``socorro-store serve``).

``handler`` implements the IDL happybase ships (``Hbase.thrift``, copied here) with HBase's
behaviour, ``filters`` the filter language, ``scanners`` the server-wide scanner table and
``server`` the bounded thread-pool server.  Any happybase program runs against it unchanged.
"""

from .server import GatewayServer, serve

__all__ = ["GatewayServer", "serve"]
