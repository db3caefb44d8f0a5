"""The audit log: one JSON object per line, redacted before it is written.

Lines are appended with one ``write`` each under a lock and flushed at once, so concurrent flows
never interleave or lose a line and a crash loses nothing already logged.  Raw bytes that are not
UTF-8 appear as ``\\udcXX`` escapes (Python's ``surrogateescape``), exactly as the edits count them.

Faults while running never stop the proxy, and each is reported once:

* A write that fails (ENOSPC, EFBIG, EIO, ...) loses that record, and never leaves part of it:
  whatever part of the line was written is cut off again (``ftruncate``), so the file stays valid
  JSON Lines (where it cannot be, on a pipe or a device, the next record starts a new line, so
  only the torn one is lost).  The first failure is logged as one error; the next ones are only
  counted (`AuditLog.lost`, ``audit_records_lost`` in ``urlsan.stats``).  The first write that
  succeeds `AuditLog.recovery_settle` (10) seconds or more after the last failure logs one info
  line with the number of records lost: a nearly full disk that takes short records and refuses
  long ones is one fault, not one per record.
* A log file removed while running is created again (one warning), and the records written to
  the removed file since the last check of the path are written again into the new one; one
  moved away or replaced (logrotate) is reopened (one info line), the records in between landing
  in the moved file.  The path is checked at the first write `AuditLog.check_interval` (1)
  seconds or more after the last check, or once `AuditLog.pending_limit` bytes were written
  since, and when the log is closed, so that a clean shutdown loses nothing.  Not at every write:
  a system call per record (``fstat``) costs about as much as the write itself.  The price is
  memory for the lines written since the last check (about ``pending_limit``, 1 MiB, at most),
  and records are lost only if the process is killed between a removal and the next check, or if
  the removed file cannot be created again; those are then counted in `AuditLog.lost`, although
  their `write` had returned True.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
import time
from typing import Any

from .record import serialize
from .redact import Redactor

logger = logging.getLogger(__name__)


_Note = tuple[int, str, tuple[Any, ...]]  # a line to log once the lock is released


class AuditLog:
    """An append-only JSON Lines file.  `write` returns False for a lost record, never raises
    `OSError`, and reports each fault of the file once (see the module's docstring).
    """

    check_interval = 1.0  # seconds between checks that the path still names the open file
    pending_limit = 1 << 20  # bytes written since the last check that make the next write check
    recovery_settle = 10.0  # seconds of successful writes before a fault is reported as over

    def __init__(self, path: str, redactor: Redactor) -> None:
        self.path = path
        self.redactor = redactor
        self.lost = 0  # records not written, since opened
        self._lock = threading.Lock()
        self._abspath = os.path.abspath(path)  # reopened by this name even if the cwd changes
        # Opened here so that an unwritable path fails at start-up (configure), not per request.
        self._fd: int | None = self._open()
        # A file system that does not count links (st_nlink 0 for a named file) is only watched
        # by the periodic check.
        self._links_counted = os.fstat(self._fd).st_nlink > 0
        self._checked = time.monotonic()  # when the path was last compared with the open file
        # The lines written since then, to write again should the file turn out to be removed.
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._unwritten = 0  # of those, lines that could not be written again (for _failed)
        self._partial = False  # a line could not be cut back: start the next one on a new line
        self._fault: str | None = None  # why writes began to fail, until they work again
        self._fault_lost = 0  # records lost since then
        self._last_failure = 0.0

    def _open(self) -> int:
        return os.open(self._abspath, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def write(self, record: dict[str, Any]) -> bool:
        """Append one record as one line; False if it was lost (the fault is logged once)."""
        data = serialize(record, self.redactor)
        notes: list[_Note] = []
        with self._lock:
            try:
                self._append(data, notes)
            except OSError as e:
                self._failed(e, notes)
                ok = False
            else:
                if self._fault is not None:
                    self._succeeded(notes)
                ok = True
        for level, message, args in notes:  # logged outside the lock: handlers may be slow
            logger.log(level, message, *args)
        return ok

    def _append(self, data: bytes, notes: list[_Note]) -> None:
        fd = self._fd
        if fd is None:
            raise OSError(errno.EBADF, "the audit log is closed")
        if (
            time.monotonic() - self._checked >= self.check_interval
            or self._pending_bytes >= self.pending_limit
        ):
            fd = self._follow_path(fd, notes)
        if self._partial:
            self._write_line(fd, data)
        else:  # `_write_line` in line, as nearly every record goes: one call less per record
            written = os.write(fd, data)
            if written < len(data):
                self._write_rest(fd, data, written)
        if self._links_counted:
            self._pending.append(data)
            self._pending_bytes += len(data)

    def _write_line(self, fd: int, data: bytes) -> None:
        """Write ``data`` whole, or raise `OSError` having cut back what part of it was written."""
        if self._partial:
            data = b"\n" + data
        written = os.write(fd, data)
        if written < len(data):  # rare: a short write, the last bytes a file system takes
            self._write_rest(fd, data, written)
        self._partial = False

    def _write_rest(self, fd: int, data: bytes, written: int) -> None:
        """Write the rest of ``data`` after a short write of ``written`` bytes, or raise
        `OSError` having cut back what part of it was written."""
        try:
            view = memoryview(data)
            while written < len(data):
                written += os.write(fd, view[written:])
        except OSError:
            self._partial = not _cut_back(fd, written)
            raise

    def _follow_path(self, fd: int, notes: list[_Note]) -> int:
        """The fd to write to: a new one if the path no longer names the open file."""
        self._checked = time.monotonic()
        pending = self._pending
        self._pending, self._pending_bytes = [], 0
        current = os.fstat(fd)
        removed = self._links_counted and current.st_nlink == 0
        if not removed:
            try:
                named = os.stat(self._abspath)
            except FileNotFoundError:
                pass
            else:
                if (named.st_dev, named.st_ino) == (current.st_dev, current.st_ino):
                    return fd
        try:
            new = self._open()
        except OSError as e:
            if removed:  # writing on would lose the record in a file nobody can read
                self._unwritten = len(pending)
                raise OSError(e.errno, f"it was removed and cannot be created again: {e}") from e
            return fd  # moved away: keep appending there, and retry at the next check
        os.close(fd)
        self._fd = new
        if removed:
            message = "urlsan: audit log %s was removed while running; created it again"
            notes.append((logging.WARNING, message, (self.path,)))
            if pending:  # the lines since the last check went into the removed file
                try:
                    self._write_line(new, b"".join(pending))
                except OSError:
                    self._unwritten = len(pending)
                    raise
        else:
            message = "urlsan: audit log %s was moved away or replaced (rotated?); reopened it"
            notes.append((logging.INFO, message, (self.path,)))
        return new

    def _failed(self, error: OSError, notes: list[_Note], records: int = 1) -> None:
        records += self._unwritten  # the lines of a removed file, if that is what failed
        self._unwritten = 0
        self.lost += records
        self._last_failure = time.monotonic()
        if self._fault is None:
            self._fault = error.strerror or str(error)
            self._fault_lost = 0
            message = (
                "urlsan: could not write to audit log %s: %s; requests are still served, but "
                "their records are lost until it is writable again (reported once; the count "
                "is in urlsan.stats)"
            )
            notes.append((logging.ERROR, message, (self.path, self._fault)))
        self._fault_lost += records

    def _succeeded(self, notes: list[_Note]) -> None:
        # Only once writes have worked for a while: a nearly full disk takes short records and
        # refuses long ones, and each flap must not be reported as a new fault.
        if time.monotonic() - self._last_failure >= self.recovery_settle:
            message = (
                "urlsan: audit log %s is writable again; %d records were lost while it was not"
            )
            notes.append((logging.INFO, message, (self.path, self._fault_lost)))
            self._fault = None

    def close(self) -> None:
        """Close the file, once the path has been checked a last time (`check_interval`)."""
        notes: list[_Note] = []
        with self._lock:
            if self._fd is not None:
                if self._pending:
                    try:
                        self._follow_path(self._fd, notes)
                    except OSError as e:
                        self._failed(e, notes, records=0)
                if self._fd is not None:
                    os.close(self._fd)
                self._fd = None
        for level, message, args in notes:
            logger.log(level, message, *args)


def _cut_back(fd: int, written: int) -> bool:
    """Remove the last ``written`` bytes, a partial line; False if they had to stay."""
    try:
        end = os.lseek(fd, 0, os.SEEK_CUR)  # O_APPEND: just after the bytes this fd wrote
        if os.fstat(fd).st_size != end:
            return False  # another process appended after them: cutting would lose its lines
        os.ftruncate(fd, end - written)
    except OSError:
        return False  # not a regular file (a pipe, a device): nothing to cut
    return True
