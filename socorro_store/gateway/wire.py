"""Request decoding that a small hostile message cannot stall.

thriftpy2 skips an unknown or mistyped field by looping over the size its container header
declares.  When the declared element type reads no bytes (STOP, VOID or an undefined type code),
nothing bounds that loop: a 30-byte message declaring 2**31 elements keeps a worker busy for
seconds, and thriftpy2's compiled decoder holds the GIL meanwhile, so every client waits.

Legitimate Thrift never declares such an element type, so the guarded protocols below refuse it
with a ``TProtocolException`` (which ends only that connection).  Every element of every other
type consumes at least one byte, so decoding work stays proportional to the bytes received.

Requests are decoded with thriftpy2's pure-Python protocols carrying the guard (the compiled
binary decoder cannot be guarded); replies are still encoded with the compiled one.  The pure
decoder costs about 0.6 ms more per 500 rows of 2 KB, a few percent of a batched write.
"""

from thriftpy2.protocol import TCompactProtocol
from thriftpy2.protocol import binary as _binary
from thriftpy2.protocol.exc import TProtocolException
from thriftpy2.thrift import TType

#: Types whose every value consumes at least one byte on the wire.
SIZED_TYPES = frozenset({TType.BOOL, TType.BYTE, TType.DOUBLE, TType.I16, TType.I32, TType.I64,
                         TType.STRING, TType.BINARY, TType.STRUCT, TType.MAP, TType.SET, TType.LIST})


def check_type(ttype):
    if ttype not in SIZED_TYPES:
        raise TProtocolException(TProtocolException.INVALID_DATA, f"invalid Thrift type {ttype!r}")


class GuardedCompactProtocol(TCompactProtocol):
    """thriftpy2's compact protocol whose skip refuses zero-width element types."""

    def skip(self, ttype):
        check_type(ttype)
        return super().skip(ttype)


class GuardedCompactProtocolFactory:
    def get_protocol(self, trans):
        return GuardedCompactProtocol(trans)


def _guarded_skip(inbuf, ftype, budget=_binary.DEFAULT_MAX_DEPTH):
    check_type(ftype)
    return _library_skip(inbuf, ftype, budget)


# thriftpy2's pure-Python binary decoder calls its module-level ``skip`` by name (recursively, for
# nested containers), so the guard has to replace that name; it does so for the whole process.
# That is safe: the guard refuses only element types no Thrift peer sends.
_library_skip = _binary.skip
_binary.skip = _guarded_skip

#: Binary requests: thriftpy2's pure-Python decoder, now guarded.
GuardedBinaryProtocolFactory = _binary.TBinaryProtocolFactory
