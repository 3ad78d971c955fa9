"""``socorro-store web``: read-only crash-stats pages over any store.

- :mod:`.app`: the Flask app (routes, status codes, security headers, the time limit);
- :mod:`.server`: its HTTP server (bounded request threads, access log);
- :mod:`.pages`: what the home, top-crashers and signature pages show, from counters and
  indexes (also the JSON API); :mod:`.report_page`: one crash, as crash-stats shows it;
- :mod:`.public_fields` (and ``public_fields.json``): the allowlist of public fields;
- :mod:`.display`: dates, booleans, durations and stored values as text;
- :mod:`.charts`: SVG bar charts laid out on the server;
- ``templates/``: Jinja2, autoescaped; ``static/site.css``: the only stylesheet.
"""

from .app import create_app
from .server import make_web_server

__all__ = ["create_app", "make_web_server"]
