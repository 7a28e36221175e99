"""A submitter's own submissions (the "my submissions" pages)."""

from __future__ import annotations

import uuid

from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.http import Http404

from submissions.models import Submission


def submissions_of(*, user: User) -> QuerySet[Submission]:
    """A submitter's own submissions, private and failed ones included."""
    return (
        Submission.objects.filter(submitter=user)
        .select_related("release__benchmark", "declared_benchmark", "run")
        .order_by("-created_at")
    )


def submission_get_own(*, submission_id: uuid.UUID | str, user: User) -> Submission:
    """One of the user's own submissions, or 404 (never 403: others' ids are not confirmed)."""
    submission = (
        Submission.objects.select_related("release__benchmark", "run").filter(pk=submission_id, submitter=user).first()
    )
    if submission is None:
        raise Http404("No such submission")
    return submission
