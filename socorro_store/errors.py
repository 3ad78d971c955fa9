"""Typed errors raised by socorro-store.

Every error the library raises on purpose derives from :class:`SocorroStoreError`, so callers can
catch one class.  The CLI turns any of them into a one-line message: exit code 2 for bad input
(InvalidArgument, ConfigError, SpecError), exit code 1 for a failure (everything else).
"""


class SocorroStoreError(Exception):
    """Base class of every error raised by socorro-store."""


class ConfigError(SocorroStoreError, ValueError):
    """A store URL (scheme, host, port or option) is malformed or unknown."""


class SpecError(SocorroStoreError, ValueError):
    """A table spec file is malformed.  The message names the file, the table and the field."""

    def __init__(self, path, table, field, problem):
        self.path, self.table, self.field, self.problem = str(path), table, field, problem
        super().__init__(f"{self.path}: table {table or '?'}: {field}: {problem}")


class InvalidArgument(SocorroStoreError, ValueError):
    """An argument is out of range or of the wrong type (HBase's IllegalArgument)."""


class RequestTooLarge(InvalidArgument):
    """A request cannot fit the server's request limit (HBase's framed-transport frame size,
    Bigtable's request and row limits), however it is split.

    Refused before anything is sent, and never retried: retrying cannot make it fit.  ``size`` is
    the estimated encoded size in bytes, ``limit`` the limit, ``setting`` what to raise.
    """

    def __init__(self, message, size=None, limit=None, setting=None):
        super().__init__(message)
        self.size, self.limit, self.setting = size, limit, setting


class TableNotFound(SocorroStoreError, LookupError):
    """The named table does not exist."""


class TableExists(SocorroStoreError):
    """A table with that name already exists (HBase's AlreadyExists)."""


class TableDisabled(SocorroStoreError):
    """The table is disabled; data operations are refused until it is enabled."""


class FamilyNotFound(SocorroStoreError, LookupError):
    """A column names a family the table does not have."""


class NotACounter(SocorroStoreError):
    """An increment hit a cell that is not an 8-byte big-endian integer."""


class BackendUnavailable(SocorroStoreError):
    """The backend could not be reached within the retry budget."""


class BackendError(SocorroStoreError):
    """The backend reported a failure that is none of the more specific errors."""


class InvalidCrashID(InvalidArgument):
    """A crash id is not in Socorro's format (a UUID ending in a depth digit and YYMMDD)."""


class NotFound(SocorroStoreError, LookupError):
    """What was asked for is not stored: a signature with no counters, a metrics row or a table
    row that does not exist (the CLI exits 1, where it used to print nothing or zeros)."""


class CrashIDNotFound(SocorroStoreError, LookupError):
    """No crash (or no part of it that was asked for) is stored under that id."""


class CrashDeleted(CrashIDNotFound):
    """The crash was deleted (a privacy deletion) while it was being saved: the save did not
    happen, and nothing of it stays.  ``crash_ids`` are the deleted crashes of the call; the other
    crashes of a batch were saved.  A deleted crash stays deleted."""

    def __init__(self, crash_ids):
        self.crash_ids = list(crash_ids)
        super().__init__(f"crash deleted while being saved: {', '.join(self.crash_ids)}")


class GroupWriteInterrupted(SocorroStoreError):
    """The caller that was writing this call's group (group commit) was interrupted (Ctrl-C,
    a signal-based timeout) in the middle of the write.  The write may be partial; saves are
    idempotent, so retry."""


class StoreNotFound(SocorroStoreError, LookupError):
    """An embedded store directory holds no store, and the caller asked not to create one."""


class StreamCorrupt(SocorroStoreError):
    """An export stream is truncated or corrupt.  ``offset`` is the byte where it went wrong;
    every crash before it was imported."""

    def __init__(self, offset, problem):
        self.offset, self.problem = offset, problem
        super().__init__(f"export stream corrupt at byte {offset}: {problem}")


class RecordRefused(StreamCorrupt, InvalidArgument):
    """An export record is readable but inconsistent: its documents name another crash than the
    record's ``crash_id`` (a processed ``uuid``, a raw ``uuid``), or fail the store's validation.

    Refused before anything of it is written, so an import never writes a crash other than the
    record's own; every crash before it was imported.  ``crash_id`` is the record's crash id.
    Bad input (the CLI exits 2).
    """

    def __init__(self, offset, crash_id, problem):
        self.crash_id = crash_id  # None: refused before its crash id could be read
        named = f"crash record {crash_id!r}" if crash_id is not None else "a record"
        super().__init__(offset, f"{named} refused: {problem}")


class UnreadableDocument(SocorroStoreError):
    """A stored JSON document (a raw or processed crash another client wrote) cannot be read
    back: it nests deeper than Python's parser goes.  The rest of the crash is readable."""


class CrashConflict(SocorroStoreError):
    """A crash id is already stored with another payload (annotations or dumps differ).

    A collector retry of the same crash is not a conflict: see :meth:`CrashStore.save_raw_crash`.
    Nothing is written.
    """


class SearchParameterError(InvalidArgument):
    """A Super Search parameter is refused (an unknown field or column, a bad operator or value,
    a limit passed).  ``parameter`` names it, as the API's 400 does.  Nothing is searched."""

    def __init__(self, parameter, message):
        super().__init__(f"{parameter}: {message}")
        self.parameter, self.problem = parameter, message


class ProtectedField(SocorroStoreError, PermissionError):
    """A search names a protected field (a filter, column, facet or sort) where only public ones
    may be used (the web view without ``--unredacted``).  ``field`` names it; the API answers 403."""

    def __init__(self, field, parameter=None):
        super().__init__(f"{field} is a protected field" + (f" (in {parameter})" if parameter else ""))
        self.field, self.parameter = field, parameter


class SearchNotConfigured(SocorroStoreError, LookupError):
    """The store has no search engine (no ``search_url``, and not an embedded store)."""


class SearchUnavailable(BackendUnavailable):
    """The search engine could not be reached; the crash store itself is unaffected."""
