"""Checks of caller-given values (a leaf module, like ``errors``).

``bool`` is a subclass of ``int`` in Python, so ``isinstance(True, int)`` holds; an argument
validated as a count, a limit or a number of seconds must refuse ``True`` and ``False``.
:func:`is_loopback` decides whether a server (``serve``, ``web``) may listen without
``--allow-remote``.
"""

import ipaddress
import socket


def is_int(value):
    """True for an ``int`` that is not a ``bool``."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value):
    """True for an ``int`` or ``float`` that is not a ``bool``."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_loopback(host):
    """True when every address ``host`` resolves to is a loopback address."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except socket.gaierror:
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0]).is_loopback for info in infos)
