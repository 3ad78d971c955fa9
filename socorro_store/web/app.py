"""The Flask application: routes on crash-stats' URL scheme, read-only, escaped, same-origin only.

Pages render Jinja2 templates with autoescaping on (every value from a crash report is text, never
markup); ``/api/…`` returns the same dicts as JSON (:mod:`.pages`).  Only GET (and HEAD) exist:
POST, PUT, DELETE and PATCH answer 405.  Every response carries a Content-Security-Policy that
allows the page's own origin and nothing else (no script at all, no inline style), and the
usual ``nosniff`` / ``no-referrer`` / no-framing headers.  Store errors map to status codes:
bad input 400, not found 404, store unavailable 503.
"""

from datetime import datetime, timezone

from flask import Flask, Response, abort, jsonify, redirect, render_template, request, url_for

from ..checks import is_loopback
from ..errors import BackendUnavailable, CrashIDNotFound, InvalidArgument, NotFound, SocorroStoreError
from . import pages

CSP = ("default-src 'self'; script-src 'none'; style-src 'self'; img-src 'self' data:; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'")
SECURITY_HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
                    "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"}


def _status_of(exc):
    if isinstance(exc, InvalidArgument):
        return 400
    if isinstance(exc, (CrashIDNotFound, NotFound)):
        return 404
    if isinstance(exc, BackendUnavailable):
        return 503
    return 500


def create_app(store, unredacted=False, now=None):
    """A Flask (WSGI) app showing ``store`` read-only.

    ``unredacted``: show processed crashes unredacted, every raw annotation, and dump downloads
    (as Socorro did for privileged users).  ``now``: a callable returning the current UTC time
    (tests pin the clock); default the wall clock.
    """
    app = Flask(__name__)
    app.json.sort_keys = False  # the dicts' own order (rank order, oldest hour first)
    app.jinja_env.filters["present"] = lambda filters: {k: v for k, v in filters.items() if v}
    clock = now or (lambda: datetime.now(timezone.utc))

    def page(template, build):
        return render_template(template, data=build(), unredacted=unredacted)

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
        return page("home.html", lambda: pages.home(store, clock()))

    @app.get("/topcrashers/")
    def top_crashers():
        return page("topcrashers.html", lambda: pages.top_crashers(store, request.args, clock()))

    @app.get("/signature/")
    def signature():
        return page("signature.html", lambda: pages.signature(store, request.args, clock()))

    @app.get("/report/index/<path:crash_id>")
    def report(crash_id):
        return page("report.html", lambda: pages.report(store, crash_id, unredacted))

    @app.get("/report/dump/<crash_id>/<name>")
    def dump(crash_id, name):
        if not unredacted:
            abort(404, "dumps are served only with --unredacted")
        data = store.get_raw_dump(pages.crash_id_of(crash_id), name)
        return Response(data, mimetype="application/octet-stream",
                        headers={"Content-Disposition": f'attachment; filename="{pages.crash_id_of(crash_id)}.dmp"'})

    @app.get("/search")
    def search():
        crash_id = pages.crash_id_of(request.args.get("q", ""))
        return redirect(url_for("report", crash_id=crash_id), 302)

    @app.get("/api/topcrashers")
    def api_top_crashers():
        return jsonify(pages.top_crashers(store, request.args, clock()))

    @app.get("/api/signature")
    def api_signature():
        data = pages.signature(store, request.args, clock())
        return jsonify({k: v for k, v in data.items() if not k.endswith("_chart")})

    @app.get("/api/report/<path:crash_id>")
    def api_report(crash_id):
        return jsonify(pages.report(store, crash_id, unredacted))

    @app.get("/api/queue")
    def api_queue():
        return jsonify(store.queue_sizes())

    @app.get("/healthz")
    def healthz():
        try:
            store.backend.list_tables()
        except SocorroStoreError as exc:
            return jsonify({"ok": False, "error": str(exc)}), 503
        return jsonify({"ok": True})

    return app


def check_web_address(host, allow_remote):
    """Refuse a non-loopback ``host`` unless ``allow_remote`` (InvalidArgument)."""
    if not allow_remote and not is_loopback(host):
        raise InvalidArgument(f"refusing to serve on non-loopback address {host!r}: the pages show crash "
                              "reports without authentication (pass --allow-remote)")


def make_web_server(store, host="127.0.0.1", port=8000, unredacted=False, allow_remote=False):
    """A threaded Werkzeug server of :func:`create_app` on ``host:port`` (0: a free port), bound
    and not yet serving: ``.server_port``, ``.serve_forever()``, ``.shutdown()``."""
    from werkzeug.serving import make_server  # noqa: PLC0415 - Werkzeug comes with Flask

    check_web_address(host, allow_remote)
    return make_server(host, port, create_app(store, unredacted), threaded=True)
