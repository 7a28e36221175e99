import hashlib
import io

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile

from submissions.models import Submission
from submissions.services.submissions import SubmissionRejected, bundle_storage_name, submission_create

BYTES = b"age-encryption.org/v1\n" + b"x" * 5000


def upload(content: bytes = BYTES, name: str = "run.age") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="application/octet-stream")


@pytest.mark.django_db
def test_it_stores_the_bundle_under_its_hash_and_records_the_submission(owner, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        submission, created = submission_create(user=owner, uploaded_file=upload(name="../../etc/passwd"))
    sha = hashlib.sha256(BYTES).hexdigest()
    assert created is True
    assert (submission.sha256, submission.size, submission.status) == (sha, len(BYTES), "received")
    assert submission.file.name == bundle_storage_name(sha) == f"bundles/{sha[:2]}/{sha}.age"
    assert submission.original_name == "passwd"
    with default_storage.open(submission.file.name, "rb") as stored:
        assert stored.read() == BYTES
    assert len(callbacks) == 1  # verification is enqueued only once the row is committed


@pytest.mark.django_db
def test_it_accepts_a_plain_binary_stream(owner):
    submission, created = submission_create(user=owner, uploaded_file=io.BytesIO(BYTES), original_name="cli.age")
    assert created is True
    assert submission.original_name == "cli.age"
    assert submission.size == len(BYTES)


@pytest.mark.django_db
def test_the_same_bytes_from_the_same_user_return_the_existing_submission(owner):
    first, _ = submission_create(user=owner, uploaded_file=upload())
    again, created = submission_create(user=owner, uploaded_file=upload(name="renamed.age"))
    assert created is False
    assert again.pk == first.pk
    assert Submission.objects.count() == 1


@pytest.mark.django_db
def test_the_same_bytes_from_another_user_are_a_new_submission_of_theirs(owner, stranger):
    first, _ = submission_create(user=owner, uploaded_file=upload())
    theirs, created = submission_create(user=stranger, uploaded_file=upload())
    assert created is True and theirs.pk != first.pk
    assert theirs.file.name == first.file.name  # one stored copy of the bytes
    assert sorted(Submission.objects.values_list("submitter__username", flat=True)) == ["owner", "stranger"]
    again, created = submission_create(user=stranger, uploaded_file=upload())
    assert (again.pk, created) == (theirs.pk, False)


@pytest.mark.django_db
def test_it_rejects_an_empty_file_and_stores_nothing(owner, media_root):
    with pytest.raises(SubmissionRejected) as refused:
        submission_create(user=owner, uploaded_file=upload(b""))
    assert (refused.value.code, refused.value.message) == (
        "empty_file",
        "the uploaded file is empty (0 bytes); expected an age-encrypted bundle",
    )
    assert Submission.objects.count() == 0
    assert not media_root.exists() or not any(media_root.rglob("*.age"))


@pytest.mark.django_db
def test_it_rejects_a_file_over_the_size_limit_and_stores_nothing(owner, settings, media_root):
    settings.PODIUM_MAX_BUNDLE_BYTES = 4096
    with pytest.raises(SubmissionRejected) as refused:
        submission_create(user=owner, uploaded_file=upload(b"y" * 4097))
    assert (refused.value.code, refused.value.message) == (
        "too_large",
        "the bundle is larger than the limit of 4096 bytes; split the run or ask the site's maintainers",
    )
    assert Submission.objects.count() == 0
    assert not media_root.exists() or not any(media_root.rglob("*.age"))


@pytest.mark.django_db
def test_a_file_exactly_at_the_size_limit_is_accepted(owner, settings):
    settings.PODIUM_MAX_BUNDLE_BYTES = 4096
    submission, created = submission_create(user=owner, uploaded_file=upload(b"y" * 4096))
    assert created is True
    assert submission.size == 4096


@pytest.mark.django_db
def test_a_bundle_refused_before_any_release_was_read_says_so_where_the_benchmark_would_be(owner, client):
    # A finished rejection said "not known yet", as if the benchmark were still to come.
    from django.urls import reverse

    submission, _ = submission_create(user=owner, uploaded_file=upload())
    Submission.objects.filter(pk=submission.pk).update(
        status=Submission.Status.DONE, verdict=Submission.Verdict.REJECTED, error_code="not_an_age_file"
    )
    client.force_login(owner)
    page = client.get(reverse("submission_detail", args=[submission.pk])).content.decode()
    assert "not known: the bundle was refused before a release of this site was read from it" in page
    assert "not known yet" not in page
