"""A reader for the block-style YAML that Socorro's schema files are written in (stdlib only).

The project takes no YAML dependency, and the schemas use a small part of YAML: block mappings
and sequences by indentation, plain and quoted scalars (multi-line plain ones too), flow
sequences of scalars (``["public", "protected"]``), folded and literal block scalars (``>``,
``|``) and comments.  Anything else (anchors, tags, flow mappings, multiple documents) is a
``ValueError`` naming the line, never a silent misreading: the public fields built from it must
be the schema's.
"""

import json
import re

_KEY = re.compile(r'^("(?:[^"\\]|\\.)*"|\'[^\']*\'|[^\s#\'"\-\[{][^#]*?|-[^\s][^#]*?):(?:\s+(.*))?$')
_UNSUPPORTED = re.compile(r"^[&*!{]")


def _strip_comment(text):
    """``text`` without a trailing `` # comment`` (outside quotes)."""
    quote = None
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'" and (i == 0 or text[i - 1] in " [,:"):
            quote = ch
        elif ch == "#" and (i == 0 or text[i - 1] in " \t"):
            return text[:i].rstrip()
    return text.rstrip()


def _scalar(text, where):
    text = text.strip()
    if not text:
        return None
    if _UNSUPPORTED.match(text):
        raise ValueError(f"{where}: unsupported YAML ({text[:30]!r})")
    if text.startswith('"'):
        return json.loads(text)
    if text.startswith("'"):
        return text[1:-1].replace("''", "'")
    if text.startswith("["):
        inner = text[1:-1].strip()
        if not text.endswith("]"):
            raise ValueError(f"{where}: unterminated flow sequence")
        return [_scalar(part, where) for part in _split_flow(inner)] if inner else []
    lowered = text.lower()
    if lowered in ("null", "~"):
        return None
    if lowered in ("true", "false"):
        return lowered == "true"
    if re.fullmatch(r"[-+]?\d+", text):
        return int(text)
    return text


def _split_flow(inner):
    parts, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(inner):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch == "," and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
    parts.append(inner[start:])
    return parts


class _Lines:
    def __init__(self, text, name):
        self.lines = text.split("\n")
        self.name = name
        self.i = 0
        self.started = False  # a "---" after the first node starts a second document

    def where(self, i=None):
        return f"{self.name}:{(self.i if i is None else i) + 1}"

    def peek(self):
        """``(indent, content)`` of the next meaningful line (comments and blanks skipped)."""
        while self.i < len(self.lines):
            raw = self.lines[self.i]
            content = _strip_comment(raw).strip()
            if content == "---" and not raw.startswith(" "):
                if self.started:
                    raise ValueError(f"{self.where()}: more than one YAML document")
            elif content:
                return len(raw) - len(raw.lstrip(" ")), content
            self.i += 1
        return None, None


def loads(text, name="<yaml>"):
    """The document in ``text`` (a mapping or sequence at the top)."""
    lines = _Lines(text, name)
    indent, _ = lines.peek()
    if indent is None:
        return None
    lines.started = True
    value = _block(lines, indent)
    if lines.peek()[0] is not None:
        raise ValueError(f"{lines.where()}: unexpected indentation")
    return value


def _block(lines, indent):
    _, content = lines.peek()
    if content.startswith("- ") or content == "-":
        return _sequence(lines, indent)
    return _mapping(lines, indent)


def _mapping(lines, indent):
    out = {}
    while True:
        at, content = lines.peek()
        if at is None or at < indent:
            return out
        if at > indent:
            raise ValueError(f"{lines.where()}: unexpected indentation")
        match = _KEY.match(content)
        if not match:
            raise ValueError(f"{lines.where()}: expected 'key: value', got {content[:40]!r}")
        key = _scalar(match.group(1), lines.where())
        key = key if isinstance(key, str) else match.group(1)
        if key in out:
            raise ValueError(f"{lines.where()}: duplicate key {key!r}")
        out[key] = _value(lines, at, match.group(2) or "")


def _sequence(lines, indent):
    out = []
    while True:
        at, content = lines.peek()
        if at is None or at < indent or not (content.startswith("- ") or content == "-"):
            return out
        if at > indent:
            raise ValueError(f"{lines.where()}: unexpected indentation")
        rest = content[1:].strip()
        if rest and _KEY.match(rest) and not rest.startswith(('"', "'")):
            # "- key: value": a mapping whose keys sit two columns in; read it from there
            offset = len(lines.lines[lines.i]) - len(lines.lines[lines.i].lstrip(" ")) + (len(content) - len(rest))
            lines.lines[lines.i] = " " * offset + rest
            out.append(_mapping(lines, offset))
        else:
            out.append(_value(lines, at, rest, in_sequence=True))


def _value(lines, indent, rest, in_sequence=False):
    """The value after ``key:`` (or ``-``) at column ``indent``; ``rest`` is the line's remainder."""
    start = lines.i
    lines.i += 1
    if rest[:1] in (">", "|") and re.fullmatch(r"[>|][-+]?", rest):
        return _block_scalar(lines, indent, rest)
    if rest:
        text = rest
        # a plain scalar goes on over more-indented lines (folded with spaces)
        while not rest.startswith(('"', "'", "[")):
            at, content = lines.peek()
            if at is None or at <= indent:
                break
            text += " " + content
            lines.i += 1
        if not rest.startswith(('"', "'", "[")) and re.search(r":(\s|$)", text):
            raise ValueError(f"{lines.where(start)}: a mapping inside a plain scalar ({text[:40]!r})")
        return _scalar(text, lines.where(start))
    at, content = lines.peek()
    if at is None or at < indent or (at == indent and not (content.startswith("- ") and not in_sequence)):
        return None
    if at == indent:  # "key:" then "- item" at the key's own column
        return _sequence(lines, indent)
    if content.startswith("- ") or content == "-" or _KEY.match(content):
        return _block(lines, at)
    text = []  # a plain scalar alone on the following lines
    while True:
        at, content = lines.peek()
        if at is None or at <= indent:
            return _scalar(" ".join(text), lines.where(start))
        text.append(content)
        lines.i += 1


def _block_scalar(lines, indent, style):
    body, width = [], None
    while lines.i < len(lines.lines):
        raw = lines.lines[lines.i]
        if raw.strip():
            at = len(raw) - len(raw.lstrip(" "))
            if at <= indent:
                break
            width = at if width is None else width
            body.append(raw[width:])
        else:
            body.append("")
        lines.i += 1
    while body and not body[-1]:
        body.pop()
    if style[0] == "|":
        text = "\n".join(body)
    else:  # folded: a line break is a space, n blank lines are n breaks, indented lines kept
        parts, blanks, previous = [], 0, ""
        for line in body:
            if not line:
                blanks += 1
                continue
            if parts:
                parts.append("\n" * blanks if blanks else
                             "\n" if line.startswith(" ") or previous.startswith(" ") else " ")
            parts.append(line)
            previous, blanks = line, 0
        text = "".join(parts)
    return text + ("\n" if style[-1:] != "-" and body else "")
