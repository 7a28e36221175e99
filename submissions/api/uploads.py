"""Streaming limits for uploaded bundles and manifests.

Django caps no file size by itself (DATA_UPLOAD_MAX_MEMORY_SIZE excludes files),
so a view that accepts a file installs ``SizeLimitUploadHandler`` in front of
the normal handlers before anything reads the body. It counts bytes as they
arrive and stops the upload as soon as the total passes the limit, before the
rest is read or stored; a Content-Length already over the limit is refused
without reading the body at all. The view then answers 413.

The handler also hashes the bundle field while it streams, so an identical
retry can be recognised without reading the stored file again.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler, StopUpload, TemporaryFileUploadHandler
from django.http import HttpRequest, QueryDict
from django.utils.datastructures import MultiValueDict

# Room for the multipart boundaries and small form fields around the file.
MULTIPART_OVERHEAD_BYTES = 64 * 1024


class SizeLimitUploadHandler(FileUploadHandler):
    def __init__(self, request: HttpRequest, *, max_bytes: int, hashed_field: str = "") -> None:
        super().__init__(request)
        self.max_bytes = max_bytes
        self.hashed_field = hashed_field
        self.too_large = False
        self.received = 0
        self.sha256: str | None = None
        self._hasher: Any = None
        self._current_field = ""

    def handle_raw_input(
        self, input_data: Any, META: dict[str, Any], content_length: int, boundary: str, encoding: str | None = None
    ) -> tuple[QueryDict, MultiValueDict[str, UploadedFile]] | None:
        if content_length > self.max_bytes + MULTIPART_OVERHEAD_BYTES:
            self.too_large = True
            # Parsed as empty: the body is never read, nothing is stored.
            return QueryDict(encoding=encoding), MultiValueDict()
        return None

    def new_file(self, field_name: str, *args: Any, **kwargs: Any) -> None:
        self._current_field = field_name
        self._hasher = hashlib.sha256() if field_name == self.hashed_field else None

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        self.received += len(raw_data)
        if self.received > self.max_bytes:
            self.too_large = True
            raise StopUpload(connection_reset=True)
        if self._hasher is not None:
            self._hasher.update(raw_data)
        return raw_data

    def file_complete(self, file_size: int) -> None:
        if self._hasher is not None:
            self.sha256 = self._hasher.hexdigest()
            self._hasher = None
        return


def install_size_limit(request: HttpRequest, *, max_bytes: int, hashed_field: str = "") -> SizeLimitUploadHandler:
    """Put the limit in front of a temp-file handler (bundles never sit in memory). Call before the body is read."""
    guard = SizeLimitUploadHandler(request, max_bytes=max_bytes, hashed_field=hashed_field)
    request.upload_handlers = [guard, TemporaryFileUploadHandler(request)]
    return guard
