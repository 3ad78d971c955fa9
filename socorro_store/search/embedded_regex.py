"""Regular expressions for the embedded engine, run where a runaway one can be stopped.

Python's ``re`` backtracks: a pattern such as ``(a+)+b`` takes exponential time on a string of
``a`` s, and one call cannot be interrupted from the same process.  So an ``@`` condition's
pattern is applied to the field's distinct values in a forked child process, which is killed
when the query's time budget runs out (:class:`Expired`).  The child inherits the values (no
copy is sent) and sends back only the positions of the values that match.  Where ``fork`` does
not exist or cannot be used (a daemonic ``multiprocessing`` worker may not have children), the
values are matched in process (the budget is then checked between values only).
"""

import multiprocessing
import time


class Expired(Exception):
    """The budget ran out before every value was matched."""


def matching(regex, values, deadline):
    """The positions in ``values`` of the strings ``regex`` (compiled) matches whole."""
    if not values:
        return []
    try:
        context = multiprocessing.get_context("fork")
    except ValueError:
        return _in_process(regex, values, deadline)
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(regex, values, sender), daemon=True)
    try:
        child.start()
    except (AssertionError, OSError):
        # a daemonic multiprocessing worker may not have children; fork can fail (EAGAIN)
        receiver.close()
        sender.close()
        return _in_process(regex, values, deadline)
    sender.close()
    try:
        if not receiver.poll(max(0.0, deadline - time.monotonic())):
            raise Expired()
        try:
            return receiver.recv()
        except EOFError:
            raise Expired() from None  # the child died (out of memory): treat as too expensive
    finally:
        receiver.close()
        if child.is_alive():
            child.kill()
        child.join()


def _child(regex, values, sender):
    try:
        sender.send([i for i, value in enumerate(values) if regex.fullmatch(value) is not None])
    finally:
        sender.close()


def _in_process(regex, values, deadline):
    found = []
    for i, value in enumerate(values):
        if i & 63 == 0 and time.monotonic() > deadline:
            raise Expired()
        if regex.fullmatch(value) is not None:
            found.append(i)
    return found
