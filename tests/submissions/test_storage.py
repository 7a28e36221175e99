"""Bundles go through Django's storage API: local files by default, an S3 bucket when
PODIUM_S3_BUCKET is set (SeaweedFS in CI), and a storage outage is a 503, not a 500."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.files.storage import default_storage

from leaderboard.models import Run
from submissions.models import Submission
from submissions.services.stored_bundles import bundle_local_path
from submissions.services.submissions import submission_create
from submissions.services.verification import submission_verify

REPO_ROOT = Path(__file__).resolve().parents[2]
PRINT_STORAGE = (
    "import django; django.setup(); from django.conf import settings; "
    "d = settings.STORAGES['default']; o = d.get('OPTIONS', {}); "
    "print(d['BACKEND'], o.get('bucket_name'), o.get('endpoint_url'), o.get('addressing_style'), o.get('location'))"
)


def settings_subprocess(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PODIUM_S3_", "AWS_"))}
    return subprocess.run(
        [sys.executable, "-c", PRINT_STORAGE],
        cwd=REPO_ROOT,
        env={**clean, "DJANGO_SETTINGS_MODULE": "leaderboard.site.settings", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_without_a_bucket_bundles_are_stored_on_the_local_filesystem():
    done = settings_subprocess()
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == "django.core.files.storage.FileSystemStorage"


def test_with_a_bucket_the_default_storage_is_django_storages_s3_with_path_style_for_a_custom_endpoint():
    done = settings_subprocess(
        PODIUM_S3_BUCKET="podium-bundles",
        AWS_S3_ENDPOINT_URL="http://127.0.0.1:8333",
        PODIUM_S3_PREFIX="/site-a/",
        AWS_ACCESS_KEY_ID="id",
        AWS_SECRET_ACCESS_KEY="secret",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        "storages.backends.s3.S3Storage",
        "podium-bundles",
        "http://127.0.0.1:8333",
        "path",
        "site-a",
    ]


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"PODIUM_S3_BUCKET": "Podium_Bundles"}, "PODIUM_S3_BUCKET='Podium_Bundles': expected an S3 bucket name"),
        (
            {"PODIUM_S3_BUCKET": "podium", "AWS_S3_ENDPOINT_URL": "ftp://store"},
            "AWS_S3_ENDPOINT_URL='ftp://store': expected an absolute http/https URL with a host",
        ),
        (
            {"PODIUM_S3_BUCKET": "podium", "AWS_ACCESS_KEY_ID": "id"},
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY: set both, or neither",
        ),
        (
            {"PODIUM_S3_BUCKET": "podium", "AWS_S3_ADDRESSING_STYLE": "sideways"},
            "AWS_S3_ADDRESSING_STYLE='sideways': expected one of auto, path, virtual",
        ),
    ],
)
def test_a_malformed_object_storage_setting_stops_start_up_with_a_message_naming_it(env, message):
    done = settings_subprocess(**env)
    assert done.returncode != 0
    assert "ImproperlyConfigured" in done.stderr
    assert message in done.stderr


# ------------------------------------------------------------ storage down


@pytest.fixture
def unreachable_s3(settings):
    """S3 storage pointed at a loopback port nothing listens on."""
    import socket

    from botocore.config import Config

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": "podium-nowhere",
                "endpoint_url": f"http://127.0.0.1:{port}",
                "access_key": "id",
                "secret_key": "secret",
                "addressing_style": "path",
                "client_config": Config(connect_timeout=1, retries={"max_attempts": 1}),
            },
        },
    }


@pytest.mark.django_db
def test_an_upload_while_the_object_store_is_down_is_refused_whole_with_storage_unavailable(owner, unreachable_s3):
    from leaderboard.unavailable import StorageUnavailable

    with pytest.raises(StorageUnavailable) as raised:
        submission_create(user=owner, uploaded_file=io.BytesIO(b"age-encryption.org/v1\n" * 4))
    assert raised.value.code == "storage_unavailable"
    assert Submission.objects.count() == 0


@pytest.mark.django_db
def test_the_upload_api_answers_503_with_retry_after_while_the_object_store_is_down(owner, unreachable_s3, settings):
    from django.core.files.uploadedfile import SimpleUploadedFile
    from rest_framework.test import APIClient

    from leaderboard.models import Benchmark

    benchmark = Benchmark.objects.create(slug="ale-robotics", name="ALE", scheme="paper_gap")
    benchmark.releases.create(version="0.5", published=True)  # uploads go to public benchmarks only
    client = APIClient()
    client.force_authenticate(owner)
    response = client.post(
        "/api/v1/submissions/",
        {"bundle": SimpleUploadedFile("run.age", b"age-encryption.org/v1\n" * 4), "benchmark": "ale-robotics"},
        format="multipart",
    )
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "storage_unavailable"
    assert response.headers["Retry-After"] == "30"
    assert "127.0.0.1" not in response.content.decode()
    assert Submission.objects.count() == 0


# ------------------------------------------------------------ against S3


@pytest.mark.s3
@pytest.mark.django_db
def test_a_bundle_round_trips_through_the_bucket_and_verifies_with_nothing_under_media_root(
    owner, demo_release, seal, media_root, settings
):
    import boto3

    data = seal()
    submission, created = submission_create(user=owner, uploaded_file=io.BytesIO(data))
    assert created
    storage = default_storage
    assert type(storage._wrapped).__name__ == "S3Storage"
    client = boto3.client(
        "s3",
        endpoint_url=settings.AWS_S3_ENDPOINT_URL or None,
        aws_access_key_id=settings.AWS_ACCESS_KEY_ID or None,
        aws_secret_access_key=settings.AWS_SECRET_ACCESS_KEY or None,
        region_name=settings.AWS_S3_REGION_NAME or "us-east-1",
    )
    key = "/".join(part for part in (settings.PODIUM_S3_PREFIX, submission.file.name) if part)
    assert client.get_object(Bucket=settings.PODIUM_S3_BUCKET, Key=key)["Body"].read() == data
    with bundle_local_path(submission.file.name) as path:
        assert path.read_bytes() == data
    submission_verify(submission_id=submission.pk)
    submission.refresh_from_db()
    assert (submission.status, submission.verdict) == ("done", "validated")
    assert Run.objects.filter(submission=submission).count() == 1
    assert not media_root.exists() or not any(media_root.rglob("*"))


@pytest.mark.s3
@pytest.mark.django_db
def test_the_same_bytes_uploaded_twice_are_one_object_in_the_bucket(owner, demo_release, seal):
    data = seal()
    first, _ = submission_create(user=owner, uploaded_file=io.BytesIO(data))
    again, created = submission_create(user=owner, uploaded_file=io.BytesIO(data))
    assert (again.pk, created) == (first.pk, False)
    folder, name = first.file.name.rsplit("/", 1)
    _, files = default_storage.listdir(folder)
    # No second copy under a suffixed name (file_overwrite=False would make one if we saved again).
    assert [f for f in files if f.startswith(first.sha256)] == [name]


def test_a_worker_that_cannot_reach_the_object_store_gets_a_transient_error_it_retries(unreachable_s3):
    from submissions.services.verification import TRANSIENT_ERRORS

    expected = r"bundle storage: cannot read bundles/ab/x\.age"
    with pytest.raises(OSError, match=expected) as raised, bundle_local_path("bundles/ab/x.age"):
        pass
    assert isinstance(raised.value, TRANSIENT_ERRORS)
