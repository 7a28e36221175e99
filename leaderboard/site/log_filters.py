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
