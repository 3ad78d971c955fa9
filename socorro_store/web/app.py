"""The Flask application: routes on crash-stats' URL scheme, read-only, escaped, same-origin only.

Pages render Jinja2 templates with autoescaping on (every value from a crash report is text, never
markup); ``/api/…`` returns the same dicts as JSON (:mod:`.pages`, :mod:`.report_page`), with or
without a trailing slash.  Only GET (and HEAD) exist: POST, PUT, DELETE and PATCH answer 405.
Every response carries a Content-Security-Policy that allows the page's own origin and nothing
else (no script at all, no inline style), and the usual ``nosniff`` / ``no-referrer`` /
no-framing headers.  Store errors map to status codes: bad input 400, not found 404, store
unavailable 503.

A time limit (``request_timeout``): each request's reads run on a bounded pool of reader threads
and the request waits at most that long for them; past it the answer is 503 (the store is
slow), and the reads still running finish in the background (a thread cannot be stopped), their
result dropped.  Reads not started by then are cancelled, so a slow store never queues more
work than the pool holds.
"""

import concurrent.futures
from datetime import datetime, timezone

from flask import Flask, Response, abort, jsonify, redirect, render_template, request, url_for

from ..errors import BackendUnavailable, CrashIDNotFound, InvalidArgument, NotFound, SocorroStoreError
from ..schema import labels
from . import display, pages, report_page, search_page
from .public_fields import PublicFields

CSP = ("default-src 'self'; script-src 'none'; style-src 'self'; img-src 'self' data:; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'")
SECURITY_HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
                    "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"}
DEFAULT_READERS = 8


def _status_of(exc):
    if isinstance(exc, InvalidArgument):
        return 400
    if isinstance(exc, (CrashIDNotFound, NotFound)):
        return 404
    if isinstance(exc, BackendUnavailable):
        return 503
    return 500


class Readers:
    """Runs a request's reads, within ``timeout`` seconds when one is set (see the module
    docstring); ``readers`` threads at most."""

    def __init__(self, timeout=None, readers=DEFAULT_READERS):
        if timeout is not None and not timeout > 0:
            raise InvalidArgument(f"the request time limit must be positive seconds, not {timeout!r}")
        self.timeout = timeout
        self._pool = (concurrent.futures.ThreadPoolExecutor(max_workers=readers, thread_name_prefix="web-reads")
                      if timeout is not None else None)

    def run(self, build):
        if self._pool is None:
            return build()
        future = self._pool.submit(build)
        try:
            return future.result(self.timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()  # not started yet: never started; running: left to finish, unread
            raise BackendUnavailable(f"the store did not answer within {self.timeout:g} s (try again)") from None

    def close(self):
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


def create_app(store, unredacted=False, now=None, public_fields=None, request_timeout=None,
               readers=DEFAULT_READERS):
    """A Flask (WSGI) app showing ``store`` read-only.

    ``unredacted``: show every field of a crash (not only the allowlist's), and dump downloads
    (as Socorro did for privileged users).  ``public_fields``: the allowlist, a
    :class:`~.public_fields.PublicFields` or the path of its JSON file (default: the package's).
    ``request_timeout``: seconds a request waits for the store before answering 503 (None: no
    limit); ``readers``: threads reading for requests under that limit.  ``now``: a callable
    returning the current UTC time (tests pin the clock); default the wall clock.
    """
    app = Flask(__name__)
    app.json.sort_keys = False  # the dicts' own order (rank order, oldest hour first)
    app.jinja_env.filters["present"] = lambda filters: {k: v for k, v in filters.items() if v}
    app.jinja_env.filters["when"] = display.when
    app.jinja_env.filters["yes_no"] = display.yes_no
    app.jinja_env.filters["label"] = labels.label  # markers in words; links and filters keep the stored name
    app.jinja_env.globals["process_types"] = pages.PROCESS_TYPE_CHOICES  # the top-crashers filter's choices
    allowlist = public_fields if isinstance(public_fields, PublicFields) else PublicFields.load(public_fields)
    hidden = () if unredacted else tuple(name for name, field in pages.LIST_FIELDS.items()
                                         if not allowlist.allows("processed_crash", field))
    reads = Readers(request_timeout, readers)
    app.extensions["socorro_store.readers"] = reads
    clock = now or (lambda: datetime.now(timezone.utc))
    search_figures = search_page.StatusCache(store)  # the footers' search lag, shared by requests
    derivation_figures = search_page.StatusCache(store, read=search_page.derivation_status)  # the counters' lag

    def data(build):
        """The page's data, built on the reader threads: the query's arguments and the clock are
        read here, in the request."""
        return reads.run(build)

    def page(template, build):
        return render_template(template, data=data(build), unredacted=unredacted)

    @app.after_request
    def secure(response):
        response.headers.update(SECURITY_HEADERS)
        return response

    @app.errorhandler(SocorroStoreError)
    def store_error(exc):
        status = _status_of(exc)
        if request.path.startswith("/api/") or request.path == "/healthz":
            return jsonify({"error": str(exc)}), status
        return render_template("error.html", status=status, message=str(exc)), status

    @app.errorhandler(404)
    @app.errorhandler(405)
    def http_error(exc):
        allow = {"Allow": ", ".join(exc.valid_methods)} if getattr(exc, "valid_methods", None) else {}
        if request.path.startswith("/api/"):
            return jsonify({"error": exc.description}), exc.code, allow
        return render_template("error.html", status=exc.code, message=exc.description), exc.code, allow

    @app.get("/")
    def home():
        moment = clock()
        return page("home.html", lambda: {**pages.home(store, moment), "search_status": search_figures.get(),
                                          "derivation_status": derivation_figures.get()})

    @app.get("/topcrashers/")
    def top_crashers():
        args, moment = request.args.copy(), clock()
        return page("topcrashers.html", lambda: pages.top_crashers(store, args, moment))

    @app.get("/signature/")
    def signature():
        args, moment = request.args.copy(), clock()
        return page("signature.html", lambda: pages.signature(store, args, moment, hidden))

    @app.get("/report/index/<path:crash_id>")
    def report(crash_id):
        return page("report.html", lambda: report_page.report(store, crash_id, allowlist, unredacted))

    @app.get("/report/dump/<crash_id>/<name>")
    def dump(crash_id, name):
        if not unredacted:
            abort(404, "dumps are served only with --unredacted")
        crash_id = pages.crash_id_of(crash_id)
        content = data(lambda: store.get_raw_dump(crash_id, name))
        return Response(content, mimetype="application/octet-stream",
                        headers={"Content-Disposition": f'attachment; filename="{crash_id}.dmp"'})

    def to_search_page(pairs):
        query = search_page.query_string(pairs)
        return redirect(url_for("super_search_page") + ("?" + query if query else ""), 302)

    @app.get("/search")
    def search():
        """The header's box: a pasted crash id goes to its report; Super Search is at /search/."""
        if "q" not in request.args:
            return to_search_page(list(request.args.items(multi=True)))
        crash_id = pages.crash_id_of(request.args.get("q", ""))
        return redirect(url_for("report", crash_id=crash_id), 302)

    @app.get("/search/")
    def super_search_page():
        pairs, moment = list(request.args.items(multi=True)), clock()
        if request.args.get("q"):
            try:
                return redirect(url_for("report", crash_id=pages.crash_id_of(request.args["q"])), 302)
            except InvalidArgument:
                pass  # not a crash id: a parameter the search refuses by name (400)
        if search_page.is_form_submission(pairs):
            try:
                return to_search_page(search_page.canonical(pairs))
            except SocorroStoreError as exc:
                found, status = search_page.refused(pairs, unredacted, exc)
        else:
            found, status = data(lambda: search_page.page(store, pairs, unredacted, moment, search_figures.get))
        return render_template("search.html", data=found, unredacted=unredacted), status

    @app.get("/api/SuperSearch/", strict_slashes=False)
    def api_super_search():
        params, moment = request.args.to_dict(flat=False), clock()
        answer, status = data(lambda: search_page.api(store, params, unredacted, moment))
        return jsonify(answer), status

    @app.get("/api/SuperSearchFields/", strict_slashes=False)
    def api_super_search_fields():
        answer, status = data(lambda: search_page.fields_api(store, unredacted))
        return jsonify(answer), status

    @app.get("/api/topcrashers", strict_slashes=False)
    def api_top_crashers():
        args, moment = request.args.copy(), clock()
        return jsonify(data(lambda: pages.top_crashers(store, args, moment)))

    @app.get("/api/signature", strict_slashes=False)
    def api_signature():
        args, moment = request.args.copy(), clock()
        found = data(lambda: pages.signature(store, args, moment, hidden))
        return jsonify({k: v for k, v in found.items() if not k.endswith("_chart")})

    @app.get("/api/report/<path:crash_id>")
    def api_report(crash_id):
        crash_id = crash_id[:-1] if crash_id.endswith("/") else crash_id  # /api/…/ as /api/…
        return jsonify(data(lambda: report_page.report(store, crash_id, allowlist, unredacted)))

    @app.get("/api/queue", strict_slashes=False)
    def api_queue():
        return jsonify(data(store.queue_sizes))

    @app.get("/healthz")
    def healthz():
        try:
            data(store.backend.list_tables)
        except SocorroStoreError as exc:
            return jsonify({"ok": False, "error": str(exc)}), 503
        return jsonify({"ok": True})

    return app
