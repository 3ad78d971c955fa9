"""How long counter detail is kept (:class:`Retention`), and where ``expire`` runs have cut it.

``expire`` (:mod:`~socorro_store.jobs.expiry`) deletes detail older than a cut per level
(:meth:`Retention.cuts`), once a coarser level holds it.  Each run records its retention and the
moment it counted back from in its job record (``params``), so the cuts it made can be worked
out again later: :func:`expired_before` gives, per level, the latest cut of any successful run.
A roll-up of a cut-over store reads it to tell detail deleted by retention from a count lost.
"""

from dataclasses import asdict, dataclass, fields
from datetime import timedelta

from ..checks import is_int
from ..errors import InvalidArgument
from ..schema import keys as K
from . import runs

JOB = "expire"


@dataclass(frozen=True)
class Retention:
    """How many intervals before the current one are kept, per level."""

    metrics_minute_days: int = 7
    metrics_hour_days: int = 90
    signature_hours: int = 48
    signature_days: int = 30
    signature_months: int = 2
    signature_years: int = 2
    claim_days: int = 2

    def __post_init__(self):
        for name, value in asdict(self).items():
            if not is_int(value) or value < 0:
                raise InvalidArgument(f"retention {name} must be an int >= 0: {value!r}")
        if self.metrics_hour_days < self.metrics_minute_days:
            raise InvalidArgument("retention metrics_hour_days must be >= metrics_minute_days "
                                  "(hour rows are the coarser level)")

    def cuts(self, now):
        """``{kind: datetime}``: detail of an interval starting before its kind's cut is past
        retention at ``now``.  Kinds: ``minute``, ``hour`` (metrics rows) and
        ``signature_hour``, ``signature_day``, ``signature_month``, ``signature_year`` (signature
        columns; a day's rankings go with its ``daily_`` columns)."""
        hour_now = now.replace(minute=0, second=0, microsecond=0)
        day_now = hour_now.replace(hour=0)
        return {"minute": now.replace(second=0, microsecond=0) - timedelta(days=self.metrics_minute_days),
                "hour": hour_now - timedelta(days=self.metrics_hour_days),
                "signature_hour": hour_now - timedelta(hours=self.signature_hours),
                "signature_day": day_now - timedelta(days=self.signature_days),
                "signature_month": _months_back(day_now, self.signature_months),
                "signature_year": day_now.replace(year=day_now.year - self.signature_years, month=1, day=1)}


def _months_back(moment, n):
    index = moment.year * 12 + moment.month - 1 - n
    return moment.replace(year=index // 12, month=index % 12 + 1, day=1, hour=0, minute=0, second=0, microsecond=0)


def run_params(retention, now):
    """The job record's ``params`` of an ``expire`` run: its retention and its ``now``."""
    return {**asdict(retention), "now": K.parse_timestamp(now, "now").isoformat()}


def expired_before(backend):
    """``{kind: datetime}`` (kinds of :meth:`Retention.cuts`): the latest cut of each kind made by
    a successful ``expire`` run; ``{}`` when none recorded its ``now`` (none ran, or only versions
    before this record).  Only a cut: detail whose coarser interval was not rolled up is kept."""
    names = {f.name for f in fields(Retention)}
    out = {}
    for run in runs.list_runs(backend, JOB):
        params = run.params if isinstance(run.params, dict) else {}
        if run.status != runs.SUCCEEDED or "now" not in params:
            continue
        try:
            cuts = Retention(**{k: v for k, v in params.items() if k in names}).cuts(
                K.parse_timestamp(params["now"], "now"))
        except (InvalidArgument, TypeError):
            continue  # a record this code cannot read says nothing
        for kind, cut in cuts.items():
            out[kind] = max(out.get(kind, cut), cut)
    return out
