"""Streaming limits for uploaded bundles and manifests.

Django caps no file size by itself (DATA_UPLOAD_MAX_MEMORY_SIZE excludes files),
so a view that accepts a file installs ``SizeLimitUploadHandler`` in front of
the normal handlers before anything reads the body. It counts bytes as they
arrive and stops the upload as soon as the total passes the limit, before the
rest is read or stored; a Content-Length already over the limit is refused
without reading the body at all. The view then answers 413.

The handler only counts: hashing happens once, in the upload service's loop
(submissions.services.submissions), which also re-checks the limit on the file
itself. The website's upload view cannot install the handler before its hand-run
CSRF check reads the body, so it refuses by the declared length
(``declared_too_large``) and leaves the exact check to that loop.
"""

from __future__ import annotations

from typing import Any

from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler, StopUpload, TemporaryFileUploadHandler
from django.http import HttpRequest, QueryDict
from django.utils.datastructures import MultiValueDict

# Room for the multipart boundaries and small form fields around the file.
MULTIPART_OVERHEAD_BYTES = 64 * 1024


def declared_too_large(content_length: int, *, max_bytes: int) -> bool:
    """Whether a body declaring ``content_length`` bytes cannot hold a file of at most ``max_bytes``."""
    return content_length > max_bytes + MULTIPART_OVERHEAD_BYTES


class SizeLimitUploadHandler(FileUploadHandler):
    def __init__(self, request: HttpRequest, *, max_bytes: int) -> None:
        super().__init__(request)
        self.max_bytes = max_bytes
        self.too_large = False
        self.received = 0

    def handle_raw_input(
        self, input_data: Any, META: dict[str, Any], content_length: int, boundary: str, encoding: str | None = None
    ) -> tuple[QueryDict, MultiValueDict[str, UploadedFile]] | None:
        if declared_too_large(content_length, max_bytes=self.max_bytes):
            self.too_large = True
            # Parsed as empty: the body is never read, nothing is stored.
            return QueryDict(encoding=encoding), MultiValueDict()
        return None

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        self.received += len(raw_data)
        if self.received > self.max_bytes:
            self.too_large = True
            raise StopUpload(connection_reset=True)
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None


def install_size_limit(request: HttpRequest, *, max_bytes: int) -> SizeLimitUploadHandler:
    """Put the limit in front of a temp-file handler (bundles never sit in memory). Call before the body is read."""
    guard = SizeLimitUploadHandler(request, max_bytes=max_bytes)
    request.upload_handlers = [guard, TemporaryFileUploadHandler(request)]
    return guard
