"""Lucene regexp syntax (Super Search's ``@`` operator) translated into a Python ``re`` pattern.

Elasticsearch runs ``@`` values as ``regexp`` queries: Lucene's ``RegExp`` with its default flags,
matched against the whole value.  :func:`translate` parses a value the way Lucene's parser does
and returns a pattern of the same language, for ``re.fullmatch(pattern, value, re.DOTALL)``.

Accepted (Lucene's meaning, which differs from Perl's in places):

* any other character stands for itself; ``^`` and ``$`` are ordinary characters (a match is
  always anchored at both ends);
* ``.`` any one character (newlines included);
* ``X?``, ``X*``, ``X+``, ``X{n}``, ``X{n,}``, ``X{n,m}`` (``n``, ``m`` at most 1,000; ``{,m}``
  is an error); a quantifier character with nothing before it (at the start, after ``(`` or
  ``|``) is an ordinary character, as Lucene reads it: ``*a`` matches the string ``*a``;
* ``A|B`` alternation, ``( )`` grouping, ``()`` the empty string;
* ``[...]`` classes of characters and ranges ``a-z``, ``[^...]`` their complement; the first
  character after ``[`` or ``[^`` is always a member (``[]a]`` holds ``]`` and ``a``); inside a
  class only ``\\``, ``-`` (a range) and the closing ``]`` are special;
* ``\\`` escapes the next character, which is then ordinary, except letters: ``\\d \\D \\s \\S
  \\w \\W`` are Lucene's ASCII classes ``[0-9]``, ``[^0-9]``, ``[\\t\\n\\r ]``, ``[^\\t\\n\\r ]``,
  ``[0-9A-Za-z_]``, ``[^0-9A-Za-z_]`` (Lucene 8.6 and later), and any other escaped letter is an
  error, as in Lucene;
* ``"..."`` a quoted literal string (no escapes inside: ``\\`` is ordinary there).

Refused (:class:`RegexError`), because Lucene gives them meanings a Python pattern cannot give
the same way, or because a Python backtracking matcher could take exponential time on them:

* the optional operators Elasticsearch's default flags turn on: ``&`` intersection, ``~``
  complement, ``<n-m>`` numeric intervals and ``<name>`` automata, ``@`` any string, ``#`` the
  empty language (escape them, ``\\&``, to match the character);
* an escaped character starting a range inside a class (``[\\.-z]``: Lucene versions disagree
  on it);
* a quantifier on something that already holds a quantifier or an alternation: ``(a+)+``,
  ``(a|aa)*``, ``a**``, ``a+?`` (write ``[ab]*`` for ``(a|b)*``);
* patterns whose possible backtracking exceeds a budget: every quantifier multiplies it (by
  1,000 for an unbounded one, by the count of choices for a bounded one, by 2 for ``?``;
  alternatives add), and a pattern above 10,000,000 is refused.  About two unbounded
  quantifiers fit; a ``.*`` or ``.+`` ending the pattern is free (it cannot fail once reached).
  So ``.*OOM.*`` and ``.*js::.*Script.*`` are accepted, ``.*a.*b.*c.*`` is refused;
* patterns over 1,000 characters, groups nested more than 10 deep.
"""

import re

MAX_PATTERN_LENGTH = 1000
MAX_DEPTH = 10
MAX_REPEAT = 1000
#: the backtracking budget (see the module docstring)
MAX_WORK = 10_000_000
_UNBOUNDED_FACTOR = 1000

_MAX_CODE_POINT = 0x10FFFF

#: Lucene's predefined classes (``expandPreDefined``), as inclusive code point ranges
_PREDEFINED = {
    "d": ((0x30, 0x39),),
    "D": ((0, 0x2F), (0x3A, _MAX_CODE_POINT)),
    "s": ((0x09, 0x0A), (0x0D, 0x0D), (0x20, 0x20)),
    "S": ((0, 0x08), (0x0B, 0x0C), (0x0E, 0x1F), (0x21, _MAX_CODE_POINT)),
    "w": ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)),
    "W": ((0, 0x2F), (0x3A, 0x40), (0x5B, 0x5E), (0x60, 0x60), (0x7B, _MAX_CODE_POINT)),
}
_ASCII_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


class RegexError(ValueError):
    """A Lucene regexp refused: unparsable, or one :func:`translate` will not run (see the
    module docstring).  The message says why and, where it helps, at which position."""


# The parse tree: tuples whose first item is the kind.
#   ("char", c) ("string", s) ("any",) ("class", ranges, negated)
#   ("concat", [nodes]) ("union", [nodes]) ("repeat", node, min, max-or-None)


class _Parser:
    """Lucene's recursive-descent ``RegExp`` grammar (union > intersection > concatenation >
    repetition > complement > class > simple expression), with the refusals added."""

    def __init__(self, text):
        self.s, self.pos, self.depth = text, 0, 0

    def more(self):
        return self.pos < len(self.s)

    def peek(self, chars):
        return self.more() and self.s[self.pos] in chars

    def match(self, c):
        if self.more() and self.s[self.pos] == c:
            self.pos += 1
            return True
        return False

    def next(self):
        if not self.more():
            raise RegexError("unexpected end of the pattern")
        self.pos += 1
        return self.s[self.pos - 1]

    def fail(self, message, at=None):
        raise RegexError(f"{message} at position {self.pos if at is None else at}")

    def parse(self):
        if not self.s:
            return ("string", "")
        node = self.union()
        if self.more():
            self.fail(f"unexpected {self.s[self.pos]!r}")
        return node

    def union(self):
        nodes = [self.inter()]
        while self.match("|"):
            nodes.append(self.inter())
        return nodes[0] if len(nodes) == 1 else ("union", nodes)

    def inter(self):
        node = self.concat()
        if self.peek("&"):
            self.fail("'&' (intersection) is not supported; escape it as \\& to match '&'")
        return node

    def concat(self):
        nodes = [self.repeat()]
        while self.more() and not self.peek(")|&"):
            nodes.append(self.repeat())
        return nodes[0] if len(nodes) == 1 else ("concat", nodes)

    def repeat(self):
        node = self.compl()
        while self.peek("?*+{"):
            at = self.pos
            c = self.next()
            if c == "?":
                low, high = 0, 1
            elif c == "*":
                low, high = 0, None
            elif c == "+":
                low, high = 1, None
            else:
                low = self.integer()
                if self.match(","):
                    high = self.integer() if self.peek("0123456789") else None
                else:
                    high = low
                if not self.match("}"):
                    self.fail("expected '}'")
                if high is not None and low > high:
                    self.fail(f"bad repetition {{{low},{high}}}", at)
            if _holds_quantifier_or_union(node):
                self.fail("a quantifier on something that already holds a quantifier or an "
                          "alternation can backtrack exponentially (write (a|b)* as [ab]*)", at)
            node = ("repeat", node, low, high)
        return node

    def integer(self):
        start = self.pos
        while self.peek("0123456789"):
            self.pos += 1
        if start == self.pos:
            self.fail("integer expected")
        if self.pos - start > 4 or int(self.s[start:self.pos]) > MAX_REPEAT:
            self.fail(f"repetition counts go up to {MAX_REPEAT}", start)
        return int(self.s[start:self.pos])

    def compl(self):
        if self.peek("~"):
            self.fail("'~' (complement) is not supported; escape it as \\~ to match '~'")
        return self.char_class()

    def char_class(self):
        if not self.match("["):
            return self.simple()
        negated = self.match("^")
        ranges = []
        while True:
            if self.match("\\"):
                if self.peek("\\") or self.peek(_ASCII_LETTERS):
                    ranges.extend(self.predefined())
                else:
                    c = self.next()
                    if self.peek("-"):
                        self.fail("an escaped character cannot start a range in a class "
                                  "(Lucene versions read it differently)")
                    ranges.append((ord(c), ord(c)))
            else:
                low = self.char_exp()
                if self.match("-"):
                    at = self.pos
                    high = self.char_exp()
                    if low > high:
                        self.fail(f"bad range {chr(low)!r}-{chr(high)!r}", at)
                    ranges.append((low, high))
                else:
                    ranges.append((low, low))
            if not self.more() or self.peek("]"):
                break
        if not self.match("]"):
            self.fail("expected ']'")
        return ("class", tuple(ranges), negated)

    def predefined(self):
        """After a ``\\``: Lucene's ``expandPreDefined`` (the next character is a letter or ``\\``)."""
        c = self.next()
        if c == "\\":
            return ((ord(c), ord(c)),)
        if c in _PREDEFINED:
            return _PREDEFINED[c]
        self.fail(f"'\\{c}' is not a known escape (Lucene knows \\d \\D \\s \\S \\w \\W)", self.pos - 2)

    def char_exp(self):
        self.match("\\")
        return ord(self.next())

    def simple(self):
        at = self.pos
        if self.match("."):
            return ("any",)
        if self.peek("#@<"):
            c = self.s[self.pos]
            what = {"#": "the empty language", "@": "any string", "<": "an interval or automaton"}[c]
            self.fail(f"{c!r} ({what}) is not supported; escape it as \\{c} to match {c!r}")
        if self.match('"'):
            start = self.pos
            while self.more() and not self.peek('"'):
                self.pos += 1
            if not self.match('"'):
                self.fail("expected '\"'", at)
            return ("string", self.s[start:self.pos - 1])
        if self.match("("):
            if self.match(")"):
                return ("string", "")
            self.depth += 1
            if self.depth > MAX_DEPTH:
                self.fail(f"groups nest at most {MAX_DEPTH} deep", at)
            node = self.union()
            if not self.match(")"):
                self.fail("expected ')'")
            self.depth -= 1
            return node
        if self.match("\\"):
            if self.peek("\\") or self.peek(_ASCII_LETTERS):
                return ("class", self.predefined(), False)
            return ("char", self.next())
        return ("char", self.next())


def _holds_quantifier_or_union(node):
    kind = node[0]
    if kind in ("repeat", "union"):
        return True
    if kind == "concat":
        return any(_holds_quantifier_or_union(child) for child in node[1])
    return False


def _work(node):
    """The backtracking budget a node uses (see the module docstring)."""
    kind = node[0]
    if kind == "concat":
        total = 1
        for child in node[1]:
            total *= _work(child)
        return total
    if kind == "union":
        return sum(_work(child) for child in node[1])
    if kind == "repeat":
        _, child, low, high = node
        if high is None:
            return _UNBOUNDED_FACTOR
        return high - low + 1
    return 1


def _free_tail(node):
    """Whether ``node`` is ``.*`` or ``.+``: once reached at the end of the pattern, it matches
    whatever is left or fails at once, so it never makes the matcher backtrack."""
    return node[0] == "repeat" and node[1] == ("any",) and node[3] is None


def _budget(tree):
    if tree[0] == "concat" and _free_tail(tree[1][-1]):
        tree = ("concat", tree[1][:-1])
    elif _free_tail(tree):
        return 1
    return _work(tree)


def _class_char(code):
    return re.escape(chr(code))


def _emit(node):
    kind = node[0]
    if kind == "char":
        return re.escape(node[1])
    if kind == "string":
        return re.escape(node[1])
    if kind == "any":
        return "."
    if kind == "class":
        _, ranges, negated = node
        body = "".join(_class_char(low) if low == high else f"{_class_char(low)}-{_class_char(high)}"
                       for low, high in ranges)
        return "[" + ("^" if negated else "") + body + "]"
    if kind == "concat":
        return "".join(_emit(child) if child[0] != "union" else f"(?:{_emit(child)})"
                       for child in node[1])
    if kind == "union":
        return "|".join(_emit(child) for child in node[1])
    _, child, low, high = node
    inner = _emit(child)
    if not (child[0] in ("char", "any", "class") or (child[0] == "string" and len(child[1]) == 1)):
        inner = f"(?:{inner})"
    if (low, high) == (0, 1):
        quantifier = "?"
    elif (low, high) == (0, None):
        quantifier = "*"
    elif (low, high) == (1, None):
        quantifier = "+"
    elif high is None:
        quantifier = f"{{{low},}}"
    elif low == high:
        quantifier = f"{{{low}}}"
    else:
        quantifier = f"{{{low},{high}}}"
    return inner + quantifier


def translate(lucene):
    """The Python pattern (for ``re.fullmatch(..., re.DOTALL)``) of the Lucene regexp ``lucene``.

    Raises :class:`RegexError` for what the module docstring lists as refused or for what
    Lucene itself cannot parse.
    """
    if len(lucene) > MAX_PATTERN_LENGTH:
        raise RegexError(f"the pattern is longer than {MAX_PATTERN_LENGTH} characters")
    tree = _Parser(lucene).parse()
    if _budget(tree) > MAX_WORK:
        raise RegexError("the pattern has too many quantifiers to run safely "
                         "(about two unbounded ones fit, besides a final .*)")
    pattern = _emit(tree)
    # The emitted pattern is built from escaped characters, so it always compiles; compiling here
    # keeps that promise checked rather than assumed.
    re.compile(pattern, re.DOTALL)
    return "(?:" + pattern + ")" if tree[0] == "union" else pattern
