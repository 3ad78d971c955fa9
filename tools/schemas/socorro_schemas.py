"""Socorro's crash schemas, reduced to their facts, and what they make public.

Socorro's ``raw_crash.schema.yaml`` and ``processed_crash.schema.yaml`` give every field a type
and permissions (``["public"]``, or ``["protected"]``, or the file's ``default_permissions``
when a field names none).  crash-stats shows a user without protected data access the document
reduced by those permissions: a field is shown when it and every object above it are public, an
object or list is kept only when something public is left in it, and a key the schema does not
name is never shown.  This module restates those rules (it copies no Socorro code) over a
**skeleton** of a schema: the field names, types, permissions and structure, without the
descriptions, reviews and examples (which stay out of this repository).

- :func:`skeleton`: a schema (parsed YAML) stripped to its facts;
- :func:`public_paths`: the dotted paths of ``web/public_fields.json`` for one skeleton
  (``*`` is Socorro's ``^.+$`` pattern: any key);
- :func:`full_document`: a document filling every field of a skeleton;
- :func:`reduce_public`: a document as crash-stats shows it publicly;
- :func:`leaves`: the values of a document, by path, to count and compare.
"""

import copy

KEPT = ("type", "permissions", "properties", "pattern_properties", "items", "$ref")
ANY_KEY = "^.+$"  # the one pattern the schemas use: any key
WILDCARD = "*"
PUBLIC = frozenset(["public"])


def skeleton(schema):
    """``schema`` with only its structure, types and permissions (no descriptions)."""
    def strip(node):
        if not isinstance(node, dict):
            return node
        out = {}
        for key in KEPT:
            if key not in node:
                continue
            value = node[key]
            if key in ("properties", "pattern_properties"):
                value = {name: strip(child) for name, child in value.items()}
            elif key == "items":
                value = strip(value)
            out[key] = value
        return out

    out = strip(schema)
    out["default_permissions"] = schema["default_permissions"]
    if "definitions" in schema:
        out["definitions"] = {name: strip(node) for name, node in schema["definitions"].items()}
    return out


def resolve(schema):
    """``schema`` with every ``$ref`` replaced by its definition (the referring node's own keys
    win over the definition's), without ``definitions``."""
    definitions = schema.get("definitions", {})

    def walk(node):
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            ref = node["$ref"]
            if not ref.startswith("#/definitions/") or ref.split("/")[-1] not in definitions:
                raise ValueError(f"unknown $ref {ref!r}")
            merged = copy.deepcopy(definitions[ref.split("/")[-1]])
            merged.update({k: v for k, v in node.items() if k != "$ref"})
            node = merged
        out = dict(node)
        for key in ("properties", "pattern_properties"):
            if key in out:
                out[key] = {name: walk(child) for name, child in out[key].items()}
        if "items" in out:
            out["items"] = walk(out["items"])
        return out

    out = walk({k: v for k, v in schema.items() if k != "definitions"})
    return out


def _types(node):
    found = node.get("type")
    if found is None:
        raise ValueError(f"a schema node without a type: {sorted(node)}")
    return [found] if isinstance(found, str) else list(found)


def _is_public(node, default):
    return frozenset(node.get("permissions") or default) <= PUBLIC


def _children(node):
    """``(name, child)`` of an object node: its properties, then ``*`` for its pattern."""
    yield from (node.get("properties") or {}).items()
    for pattern, child in (node.get("pattern_properties") or {}).items():
        if pattern != ANY_KEY:
            raise ValueError(f"pattern {pattern!r}: only {ANY_KEY!r} (any key) is supported")
        yield WILDCARD, child


def public_schema(schema):
    """``schema`` resolved and pruned to what a user without protected access sees: every node
    that is not public goes, and so does every object or list left with nothing public in it.
    None when nothing is public."""
    default = schema["default_permissions"]

    def prune(node, top=False):
        if not top and not _is_public(node, default):
            return None
        types = _types(node)
        out = dict(node)
        if "any" in types:
            return out
        if "object" in types:
            for key in ("properties", "pattern_properties"):
                kept = {name: prune(child) for name, child in (node.get(key) or {}).items()}
                out[key] = {name: child for name, child in kept.items() if child is not None}
            return out if out["properties"] or out["pattern_properties"] else None
        if "array" in types and "items" in node:
            out["items"] = prune(node["items"])
            return out if out["items"] is not None else None
        return out

    return prune(resolve(schema), top=True)


def public_paths(schema):
    """The dotted paths crash-stats shows publicly, for ``schema`` (a parsed schema or its
    skeleton): each path ends at a public value (a scalar, an ``any``, a list of scalars)."""
    paths = []

    def walk(node, path):
        types = _types(node)
        if "object" in types and "any" not in types:
            for name, child in _children(node):
                walk(child, f"{path}.{name}" if path else name)
        elif "array" in types and "items" in node and "any" not in types:
            walk(node["items"], path)
        else:
            paths.append(path)

    walk(public_schema(schema) or {"type": "object"}, "")
    return sorted(set(paths), key=lambda p: (p.lower(), p))


def full_document(schema, fill=None):
    """A document with every field of ``schema`` filled: each object with all its properties
    and one key for its pattern, each list with two items, each scalar with a distinct value of
    its type.  ``fill(path, types)`` may return a value for a path (``None``: the default)."""
    counter = [0]

    def value(types, path):
        counter[0] += 1
        n = counter[0]
        for kind in types:
            if kind == "string":
                return f"v{n}"
            if kind == "integer":
                return n
            if kind == "number":
                return n + 0.5
            if kind == "boolean":
                return n % 2 == 0
        return f"any{n}"  # "any" or only "null"

    def walk(node, path):
        types = _types(node)
        chosen = fill(path, types) if fill else None
        if chosen is not None:
            return chosen
        if "object" in types:
            out = {}
            for name, child in _children(node):
                key = "key1" if name == WILDCARD else name
                out[key] = walk(child, f"{path}.{key}" if path else key)
            return out
        if "array" in types:
            item = node.get("items") or {"type": "string"}
            return [walk(item, f"{path}.{i}") for i in range(2)]
        return value(types, path)

    return walk(resolve(schema), "")


def reduce_public(document, schema):
    """``document`` as crash-stats shows it to a user without protected access: traversed along
    :func:`public_schema`, keeping what it names (the whole value of an ``any``)."""
    public = public_schema(schema)
    drop = object()

    def walk(node, value):
        types = _types(node)
        if "any" in types:
            return copy.deepcopy(value)
        if isinstance(value, dict):
            if "object" not in types:
                return drop
            named, pattern = node.get("properties") or {}, (node.get("pattern_properties") or {}).get(ANY_KEY)
            out = {}
            for key, item in value.items():
                child = named.get(key, pattern)
                kept = drop if child is None else walk(child, item)
                if kept is not drop:
                    out[key] = kept
            return out
        if isinstance(value, list):
            if "array" not in types:
                return drop
            return [item for item in (walk(node["items"], v) for v in value) if item is not drop] \
                if "items" in node else copy.deepcopy(value)
        return value

    out = walk(public, document) if public is not None and isinstance(document, dict) else {}
    return out if isinstance(out, dict) else {}


def leaves(document, prefix=""):
    """``{path: value}`` of every scalar in ``document`` (list items by index: ``a.0.b``)."""
    out = {}
    if isinstance(document, dict):
        items = document.items()
    elif isinstance(document, list):
        items = enumerate(document)
    else:
        return {prefix: document}
    for key, item in items:
        out.update(leaves(item, f"{prefix}.{key}" if prefix else str(key)))
    return out
