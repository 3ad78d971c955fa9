"""``socorro-store web``: read-only crash-stats pages over any store.

- :mod:`.app`: the Flask app (routes, status codes, security headers) and its threaded server;
- :mod:`.pages`: what each page shows, from counters and indexes only (also the JSON API);
- :mod:`.charts`: SVG bar charts laid out on the server;
- ``templates/``: Jinja2, autoescaped; ``static/site.css``: the only stylesheet.
"""

from .app import create_app, make_web_server

__all__ = ["create_app", "make_web_server"]
