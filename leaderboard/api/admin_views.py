"""Staff-only registry actions: sync a release manifest by upload, release a race."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.admin import UPLOAD_LIMITS
from leaderboard.api.errors import ErrorSerializer
from leaderboard.api.permissions import StaffPermission
from leaderboard.api.serializers import ManifestSyncResultSerializer, ManifestUploadSerializer, RaceStatusSerializer
from leaderboard.api_errors import ApiError, refuse_body_fields, refuse_unknown_fields
from leaderboard.manifest import ManifestError, read_manifest_zip
from leaderboard.models import Race
from leaderboard.permissions import CHANGE_RACE, PUBLISH_RELEASE
from leaderboard.request_text import StrictMultiPartParser
from leaderboard.services.races import RaceTransitionError, race_release
from leaderboard.services.release_gates import ReleaseGateError
from leaderboard.services.release_sync import release_sync
from leaderboard.uploads import SizeLimitUploadHandler, install_size_limit

# A zip never needs to be larger than what it may unpack to (the admin form's limits).
MANIFEST_MAX_BYTES = UPLOAD_LIMITS.max_total_bytes

STAFF_ERRORS = {
    400: OpenApiResponse(ErrorSerializer, description="Invalid request"),
    401: OpenApiResponse(ErrorSerializer, description="Not authenticated"),
    403: OpenApiResponse(ErrorSerializer, description="Staff only, with the permission the action needs"),
    404: OpenApiResponse(ErrorSerializer, description="Not found"),
}


class ManifestSyncView(APIView):
    """The same path as ``manage.py sync_manifest``: unpack the zip safely, load, sync."""

    permission_classes = [StaffPermission]
    required_permission = PUBLISH_RELEASE
    parser_classes = [StrictMultiPartParser]

    def initialize_request(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Request:
        if request.method == "POST":
            self.upload_guard: SizeLimitUploadHandler = install_size_limit(request, max_bytes=MANIFEST_MAX_BYTES)
        return super().initialize_request(request, *args, **kwargs)

    @extend_schema(
        summary="Sync a release manifest from a zip of its directory (staff)",
        request={"multipart/form-data": ManifestUploadSerializer},
        responses={
            200: ManifestSyncResultSerializer,
            413: ErrorSerializer,
            **STAFF_ERRORS,
        },
    )
    def post(self, request: Request) -> Response:
        guard = getattr(self, "upload_guard", None)
        too_large = ApiError(
            code="too_large",
            message=f"The manifest zip is larger than the limit of {MANIFEST_MAX_BYTES} bytes.",
            status_code=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
        if guard is not None and guard.too_large:
            raise too_large
        upload = request.FILES.get("manifest")
        if guard is not None and guard.too_large:
            raise too_large
        # Its one field, once: an unknown field was read past, and a second manifest part was
        # the one synced (request.data holds the form's files too).
        refuse_unknown_fields(request.data, ("manifest",))
        if upload is None:
            raise ApiError(code="manifest_missing", message="manifest: expected a zip file field named 'manifest'.")
        stream = upload.file
        stream.seek(0)
        try:
            # The registry's safe reader (no paths from the zip touch the disk) and the sync service
            # `manage.py sync_manifest` and the admin form use.
            source = read_manifest_zip(stream, limits=UPLOAD_LIMITS, label="manifest.zip")
            result = release_sync(manifest=source, user=request.user)
        except ManifestError as exc:
            raise ApiError(
                code="manifest_invalid",
                message=str(exc).splitlines()[0] + " " + "; ".join(str(p) for p in exc.problems[:5]),
                extra={"problems": [problem.as_dict() for problem in exc.problems]},
            ) from None
        except ReleaseGateError as exc:
            raise ApiError(code="release_locked", message=str(exc), status_code=status.HTTP_409_CONFLICT) from None
        release = result.release
        return Response(
            {
                "status": result.status,
                "release": {
                    "id": release.pk,
                    "benchmark": release.benchmark.slug,
                    "version": release.version,
                    "published": release.published,
                },
                "changes": result.changes,
                "notes": result.notes,
            },
            status=status.HTTP_200_OK,
        )


class RaceReleaseView(APIView):
    """Mark an embargoed race's results released (the schemes engineer's lifecycle service)."""

    permission_classes = [StaffPermission]
    required_permission = CHANGE_RACE

    @extend_schema(
        summary="Release an embargoed race's results (staff)",
        request=None,
        responses={200: RaceStatusSerializer, 409: ErrorSerializer, **STAFF_ERRORS},
    )
    def post(self, request: Request, race_id: int) -> Response:
        refuse_body_fields(request)
        race = get_object_or_404(Race.objects.select_related("benchmark"), pk=race_id)
        # Releasing twice answers the released state again (a retried request is not an error).
        if race.status != Race.Status.RELEASED:
            race = self._release(race, request)
        return Response(
            {
                "id": race.pk,
                "benchmark": race.benchmark.slug,
                "number": race.number,
                "status": race.status,
                "released_at": race.released_at,
            }
        )

    @staticmethod
    def _release(race: Race, request: Request) -> Race:
        try:
            race = race_release(race=race, user=request.user)
        except RaceTransitionError as exc:
            raise ApiError(code=exc.code, message=exc.message, status_code=status.HTTP_409_CONFLICT) from None
        return race
