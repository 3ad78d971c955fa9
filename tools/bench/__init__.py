"""Benchmarks (``bench_*.py``) and what they share: synthetic crash loading, Socorro 2013's
call-for-call storage code, a gateway launcher with default caches."""
