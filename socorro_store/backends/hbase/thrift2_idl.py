"""HBase's Thrift2 IDL, as far as the thrift2 backend uses it (``thrift2.thrift`` beside
this module, package data), loaded once with thriftpy2.

``hbase2`` is the loaded module: its structs (``TPut``, ``TScan``…), enums, exceptions and the
``THBaseService`` service.  It is registered under its own module name, so it never clashes with
happybase's Thrift1 ``Hbase_thrift`` nor with the gateway's IDL.
"""

import os

import thriftpy2

IDL_PATH = os.path.join(os.path.dirname(__file__), "thrift2.thrift")

hbase2 = thriftpy2.load(IDL_PATH, module_name="socorro_store_hbase2_thrift")

__all__ = ["IDL_PATH", "hbase2"]
