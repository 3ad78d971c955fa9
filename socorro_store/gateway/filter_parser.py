"""HBase's filter language (``ParseFilter``): filter strings to :mod:`.filters` trees.

Example: ``PrefixFilter('r') AND (QualifierFilter(>=, 'binary:b') OR KeyOnlyFilter())``.

Grammar (precedence as HBase: SKIP/WHILE bind tightest, then AND, then OR)::

    expr    := and ('OR' and)*
    and     := unary ('AND' unary)*
    unary   := ('SKIP' | 'WHILE') unary | '(' expr ')' | Name '(' [arg (',' arg)*] ')'
    arg     := 'quoted string' ('' escapes a quote) | integer | true | false | < <= = != >= >

Comparators are ``'binary:v'``, ``'binaryprefix:v'``, ``'regexstring:re'`` and ``'substring:s'``
(the last two only with ``=`` / ``!=``).  Any error raises :class:`FilterError`, HBase's
IllegalArgumentException, with ParseFilter's message.
"""

import re

from . import filters
from .filters import FilterError, FilterList, SkipFilter, WhileMatchFilter, make_comparator

# -- parser ------------------------------------------------------------------------------------

_TOKEN = re.compile(rb"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<op><=|>=|!=|<|>|=)|(?P<punct>[(),])"
                    rb"|(?P<word>[A-Za-z0-9_.+\-]+))")

# name -> list of allowed argument signatures; s = string, i = integer, b = boolean, o = compare op,
# c = comparator string, '*s' / '*i' = one or more of that kind.
_SIGNATURES = {
    "KeyOnlyFilter": ["", "b"], "FirstKeyOnlyFilter": [""], "PrefixFilter": ["s"],
    "ColumnPrefixFilter": ["s"], "MultipleColumnPrefixFilter": ["*s"], "ColumnCountGetFilter": ["i"],
    "PageFilter": ["i"], "ColumnPaginationFilter": ["ii"], "InclusiveStopFilter": ["s"],
    "TimestampsFilter": ["*i"], "RowFilter": ["oc"], "FamilyFilter": ["oc"], "QualifierFilter": ["oc"],
    "ValueFilter": ["oc"], "ColumnRangeFilter": ["sbsb"],
    "SingleColumnValueFilter": ["ssoc", "ssocbb"], "SingleColumnValueExcludeFilter": ["ssoc", "ssocbb"],
    "DependentColumnFilter": ["ss", "ssb", "ssboc"],
}
_CLASSES = {name: getattr(filters, name) for name in _SIGNATURES}


def _tokenize(text):
    tokens, pos = [], 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            if text[pos:].strip():
                raise FilterError("Incorrect Filter String")
            break
        pos = match.end()
        kind = match.lastgroup
        value = match.group(kind)
        if kind == "str":
            tokens.append(("str", value[1:-1].replace(b"''", b"'")))
        else:
            tokens.append((kind, value.decode("latin-1")))
    return tokens


class _Parser:
    def __init__(self, tokens):
        self.tokens, self.pos = tokens, 0

    def peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else (None, None)

    def take(self):
        token = self.peek()
        self.pos += 1
        return token

    def expr(self):
        parts = [self.conjunction()]
        while self.peek() == ("word", "OR"):
            self.take()
            parts.append(self.conjunction())
        return parts[0] if len(parts) == 1 else FilterList(False, parts)

    def conjunction(self):
        parts = [self.unary()]
        while self.peek() == ("word", "AND"):
            self.take()
            parts.append(self.unary())
        return parts[0] if len(parts) == 1 else FilterList(True, parts)

    def unary(self):
        kind, value = self.take()
        if (kind, value) == ("word", "SKIP"):
            return SkipFilter(self.unary())
        if (kind, value) == ("word", "WHILE"):
            return WhileMatchFilter(self.unary())
        if (kind, value) == ("punct", "("):
            inner = self.expr()
            if self.take() != ("punct", ")"):
                raise FilterError("Mismatched parenthesis")
            return inner
        if kind != "word":
            raise FilterError("Incorrect Filter String")
        if value not in _CLASSES:
            raise FilterError(f"Filter Name {value} not supported")
        if self.take() != ("punct", "("):
            raise FilterError("Incorrect Filter String")
        args = []
        if self.peek() != ("punct", ")"):
            while True:
                args.append(self.take())
                separator = self.take()
                if separator == ("punct", ")"):
                    break
                if separator != ("punct", ","):
                    raise FilterError("Incorrect argument list")
        else:
            self.take()
        return _build(value, args)


def _build(name, args):
    for signature in _SIGNATURES[name]:
        converted = _convert(signature, args)
        if converted is not None:
            if name in ("RowFilter", "FamilyFilter", "QualifierFilter", "ValueFilter"):
                converted[1] = make_comparator(converted[0], converted[1])
            elif name.startswith("SingleColumnValue"):
                converted[3] = make_comparator(converted[2], converted[3])
            elif name == "DependentColumnFilter" and len(converted) == 5:
                converted[4] = make_comparator(converted[3], converted[4])
            return _CLASSES[name](*converted)
    raise FilterError(f"Incorrect arguments for {name}: expected {' or '.join(_SIGNATURES[name]) or 'none'}")


def _convert(signature, args):
    if signature.startswith("*"):
        if not args:
            return None
        signature = signature[1] * len(args)
    if len(signature) != len(args):
        return None
    out = []
    for kind, (token_kind, value) in zip(signature, args):
        if kind in "sc":
            if token_kind != "str":
                return None
            out.append(value)
        elif kind == "i":
            if token_kind != "word" or not re.fullmatch(r"[+-]?\d+", value):
                return None
            out.append(int(value))
        elif kind == "b":
            if token_kind != "word" or value.lower() not in ("true", "false"):
                return None
            out.append(value.lower() == "true")
        elif kind == "o":
            if token_kind != "op":
                return None
            out.append(value)
    return out


def parse_filter(text, reversed_scan=False):
    """Parse a filter string (bytes) into a :class:`Filter`; raise :class:`FilterError`."""
    if isinstance(text, str):
        text = text.encode("utf-8")
    tokens = _tokenize(text)
    if not tokens:
        raise FilterError("Incorrect Filter String")
    depth = 0
    for token in tokens:
        if token == ("punct", "("):
            depth += 1
        elif token == ("punct", ")"):
            depth -= 1
            if depth < 0:
                raise FilterError("Mismatched parenthesis")
    if depth:
        raise FilterError("Mismatched parenthesis")
    parser = _Parser(tokens)
    flt = parser.expr()
    if parser.pos != len(tokens):
        raise FilterError("Incorrect Filter String")
    flt.set_reversed(reversed_scan)
    return flt
