"""SVG bar charts, laid out on the server: plain numbers for a template to draw (no JavaScript).

:func:`bar_chart` turns ``[[label, count]]`` into the geometry of one chart: a bar per point, a
few axis ticks, and labels under some bars.  The template (``_chart.html``) writes the SVG with
Jinja2's autoescaping, so labels taken from stored data cannot break out of the markup.  The
drawing uses SVG presentation attributes and CSS classes only, never ``style=`` (the page's
Content-Security-Policy allows no inline style).
"""

WIDTH, HEIGHT = 720, 180
LEFT, RIGHT, TOP, BOTTOM = 44, 8, 10, 28


def _nice_ceiling(value):
    """The smallest 1, 2 or 5 x 10^k at or above ``value`` (at least 1): the axis top."""
    step = 1
    while True:
        for factor in (1, 2, 5):
            if step * factor >= value:
                return step * factor
        step *= 10


def bar_chart(points, title, label_every=None):
    """Geometry of a bar chart of ``points`` (``[[label, count]]``, oldest first) titled ``title``.

    Returns ``{"title", "width", "height", "bars": [{"x", "y", "w", "h", "label", "count"}],
    "ticks": [{"y", "value"}], "labels": [{"x", "text"}], "total", "empty"}``.  Every ``label_every``-th
    bar (default: about 8 labels) is labelled; an all-zero or empty series draws an empty frame.
    """
    counts = [max(0, int(count)) for _label, count in points]
    top = _nice_ceiling(max(counts, default=0))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / max(1, len(points))
    every = label_every or max(1, round(len(points) / 8))
    bars, labels = [], []
    for i, ((label, _count), count) in enumerate(zip(points, counts)):
        h = plot_h * count / top
        x = LEFT + i * slot
        bars.append({"x": round(x + slot * 0.1, 1), "y": round(TOP + plot_h - h, 1), "w": round(slot * 0.8, 1),
                     "h": round(h, 1), "label": str(label), "count": count})
        if i % every == 0:
            labels.append({"x": round(x + slot / 2, 1), "text": str(label)})
    ticks = [{"y": round(TOP + plot_h - plot_h * f, 1), "value": round(top * f)} for f in (0, 0.5, 1)]
    return {"title": title, "width": WIDTH, "height": HEIGHT, "bars": bars, "ticks": ticks, "labels": labels,
            "total": sum(counts), "empty": not any(counts), "left": LEFT, "right": WIDTH - RIGHT,
            "baseline": TOP + plot_h}
