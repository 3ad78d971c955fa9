"""Request decoding that a small hostile message cannot stall.

thriftpy2 skips an unknown or mistyped field by looping over the size its container header
declares.  When the declared element type reads no bytes (STOP, VOID or an undefined type code),
nothing bounds that loop: a 30-byte message declaring 2**31 elements keeps a worker busy for
seconds, and thriftpy2's compiled decoder holds the GIL meanwhile, so every client waits.

Legitimate Thrift never declares such an element type, so the guarded protocols below refuse it
with a ``TProtocolException`` (which ends only that connection).  Every element of every other
type consumes at least one byte, so decoding work stays proportional to the bytes received.

Memory is the other budget.  One byte on the wire can become a Python object of a hundred: a
``mutateRows`` whose list holds N empty structs (each a single STOP byte) decodes into N
``BatchMutation`` objects, so a 2 MB frame took 200 MB and a 10 MB buffered request 1 GB
(issue 21, defect 7).  So a request may declare at most ``max_elements`` list and set elements
and map entries in total (:data:`MAX_REQUEST_ELEMENTS` by default, counted as each container's
header is read, before its elements are decoded); beyond that decoding stops with
:class:`TooManyElements`, which the processor answers with a ``TApplicationException`` before
the server closes the connection (the rest of the request is never read).

Requests are decoded in pure Python (the compiled decoders cannot be guarded); replies are still
encoded with the compiled binary encoder.  Compact requests use thriftpy2's pure-Python compact
protocol with a guarded ``skip``.  Binary requests use :class:`GuardedBinaryProtocol`, a decoder
of our own that produces exactly what thriftpy2's pure-Python binary decoder does (same structs,
same handling of mistyped, unknown and negative-size fields), but works on a local buffer with
offsets instead of one transport call and one ``struct.unpack`` per primitive: on a
``mutateRows`` of 500 rows of 2 KB, 2.5 ms instead of 4.5 ms.  (thriftpy2's pure-Python binary
decoder, which this module used to guard by patching its ``skip``, is no longer used here.)
"""

import keyword
import struct

from thriftpy2.protocol import TCompactProtocol
from thriftpy2.protocol.binary import DEFAULT_MAX_DEPTH, VERSION_1, VERSION_MASK
from thriftpy2.protocol.exc import TProtocolException
from thriftpy2.thrift import TType
from thriftpy2.transport import TTransportException

#: Types whose every value consumes at least one byte on the wire.
SIZED_TYPES = frozenset({TType.BOOL, TType.BYTE, TType.DOUBLE, TType.I16, TType.I32, TType.I64,
                         TType.STRING, TType.BINARY, TType.STRUCT, TType.MAP, TType.SET, TType.LIST})


def check_type(ttype):
    if ttype not in SIZED_TYPES:
        raise TProtocolException(TProtocolException.INVALID_DATA, f"invalid Thrift type {ttype!r}")


#: List/set elements and map entries one request may declare in total.  The store's biggest
#: batches (1,000 rows a call in rollup and expiry, a few dozen columns each) declare tens of
#: thousands.  The worst a request can decode is 262,144 empty structs, about 27 MB of objects
#: for as long as the request lives (an empty struct is an object of about 100 bytes), the
#: same as a legitimate batch of that many mutations; with ``max_workers`` requests at once
#: (32), under 1 GB.  Before the cap, one 2 MB frame decoded into 200 MB.
MAX_REQUEST_ELEMENTS = 1 << 18


class TooManyElements(TProtocolException):
    """A request declared more container elements than the server decodes (see the module
    docstring).  ``message_name``/``seqid``: the call it was decoding, for the error reply."""

    def __init__(self, limit, message_name="", seqid=0):
        super().__init__(TProtocolException.SIZE_LIMIT,
                         f"request declares more than {limit} list, set or map elements")
        self.message_name, self.seqid = message_name, seqid


class _ElementBudget:
    """The per-request element count of a guarded protocol (reset by each message header)."""

    def _start_message(self, name, seqid):
        self._message = (name, seqid)
        self._elements_left = self.max_elements

    def _spend(self, size):
        if size > 0:
            self._elements_left -= size
            if self._elements_left < 0:
                raise TooManyElements(self.max_elements, *self._message)


class GuardedCompactProtocol(_ElementBudget, TCompactProtocol):
    """thriftpy2's compact protocol whose skip refuses zero-width element types, and which
    counts container elements against ``max_elements`` per request (skipped ones too: they
    consume bytes, so counting them refuses nothing a legitimate peer sends)."""

    def __init__(self, trans, max_elements=None):
        super().__init__(trans)
        self.max_elements = MAX_REQUEST_ELEMENTS if max_elements is None else max_elements
        self._start_message("", 0)

    def read_message_begin(self):
        name, mtype, seqid = super().read_message_begin()
        self._start_message(name, seqid)
        return name, mtype, seqid

    def _read_collection_begin(self):
        ttype, size = super()._read_collection_begin()
        self._spend(size)
        return ttype, size

    def _read_map_begin(self):
        ktype, vtype, size = super()._read_map_begin()
        self._spend(size)
        return ktype, vtype, size

    def skip(self, ttype):
        check_type(ttype)
        return super().skip(ttype)


class GuardedCompactProtocolFactory:
    def __init__(self, max_elements=None):
        self.max_elements = max_elements

    def get_protocol(self, trans):
        return GuardedCompactProtocol(trans, self.max_elements)


# -- binary ------------------------------------------------------------------------------------

_STOP, _BOOL, _BYTE, _STRING, _STRUCT, _MAP, _SET, _LIST, _BINARY = (
    TType.STOP, TType.BOOL, TType.BYTE, TType.STRING, TType.STRUCT, TType.MAP, TType.SET,
    TType.LIST, TType.BINARY)
_I32 = struct.Struct("!i").unpack_from
#: Fixed-width scalars other than BOOL: ``type -> (width, unpack_from)``.
_FIXED = {TType.BYTE: (1, struct.Struct("!b").unpack_from),
          TType.I16: (2, struct.Struct("!h").unpack_from),
          TType.I32: (4, _I32),
          TType.I64: (8, struct.Struct("!q").unpack_from),
          TType.DOUBLE: (8, struct.Struct("!d").unpack_from)}
_WIDTH = {TType.BOOL: 1, **{ttype: width for ttype, (width, _u) in _FIXED.items()}}
_CHUNK = 256 * 1024


def _signed_byte(value):
    return value - 256 if value > 127 else value


def _depth(budget, where):
    if budget <= 0:
        raise RecursionError("maximum nesting depth exceeded" + where)


class GuardedBinaryProtocol(_ElementBudget):
    """The request side of thriftpy2's strict binary protocol, guarded (see the module docstring).

    ``stream.read(n)`` must return between 1 and ``n`` bytes (whatever has arrived) or raise:
    the decoder keeps what it has not consumed yet in its own buffer, and asks the stream for
    more only when the message needs more, so it never waits for bytes a client has not sent.
    Bytes past the end of one message (a pipelined request) stay buffered for the next.
    Decoding state lives in ``buf``/``pos``; methods load them into locals for speed and store
    ``pos`` back before calling another method.  Containers that are decoded count against
    ``max_elements`` per request; skipped ones allocate nothing and are not counted.
    """

    def __init__(self, stream, max_depth=DEFAULT_MAX_DEPTH, max_elements=None):
        self.stream = stream
        self.max_depth = max_depth
        self.max_elements = MAX_REQUEST_ELEMENTS if max_elements is None else max_elements
        self.buf, self.pos = b"", 0
        self._start_message("", 0)

    def _fill(self, pos, need):
        """Make ``need`` bytes available from ``pos``; return ``(buf, 0, len(buf))`` (also stored)."""
        buf = self.buf
        parts = [buf[pos:]]
        have = len(buf) - pos
        read = self.stream.read
        while have < need:
            chunk = read(max(need - have, _CHUNK))
            if not chunk:
                raise TTransportException(TTransportException.END_OF_FILE, "connection closed")
            parts.append(chunk)
            have += len(chunk)
        buf = parts[0] if len(parts) == 1 else b"".join(parts)
        self.buf, self.pos = buf, 0
        return buf, 0, len(buf)

    def _discard(self, count):
        """Skip ``count`` bytes without holding them all in memory at once."""
        while True:
            left = len(self.buf) - self.pos
            if count <= left:
                self.pos += count
                return
            count -= left
            self.buf, self.pos = b"", 0
            self._fill(0, 1)

    def _take(self, size):
        """The next ``size`` bytes (negative: none, as thriftpy2's transport reads nothing)."""
        if size <= 0:
            return b""
        pos = self.pos
        buf = self.buf
        if pos + size > len(buf):
            buf, pos, _end = self._fill(pos, size)
        self.pos = pos + size
        return buf[pos:pos + size]

    def _fixed(self, width, unpack):
        pos = self.pos
        buf = self.buf
        if pos + width > len(buf):
            buf, pos, _end = self._fill(pos, width)
        self.pos = pos + width
        return unpack(buf, pos)[0]

    # -- the TProtocol interface the processor uses ------------------------------------------
    def read_message_begin(self):
        size = self._fixed(4, _I32)
        if size >= 0:
            raise TProtocolException(type=TProtocolException.BAD_VERSION,
                                     message="No protocol version header")
        if size & VERSION_MASK != VERSION_1:
            raise TProtocolException(type=TProtocolException.BAD_VERSION,
                                     message="Bad version in read_message_begin: %d" % size)
        name = self._take(self._fixed(4, _I32)).decode("utf-8")
        seqid = self._fixed(4, _I32)
        self._start_message(name, seqid)
        return name, size & 0xFF, seqid

    def read_message_end(self):
        pass

    def read_struct(self, obj):
        self._read_struct(obj, self.max_depth)

    def skip(self, ttype):
        self._skip(ttype, self.max_depth)

    # -- decoding ----------------------------------------------------------------------------
    def _read_struct(self, obj, budget):
        if budget <= 0:
            _depth(budget, " while reading a Thrift struct")
        budget -= 1
        cls = type(obj)
        fields = _FIELDS.get(cls) or _fields(cls)
        buf, pos = self.buf, self.pos
        end = len(buf)
        pos = _FAST[cls](obj, buf, pos, end)  # the fields sent in spec order and already here
        if pos < 0:  # it also read the STOP
            self.pos = -pos
            return
        while True:
            if pos >= end:
                buf, pos, end = self._fill(pos, 1)
            if buf[pos] == _STOP:
                self.pos = pos + 1
                return
            if pos + 3 > end:
                buf, pos, end = self._fill(pos, 3)
            field = fields.get(buf[pos:pos + 3])
            if field is None:  # unknown, mistyped or oddly typed: the general rules
                self.pos = pos + 3
                self._read_field(obj, buf[pos], buf[pos + 1] << 8 | buf[pos + 2], budget)
                buf, pos = self.buf, self.pos
                end = len(buf)
                continue
            pos += 3
            name, kind, spec = field
            if kind <= _TEXT:
                if pos + 4 > end:
                    buf, pos, end = self._fill(pos, 4)
                size = _I32(buf, pos)[0]
                pos += 4
                if size <= 0:
                    value = b""
                else:
                    if pos + size > end:
                        buf, pos, end = self._fill(pos, size)
                    value = buf[pos:pos + size]
                    pos += size
                if kind == _TEXT:
                    value = _text(value)
            elif kind == _FLAG:
                if pos >= end:
                    buf, pos, end = self._fill(pos, 1)
                value = buf[pos] != 0
                pos += 1
            elif kind == _NUMBER:
                width, unpack = spec
                if pos + width > end:
                    buf, pos, end = self._fill(pos, width)
                value = unpack(buf, pos)[0]
                pos += width
            else:
                self.pos = pos
                value = self._read_val(kind, spec, budget)
                buf, pos = self.buf, self.pos
                end = len(buf)
            setattr(obj, name, value)

    def _read_field(self, obj, ftype, fid, budget):
        """thriftpy2's rules for a field header the fast table of ``_fields`` does not hold."""
        if fid > 32767:
            fid -= 65536
        fspec = obj.thrift_spec.get(fid)
        if fspec is not None and ftype != fspec[0]:
            if ftype == _STRING or ftype == _BINARY:
                ftype = fspec[0]  # thriftpy2 reads a string-typed field as the spec's type
            else:
                fspec = None
        if fspec is None:  # unknown or mistyped: skipped
            self._skip(_signed_byte(ftype), budget)
        else:
            setattr(obj, fspec[1], self._read_val(ftype, fspec[2] if len(fspec) == 4 else None, budget))

    def _read_val(self, ttype, spec, budget):
        """One value of (spec) type ``ttype``, as thriftpy2's ``read_val``."""
        if ttype == _BINARY:
            return self._take(self._fixed(4, _I32))
        if ttype == _STRING:
            return _text(self._take(self._fixed(4, _I32)))
        if ttype == _BOOL:
            return self._fixed(1, _FIXED[_BYTE][1]) != 0
        if ttype in _FIXED:
            return self._fixed(*_FIXED[ttype])
        if ttype == _STRUCT:
            obj = spec()
            self._read_struct(obj, budget)
            return obj
        if ttype == _LIST or ttype == _SET:
            return self._read_list(spec, budget)
        if ttype == _MAP:
            return self._read_map(spec, budget)
        return None  # a type no spec declares; thriftpy2 reads nothing either

    def _read_list(self, spec, budget):
        v_type, v_spec = spec if isinstance(spec, tuple) else (spec, None)
        _depth(budget, " while reading a Thrift container")
        budget -= 1
        r_type = self._fixed(1, _FIXED[_BYTE][1])
        size = self._fixed(4, _I32)
        if r_type != v_type and not (r_type in (_STRING, _BINARY) and v_type in (_STRING, _BINARY)):
            for _ in range(size):
                self._skip(r_type, budget)
            return []
        self._spend(size)
        if v_type == _STRUCT:  # the hot path: mutateRows' BatchMutations and their Mutations
            out = []
            append, read_struct = out.append, self._read_struct
            for _ in range(size):
                obj = v_spec()
                read_struct(obj, budget)
                append(obj)
            return out
        read_val = self._read_val
        return [read_val(v_type, v_spec, budget) for _ in range(size)]

    def _read_map(self, spec, budget):
        k_type, k_spec = (spec[0], None) if isinstance(spec[0], int) else spec[0]
        v_type, v_spec = (spec[1], None) if isinstance(spec[1], int) else spec[1]
        _depth(budget, " while reading a Thrift container")
        budget -= 1
        unpack_byte = _FIXED[_BYTE][1]
        sk_type = self._fixed(1, unpack_byte)
        sv_type = self._fixed(1, unpack_byte)
        size = self._fixed(4, _I32)
        if sk_type in (_STRING, _BINARY):
            sk_type = k_type
        if sv_type in (_STRING, _BINARY):
            sv_type = v_type
        if sk_type != k_type or sv_type != v_type:
            for _ in range(size):
                self._skip(sk_type, budget)
                self._skip(sv_type, budget)
            return {}
        self._spend(size)
        out = {}
        read_val = self._read_val
        for _ in range(size):
            key = read_val(k_type, k_spec, budget)
            out[key] = read_val(v_type, v_spec, budget)
        return out

    def _skip(self, ttype, budget):
        """thriftpy2's ``skip``, refusing zero-width types (the guard) wherever it recurses."""
        check_type(ttype)
        width = _WIDTH.get(ttype)
        if width is not None:
            self._discard(width)
        elif ttype == _STRING or ttype == _BINARY:
            size = self._fixed(4, _I32)
            if size > 0:
                self._discard(size)
        elif ttype == _LIST or ttype == _SET:
            _depth(budget, " while skipping a Thrift container")
            e_type = self._fixed(1, _FIXED[_BYTE][1])
            size = self._fixed(4, _I32)
            self._skip_many((e_type,), size, budget - 1)
        elif ttype == _MAP:
            _depth(budget, " while skipping a Thrift container")
            unpack_byte = _FIXED[_BYTE][1]
            types = (self._fixed(1, unpack_byte), self._fixed(1, unpack_byte))
            size = self._fixed(4, _I32)
            self._skip_many(types, size, budget - 1)
        else:  # STRUCT
            _depth(budget, " while skipping a Thrift struct")
            unpack_byte = _FIXED[_BYTE][1]
            while True:
                f_type = self._fixed(1, unpack_byte)
                if f_type == _STOP:
                    break
                self._discard(2)
                self._skip(f_type, budget - 1)

    def _skip_many(self, types, size, budget):
        """Skip ``size`` groups of ``types``, as thriftpy2 skips container elements."""
        if size <= 0:
            return
        widths = [_WIDTH.get(ttype) for ttype in types]
        if None not in widths:  # fixed-width (so valid) types: one discard, bounded by bytes sent
            self._discard(size * sum(widths))
            return
        for _ in range(size):
            for ttype in types:
                self._skip(ttype, budget)


# Field kinds of the fast table; anything else is the spec type itself, read by ``_read_val``.
_BYTES, _TEXT, _FLAG, _NUMBER = -4, -3, -2, -1
_FIELDS = {}
_FAST = {}  # class -> its _fast_reader


def _fields(cls):
    """``{3-byte field header: (attribute, kind, spec)}`` for the fields of ``cls`` as a peer
    normally sends them (binary fields arrive typed STRING).  Built once per struct class."""
    fields = {}
    for fid, fspec in cls.thrift_spec.items():
        ftype, name = fspec[0], fspec[1]
        wire_types = (_STRING, _BINARY) if ftype in (_STRING, _BINARY) else (ftype,)
        if ftype == _BINARY:
            kind, spec = _BYTES, None
        elif ftype == _STRING:
            kind, spec = _TEXT, None
        elif ftype == _BOOL:
            kind, spec = _FLAG, None
        elif ftype in _FIXED:
            kind, spec = _NUMBER, _FIXED[ftype]
        else:
            kind, spec = ftype, fspec[2] if len(fspec) == 4 else None
        for wire_type in wire_types:
            fields[struct.pack("!bh", wire_type, fid)] = (name, kind, spec)
    _FAST[cls] = _fast_reader(cls)
    _FIELDS[cls] = fields
    return fields


def _fast_reader(cls):
    """A function ``(obj, buf, pos, end) -> pos`` reading the leading scalar and binary fields of
    ``cls`` that come in spec order and lie wholly in ``buf[:end]``; it returns ``-(pos + 1)``
    when it also read the STOP, else where it stopped, for the general loop to go on from.

    Generated, as thriftpy2 generates ``__init__``: a struct of the usual shape costs a fifth
    less than the general loop (no table lookup, dispatch or refill test per field).
    """
    lines = ["def read(obj, buf, pos, end):"]
    for fid in sorted(cls.thrift_spec):
        fspec = cls.thrift_spec[fid]
        ftype, name = fspec[0], fspec[1]
        if not name.isidentifier() or keyword.iskeyword(name) or not 0 <= fid <= 32767:
            continue
        if ftype in (_STRING, _BINARY):
            header = struct.pack("!bh", _STRING, fid)
            value = "buf[pos + 7:pos + 7 + size]"
            empty = 'b""'
            if ftype == _STRING:
                value, empty = f"_text({value})", '""'
            lines += [f"    if pos + 7 <= end and buf[pos:pos + 3] == {header!r}:",
                      "        size = _I32(buf, pos + 3)[0]",
                      "        if size <= 0:",
                      f"            obj.{name} = {empty}",
                      "            pos += 7",
                      "        elif pos + 7 + size <= end:",
                      f"            obj.{name} = {value}",
                      "            pos += 7 + size",
                      "        else:",
                      "            return pos"]
        elif ftype == _BOOL:
            header = struct.pack("!bh", _BOOL, fid)
            lines += [f"    if pos + 4 <= end and buf[pos:pos + 3] == {header!r}:",
                      f"        obj.{name} = buf[pos + 3] != 0",
                      "        pos += 4"]
        elif ftype in _FIXED:
            header = struct.pack("!bh", ftype, fid)
            width = _FIXED[ftype][0]
            lines += [f"    if pos + {3 + width} <= end and buf[pos:pos + 3] == {header!r}:",
                      f"        obj.{name} = _FIXED[{ftype}][1](buf, pos + 3)[0]",
                      f"        pos += {3 + width}"]
        else:  # containers and structs: the general loop reads them, and what follows
            break
    lines += ["    if pos < end and buf[pos] == 0:",
              "        return -(pos + 1)",
              "    return pos"]
    namespace = {"_I32": _I32, "_FIXED": _FIXED, "_text": _text}
    exec(compile("\n".join(lines), f"<fast reader of {cls.__name__}>", "exec"), namespace)
    return namespace["read"]


def _text(payload):
    """thriftpy2's STRING with ``decode_response``: text if it is UTF-8, else the bytes."""
    try:
        return payload.decode("utf-8")
    except UnicodeDecodeError:
        return payload


class GuardedBinaryProtocolFactory:
    """Binary requests: :class:`GuardedBinaryProtocol` over a connection's byte stream."""

    def __init__(self, max_elements=None):
        self.max_elements = max_elements

    def get_protocol(self, stream):
        return GuardedBinaryProtocol(stream, max_elements=self.max_elements)
