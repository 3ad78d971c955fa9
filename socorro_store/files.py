"""Files the store writes outside its own directory (exports, minidumps): private, as the store is.

What they hold is what the store keeps 0700/0600 (unredacted crashes, minidumps with process
memory), so they are created owner-only whatever the umask, as the embedded engine's files are.
"""

import os
import stat

PRIVATE_FILE = 0o600
PRIVATE_DIRECTORY = 0o700


def open_private(path):
    """``path`` opened for binary writing (truncated), mode 0600: a new file is created so (the
    umask can only narrow it), an existing regular file of ours is narrowed to it before anything
    is written.  Another owner's file, a device (``/dev/null``) or a pipe keeps its mode."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
    try:
        found = os.fstat(fd)
        if stat.S_ISREG(found.st_mode) and found.st_uid == os.geteuid():
            os.fchmod(fd, PRIVATE_FILE)
        return os.fdopen(fd, "wb")
    except BaseException:
        os.close(fd)
        raise


def make_private_directory(path):
    """Create ``path`` (and missing parents) if needed; a directory created here is 0700."""
    os.makedirs(path, mode=PRIVATE_DIRECTORY, exist_ok=True)
