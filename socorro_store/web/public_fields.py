"""Which fields of a crash the pages show without ``--unredacted``: an allowlist.

Socorro's schemas mark every raw annotation and processed field ``public`` or ``protected``, and
a field the schema does not list is not shown publicly at all.  ``public_fields.json`` (next to
this module) is that allowlist, modelled on those permissions: ``raw_crash`` names the public
annotations, ``processed_crash`` the public processed fields.  An operator replaces it with
``web --public-fields FILE`` (same format).

A name allows the whole value under it.  A dotted path allows one key inside an object and
nothing else of it: ``json_dump.modules.filename`` keeps each module's ``filename`` (lists are
stepped through: a path names the keys of the objects a list holds).  ``*`` stands for any key
(the schemas' ``^.+$`` pattern: ``telemetry_environment.addons.activeAddons.*.name`` keeps each
add-on's name, whatever its id); a key named exactly is matched first.  Where a path expects an
object but the stored value is a scalar, the value is withheld: it is none of the keys allowed
(a null is kept, as crash-stats keeps it: the schemas let those objects be null).

The filter counts what it withholds (keys, once per path, not once per list item), so a page can
say that fields are left out without naming them: an annotation's name may itself be data.
"""

import json
from pathlib import Path

from ..errors import InvalidArgument

DEFAULT_FILE = Path(__file__).with_name("public_fields.json")
KINDS = ("raw_crash", "processed_crash")
ANY_KEY = "*"
_DROP = object()


def _tree(paths, kind, source):
    """``{key: True (all below) or {sub tree}}`` of a list of names and dotted paths."""
    if not isinstance(paths, list) or not all(isinstance(p, str) and p and not p.startswith(".") and
                                              not p.endswith(".") and ".." not in p for p in paths):
        raise InvalidArgument(f"{source}: {kind!r} must be a list of field names or dotted paths")
    tree = {}
    for path in sorted(paths, key=lambda p: p.count(".")):  # a whole field beats its sub-paths
        *parents, leaf = path.split(".")
        here = tree
        for part in parents:
            below = here.setdefault(part, {})
            if below is True:
                break  # already allowed whole
            here = below
        else:
            here[leaf] = True
    return tree


def _filter(value, tree, path, withheld):
    """``value`` with only the allowed keys of ``tree`` (``_DROP`` when nothing of it is)."""
    if tree is True or value is None:  # a null says nothing: crash-stats shows it where an object may be
        return value
    if isinstance(value, list):
        return [item for item in (_filter(v, tree, path, withheld) for v in value) if item is not _DROP]
    if not isinstance(value, dict):
        withheld.add(path)
        return _DROP
    out = {}
    for key, item in value.items():
        where = f"{path}.{key}" if path else str(key)
        below = tree.get(key, tree.get(ANY_KEY))
        if below is None:
            withheld.add(where)
            continue
        kept = _filter(item, below, where, withheld)
        if kept is not _DROP:
            out[key] = kept
    return out


class PublicFields:
    """The allowlist of one file (default: the package's ``public_fields.json``)."""

    def __init__(self, raw_crash, processed_crash, source="public_fields.json"):
        self.source = str(source)
        self.trees = {"raw_crash": _tree(raw_crash, "raw_crash", source),
                      "processed_crash": _tree(processed_crash, "processed_crash", source)}

    @classmethod
    def load(cls, path=None):
        """The allowlist in the JSON file at ``path`` (an object with ``raw_crash`` and
        ``processed_crash`` lists); a missing, unreadable or malformed file is InvalidArgument."""
        path = Path(path) if path is not None else DEFAULT_FILE
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InvalidArgument(f"cannot read the public fields file {path}: {exc}") from None
        if not isinstance(document, dict) or any(kind not in document for kind in KINDS):
            raise InvalidArgument(f"{path}: the public fields file is a JSON object with the lists "
                                  f"{' and '.join(KINDS)}")
        return cls(document["raw_crash"], document["processed_crash"], source=path)

    def public(self, kind, document):
        """``(the public part of document, number of withheld field paths)`` for ``kind``
        (``raw_crash`` or ``processed_crash``); a document that is not an object shows nothing."""
        withheld = set()
        kept = _filter(document, self.trees[kind], "", withheld)
        return (kept if isinstance(kept, dict) else {}), len(withheld)

    def allows(self, kind, path):
        """Whether every value at the dotted ``path`` of ``kind`` is public (wholly allowed)."""
        node = self.trees[kind]
        for part in path.split("."):
            node = node.get(part, node.get(ANY_KEY)) if isinstance(node, dict) else node
            if node is True:
                return True
            if node is None:
                return False
        return node is True
