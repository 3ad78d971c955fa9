"""The gateway's binary request decoder against thriftpy2's own decoder, on valid and mangled input.

``wire.GuardedBinaryProtocol`` is a hand-written decoder (for speed, and so a tiny message cannot
declare billions of elements and stall the server).  It must read exactly what thriftpy2's
pure-Python binary protocol reads: the same call and arguments for every message thriftpy2
accepts, and an error wherever thriftpy2 fails or hangs.  Input arrives in random-sized chunks,
as from a socket.
"""

import random
import signal
import struct

import pytest
from thriftpy2.protocol import binary
from thriftpy2.thrift import TClient
from thriftpy2.transport import TMemoryBuffer

from socorro_store.gateway import wire
from socorro_store.gateway.handler import Hbase

H = Hbase


def message(api, **args):
    buf = TMemoryBuffer()
    TClient(H.Hbase, binary.TBinaryProtocol(buf))._send(api, **args)
    return buf.getvalue()


SEEDS = [
    message("getTableNames"),
    message("getRow", tableName=b"t", row=b"r", attributes={b"a": b"b"}),
    message("mutateRows", tableName=b"t", attributes={}, rowBatches=[H.BatchMutation(row=b"r%d" % i, mutations=[
        H.Mutation(column=b"f:q", value=b"v" * 40), H.Mutation(isDelete=True, column=b"f")]) for i in range(3)]),
    message("scannerOpenWithScan", tableName=b"t", attributes={}, scan=H.TScan(
        startRow=b"a", caching=5, columns=[b"a", b"b:c"], timestamp=5, filterString=b"x", reversed=True)),
    message("createTable", tableName=b"t2", columnFamilies=[
        H.ColumnDescriptor(name=b"f:", maxVersions=3, compression="GZ", timeToLive=5)]),
    message("incrementRows", increments=[H.TIncrement(table=b"t", row=b"r", column=b"c:q", ammount=-5)]),
    message("atomicIncrement", tableName=b"t", row=b"r", column=b"c:q", value=2**40),
    message("append", append=H.TAppend(table=b"t", row=b"r", columns=[b"f:a", b"f:b"], values=[b"1", b"2"])),
    message("getRowsWithColumnsTs", tableName=b"t", rows=[b"a", b"b"], columns=[b"c"], timestamp=7,
            attributes={b"\xff": b"\xfe"}),
]


class Chunks:
    """A socket-like stream: each read returns 1..n bytes; an empty read at the end."""

    def __init__(self, data, rng):
        self.data, self.at, self.rng = data, 0, rng

    def read(self, n):
        size = min(n, self.rng.randint(1, 50)) if self.rng.random() < 0.5 else n
        out = self.data[self.at:self.at + size]
        self.at += len(out)
        return out


class Exact:
    """thriftpy2's transport contract: exactly n bytes (none for n <= 0), or an error."""

    def __init__(self, data):
        self.data, self.at = data, 0

    def read(self, n):
        if n <= 0:
            return b""
        if self.at + n > len(self.data):
            raise EOFError("end of input")
        out = self.data[self.at:self.at + n]
        self.at += n
        return out


def canon(value):
    if hasattr(value, "thrift_spec"):
        return type(value).__name__, {k: canon(v) for k, v in vars(value).items()}
    if isinstance(value, list):
        return [canon(v) for v in value]
    if isinstance(value, dict):
        return {canon(k): canon(v) for k, v in value.items()}
    return value


def decode(protocol, messages=2):
    """``("ok", [(api, args)…])`` for up to ``messages`` back-to-back calls, or ``("error", …)``."""
    out = []
    try:
        for _ in range(messages):
            api, _type, seqid = protocol.read_message_begin()
            args_class = getattr(H.Hbase, api + "_args", None)
            if args_class is None:
                protocol.skip(12)  # an unknown call: its arguments struct is skipped
                out.append((api, seqid, None))
            else:
                args = args_class()
                protocol.read_struct(args)
                out.append((api, seqid, canon(args)))
            protocol.read_message_end()
    except Exception:  # noqa: BLE001 - any error is "refused"; which one may differ
        return "error", out
    return "ok", out


def mangle(rng, data):
    data = bytearray(data)
    kind = rng.randrange(7)
    if kind == 0:
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    elif kind == 1:
        data = data[:rng.randrange(len(data))]
    elif kind == 2:
        at = rng.randrange(max(1, len(data) - 4))
        data[at:at + 4] = struct.pack(">i", rng.choice([0x7FFF, -1, 0x100, 3, 0, 0x7FFFFFFF]))
    elif kind == 3:
        at = rng.randrange(len(data))
        data[at:at] = rng.randbytes(rng.randint(1, 64))
    elif kind == 4:
        i, j = sorted(rng.sample(range(len(data) + 1), 2))
        data[i:i] = data[i:j] * rng.randint(2, 5)
    elif kind == 5:
        data = bytearray(rng.randbytes(rng.randint(1, 300)))
    else:
        data += rng.randbytes(rng.randint(1, 128))
    return bytes(data)


class _Slow(Exception):
    pass


def _reference(data):
    """thriftpy2's pure decoder, its skip guarded like ours; None when it does not finish fast
    (a message declaring a huge container of zero-width elements: the stall the guard prevents)."""
    def alarm(*_args):
        raise _Slow()

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        return decode(binary.TBinaryProtocol(Exact(data)))
    except _Slow:
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def guarded_reference_skip(monkeypatch):
    original = binary.skip

    def skip(inbuf, ftype, *args):
        wire.check_type(ftype)
        return original(inbuf, ftype, *args)

    monkeypatch.setattr(binary, "skip", skip)


def test_valid_messages_decode_as_thriftpy2_decodes_them():
    rng = random.Random(7)
    for seed in SEEDS:
        expected = decode(binary.TBinaryProtocol(Exact(seed + seed)))
        assert expected[0] == "ok" and len(expected[1]) == 2
        assert decode(wire.GuardedBinaryProtocol(Chunks(seed + seed, rng))) == expected


def test_mangled_messages_are_refused_or_read_exactly_as_thriftpy2_reads_them(guarded_reference_skip):
    rng = random.Random(1)
    for i in range(10000):
        data = rng.choice(SEEDS) + (rng.choice(SEEDS) if rng.random() < 0.2 else b"")
        data = mangle(rng, data)
        expected = _reference(data)
        got = decode(wire.GuardedBinaryProtocol(Chunks(data, rng)))
        if expected is None or expected[0] == "error":
            assert got[0] == "error", (i, data)
            if expected is not None:
                assert got[1] == expected[1], (i, data)  # the messages before the bad one agree
        else:
            assert got == expected, (i, data)
