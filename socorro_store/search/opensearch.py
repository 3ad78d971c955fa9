"""The OpenSearch engine: Super Search on an OpenSearch cluster, through ``opensearch-py``.

``OpenSearchEngine(hosts, index=...)`` keeps one document per crash in one index (``_id`` is the
crash id), made on first use with :func:`.opensearch_query.index_body` (one shard, exact terms
facets); the query translation is in :mod:`.opensearch_query`.  ``opensearch://`` URLs
(:mod:`.engines`) name it::

    opensearch://[USER:PASSWORD@]HOST:PORT[,HOST:PORT...][?index=NAME&tls=1&refresh=true|wait_for]

* **Failover.**  Every host of the URL is in the client's pool: a request that cannot connect
  or times out is retried on the next host (``max_retries``), and a host that failed rests
  before it is tried again, as the multi-server HBase URL does.  When none answers, the call
  raises :class:`~socorro_store.errors.SearchUnavailable`; no client exception leaves this module.
* **Durability and freshness.**  ``index``/``delete`` are ``_bulk`` requests with
  ``refresh=true`` by default: on return the translog holds them (fsynced per request,
  OpenSearch's default) and a search sees them.  ``refresh=wait_for`` instead waits for the
  next periodic refresh (up to 1 s a call, fewer segments at high rates).
* **Exactness.**  Totals are exact (``track_total_hits``); terms facets are exact on one shard
  (an index of several says so in ``errors``); cardinality is exact up to 40,000 distinct values
  and an estimate above, which ``errors`` says.
* **Bad queries.**  A query OpenSearch refuses (a regular expression too complex to
  determinize, too many buckets) raises :class:`~socorro_store.errors.SearchParameterError`.
"""

import json
import logging
import threading

from ..errors import InvalidArgument, SearchParameterError, SearchUnavailable
from . import opensearch_query as q
from .contract import MAX_FACETS_SIZE, SearchEngine, empty_response
from .fields import FIELDS, check_document

log = logging.getLogger(__name__)

DEFAULT_INDEX = "socorro_search"
#: documents a ``_bulk`` request carries
BULK_DOCUMENTS = 1000
#: ids a ``crash_ids`` page reads
ID_PAGE = 5000


class OpenSearchEngine(SearchEngine):
    """Super Search on OpenSearch (see the module docstring).

    ``hosts``: ``["host:port", ...]``.  ``index``: the index name.  ``shards``/``replicas``:
    of the index when this engine creates it (``replicas`` default: 0 on one host, 1 on more).
    """

    def __init__(self, hosts, index=DEFAULT_INDEX, username=None, password=None, tls=False,
                 refresh="true", timeout=30.0, max_retries=3, shards=1, replicas=None):
        try:
            from opensearchpy import OpenSearch
        except ImportError:  # pragma: no cover - an optional dependency
            raise SearchUnavailable("the OpenSearch engine needs opensearch-py: pip install "
                                    "'socorro-store[search]'") from None
        if isinstance(hosts, str):
            hosts = [hosts]
        self.hosts = [_host(h) for h in hosts]
        if not self.hosts:
            raise InvalidArgument("OpenSearch needs at least one host")
        if refresh not in ("true", "wait_for"):
            raise InvalidArgument(f"refresh must be true or wait_for, not {refresh!r}")
        self.index_name, self.refresh = index, refresh
        self.shards = shards
        self.replicas = (0 if len(self.hosts) == 1 else 1) if replicas is None else replicas
        self.url = ("opensearch://" + ",".join(f"{h}:{p}" for h, p in self.hosts)
                    + f"?index={index}" + ("&tls=1" if tls else ""))
        self._client = OpenSearch(
            hosts=[{"host": h, "port": p} for h, p in self.hosts],
            http_auth=(username, password) if username is not None else None,
            use_ssl=tls, verify_certs=tls, timeout=timeout, max_retries=max_retries,
            retry_on_timeout=True, http_compress=False)
        self._ready = False
        self._lock = threading.Lock()
        #: how long the first call waits for the index's shards to start
        self.ready_seconds = 30

    # --- the index -----------------------------------------------------------------------

    def _ensure_index(self):
        if self._ready:
            return
        with self._lock:
            if self._ready:
                return
            mapping = self._call(self._client.indices.get_mapping, index=self.index_name, ignore=404)
            if "error" in mapping or not mapping:
                body = q.index_body(self.shards, self.replicas)
                made = self._call(self._client.indices.create, index=self.index_name, body=body, ignore=400)
                if "error" in made and made["error"].get("type") != "resource_already_exists_exception":
                    raise SearchUnavailable(f"OpenSearch {self.url}: cannot create the index: {_reason(made)}")
                mapping = self._call(self._client.indices.get_mapping, index=self.index_name)
            # a search on an index whose shard is still starting fails (503, "all shards failed"):
            # another process may have made it a moment ago
            health = self._call(self._client.cluster.health, index=self.index_name, wait_for_status="yellow",
                                params={"timeout": f"{self.ready_seconds:g}s"},
                                request_timeout=self.ready_seconds + 10, ignore=408)
            if health.get("timed_out") or health.get("status") not in ("yellow", "green"):
                raise SearchUnavailable(f"OpenSearch {self.url}: the index is not ready ({health.get('status')})")
            # the name may be an alias (a reindex moves it): every index behind it must be ours
            versions = {(held["mappings"].get("_meta") or {}).get("socorro_search_mapping")
                        for held in mapping.values()}
            version = versions.pop() if len(versions) == 1 else sorted(map(str, versions))
            if version != q.MAPPING_VERSION:
                raise SearchUnavailable(
                    f"OpenSearch index {self.index_name} has mapping version {version}, this engine writes "
                    f"{q.MAPPING_VERSION}: reindex into a new index (docs/search.md, OpenSearch)")
            self._ready = True

    def drop_index(self):
        """Delete the whole index (tests, and reindexing into a fresh one)."""
        self._call(self._client.indices.delete, index=self.index_name, ignore=404)
        self._ready = False

    # --- writes --------------------------------------------------------------------------

    def index(self, documents):
        """Add or replace ``documents``; a document that is not a :func:`~.fields.document_of`
        dict raises :class:`~socorro_store.errors.InvalidArgument` and nothing is written."""
        docs = [q.source_of(check_document(doc)) for doc in documents]
        if not docs:
            return
        self._ensure_index()
        for start in range(0, len(docs), BULK_DOCUMENTS):
            lines = []
            for doc in docs[start:start + BULK_DOCUMENTS]:
                lines.append(json.dumps({"index": {"_index": self.index_name, "_id": doc["uuid"]}}))
                lines.append(json.dumps(doc))
            self._bulk(lines)

    def delete(self, crash_ids):
        ids = [crash_ids] if isinstance(crash_ids, str) else list(crash_ids)
        if not ids:
            return
        self._ensure_index()
        for start in range(0, len(ids), BULK_DOCUMENTS):
            self._bulk([json.dumps({"delete": {"_index": self.index_name, "_id": cid}})
                        for cid in ids[start:start + BULK_DOCUMENTS]])

    def _bulk(self, lines):
        body = "\n".join(lines) + "\n"
        reply = self._call(self._client.bulk, body=body, refresh=self.refresh)
        if not reply.get("errors"):
            return
        failed = [item for entry in reply["items"] for item in entry.values()
                  if item.get("status", 200) >= 300 and not (item.get("status") == 404 and "error" not in item)]
        if not failed:
            return
        first = failed[0]
        if all(400 <= item["status"] < 500 and item["status"] != 429 for item in failed):
            raise InvalidArgument(f"OpenSearch refused {len(failed)} document(s), e.g. {first.get('_id')}: "
                                  f"{_reason(first)}")
        raise SearchUnavailable(f"OpenSearch {self.url}: {len(failed)} document(s) not written: {_reason(first)}")

    # --- reads ---------------------------------------------------------------------------

    def count(self):
        self._ensure_index()
        return self._call(self._client.count, index=self.index_name)["count"]

    def stats(self):
        """``{"documents": N, "bytes": B}``: B is the primary shards' store size."""
        self._ensure_index()
        reply = self._call(self._client.indices.stats, index=self.index_name, metric="store")
        size = sum(held["primaries"]["store"]["size_in_bytes"] for held in reply["indices"].values())
        return {"documents": self.count(), "bytes": size}

    def crash_ids(self, start=None, end=None):
        self._ensure_index()
        bounds = {}
        if start is not None:
            bounds.update(q._range_bound(FIELDS["date"], ">=", start))
        if end is not None:
            bounds.update(q._range_bound(FIELDS["date"], "<", end))
        query = {"range": {"date": bounds}} if bounds else {"match_all": {}}
        after = None
        while True:
            body = {"query": query, "size": ID_PAGE, "sort": [{"uuid": "asc"}], "_source": False,
                    "track_total_hits": False}
            if after is not None:
                body["search_after"] = after
            hits = self._call(self._client.search, index=self.index_name, body=body)["hits"]["hits"]
            for hit in hits:
                yield hit["_id"]
            if len(hits) < ID_PAGE:
                return
            after = hits[-1]["sort"]

    def search(self, query):
        if not 0 <= query.facets_size <= MAX_FACETS_SIZE:
            raise SearchParameterError("_facets_size", f"must be 0 to {MAX_FACETS_SIZE}")
        if query.results_number < 0 or query.results_offset < 0:
            raise SearchParameterError("_results_number", "must not be negative")
        for name in query.fields_used():
            if name not in FIELDS:
                raise SearchParameterError("_columns", f"{name}: no such field")
        self._ensure_index()
        body = {
            "query": q.query_dsl(query.filters),
            "track_total_hits": True,
            "sort": q.sort_dsl(query.sort),
            "from": query.results_offset,
            "size": query.results_number,
            "_source": {"includes": list(query.columns) + (["date_raw"] if "date" in query.columns else [])},
        }
        aggs = q.aggs_dsl(query.facets, query.facets_size)
        if aggs:
            body["aggs"] = aggs
        if query.results_offset + query.results_number > 10_000:
            body["size"] = max(0, 10_000 - query.results_offset)
        regex_fields = sorted({f.field for f in query.filters if any(c.operator == "@" for c in f.conditions)})
        reply = self._call(self._client.search, index=self.index_name, body=body,
                           searching=regex_fields[0] if len(regex_fields) == 1 else "query")
        response = empty_response()
        response["total"] = reply["hits"]["total"]["value"]
        response["hits"] = [q.hit_of(query.columns, hit.get("_source", {})) for hit in reply["hits"]["hits"]]
        response["facets"] = q.facets_of(query.facets, reply.get("aggregations"), response["errors"])
        return response

    def close(self):
        try:
            self._client.close()
        except Exception:  # noqa: BLE001 - closing sockets: nothing left to report to
            pass

    # --- errors --------------------------------------------------------------------------

    def _call(self, method, searching=None, **kwargs):
        """``method(**kwargs)`` with every client failure mapped to the store's errors; with
        ``searching`` (the parameter an ``@`` pattern came from, else "query"), a query OpenSearch
        refuses is a SearchParameterError."""
        from opensearchpy import exceptions as os_errors

        try:
            return method(**kwargs)
        except os_errors.ConnectionError as exc:  # also ConnectionTimeout: every host was tried
            raise SearchUnavailable(f"OpenSearch {self.url} unreachable: {_short(exc)}") from None
        except (os_errors.AuthenticationException, os_errors.AuthorizationException) as exc:
            raise SearchUnavailable(f"OpenSearch {self.url} refused the credentials: {_short(exc)}") from None
        except os_errors.TransportError as exc:
            if searching and "too_many" in _reason(exc.info) and "clauses" in _reason(exc.info):
                raise SearchParameterError("query", "too many conditions for OpenSearch (Lucene's limit "
                                                    "is 1,024 clauses in a query)") from None
            if searching and "too_many_buckets" in _reason(exc.info):
                raise SearchParameterError("query", f"too expensive: {_reason(exc.info)}") from None
            if searching and "Determinizing" in _reason(exc.info):
                raise SearchParameterError(searching, "regular expression too complex for OpenSearch (its "
                                                      "automaton would pass 10,000 states)") from None
            if searching and exc.status_code == 400:
                raise SearchParameterError("query", f"OpenSearch refused it: {_reason(exc.info)}") from None
            raise SearchUnavailable(f"OpenSearch {self.url}: {exc.status_code} {_reason(exc.info)}") from None
        except os_errors.OpenSearchException as exc:
            raise SearchUnavailable(f"OpenSearch {self.url}: {_short(exc)}") from None


def _host(text):
    if isinstance(text, (tuple, list)):
        host, port = text
    else:
        host, sep, port = str(text).strip().rpartition(":")
        if not sep:
            host, port = port, 9200
    try:
        port = int(port)
    except ValueError:
        raise InvalidArgument(f"OpenSearch host {text!r}: the port must be a number") from None
    if not host or not 0 < port < 65536:
        raise InvalidArgument(f"OpenSearch host {text!r}: expected HOST:PORT")
    return host.strip("[]"), port


def _short(exc):
    return str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__


def _reason(info):
    """The most specific reason in an OpenSearch error body (a dict, or a string)."""
    if not isinstance(info, dict):
        return str(info)[:300]
    error = info.get("error", info)
    if not isinstance(error, dict):
        return str(error)[:300]
    causes = error.get("root_cause") or []
    cause = causes[0] if causes and isinstance(causes[0], dict) else error
    if error.get("caused_by") and not causes:
        cause = error["caused_by"]
    return f"{cause.get('type', '')}: {cause.get('reason', '')}"[:300]
