"""Logging filters named by settings.LOGGING."""

from __future__ import annotations

import logging

# The first status that is the server's fault: its traceback is what an operator needs.
SERVER_ERROR_STATUS = 500


class ClientErrorsWithoutTraceback(logging.Filter):
    """Keep Django's one line for a refused request (403, 400, ...), without its traceback.

    ``django.request`` logs a PermissionDenied or a BadRequest (a multipart body without a
    boundary) with the exception's whole traceback: a routine refusal of a client's request
    filled the log like a crash, hiding the real ones. A record of a 5xx keeps it."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if isinstance(status, int) and status < SERVER_ERROR_STATUS:
            record.exc_info = None
            record.exc_text = None
        return True


# A 503 is a dependency away (leaderboard.unavailable), answered on purpose and logged once per
# request; the outage itself is logged where it is met.
SERVICE_UNAVAILABLE_STATUS = 503


class MailServerFaultsOnly(logging.Filter):
    """What the admins' error mail takes: a server fault (a 500), not a refused request (a bad
    Host header is a 400 that Django's security logger records at ERROR) nor a 503 answered
    while a dependency is away, which mailed the full request report once per request during an
    outage (six mails in two seconds in the fault-injection review)."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if not isinstance(status, int):
            return True
        return status >= SERVER_ERROR_STATUS and status != SERVICE_UNAVAILABLE_STATUS
