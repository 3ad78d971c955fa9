"""Type checks for caller-given numbers (a leaf module, like ``errors``).

``bool`` is a subclass of ``int`` in Python, so ``isinstance(True, int)`` holds; an argument
validated as a count, a limit or a number of seconds must refuse ``True`` and ``False``.
"""


def is_int(value):
    """True for an ``int`` that is not a ``bool``."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value):
    """True for an ``int`` or ``float`` that is not a ``bool``."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)
