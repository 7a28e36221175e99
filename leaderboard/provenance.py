"""Who signed a paper-gap run's task results, per task: one reading for the API's run detail
(``ProvenanceField``) and the run's exports (``/runs/<id>/results.csv`` and ``.json``), which the run page shows in the
same terms (``leaderboard.selectors.paper_gap.run_signatures``). Keys are public identities: no
value here is withheld from anyone who may see the run."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from leaderboard.models import TaskResult

# The per-task provenance fields, in the order the API and the exports give them.
TASK_PROVENANCE_FIELDS = (
    "signature",
    "signing_key",
    "signing_key_revoked_at",
    "faithfulness_source",
    "judge",
    "rubric_version",
    "judge_key",
    "judge_key_revoked_at",
)


def task_provenance(result: TaskResult) -> dict[str, Any]:
    """Who signed one task result, as the API and the exports give it (the run page shows the same
    rows): the evaluator signature's status and key, the faithfulness verdict's source, judge,
    rubric and key, and when each key was revoked since (None: in force; ISO 8601). Load with
    ``select_related("signing_key", "judge_key")``."""
    key, judge_key = result.signing_key, result.judge_key
    return {
        "signature": result.signature,
        "signing_key": key.key_id if key is not None else None,
        "signing_key_revoked_at": _when(key.revoked_at) if key is not None else None,
        "faithfulness_source": result.faithfulness_source,
        "judge": result.judge,
        "rubric_version": result.rubric_version,
        "judge_key": judge_key.key_id if judge_key is not None else None,
        "judge_key_revoked_at": _when(judge_key.revoked_at) if judge_key is not None else None,
    }


def _when(moment: Any) -> str | None:
    """An instant as the API writes one (ISO 8601, UTC as Z, to the microsecond), so the API and
    the exports give the same string."""
    if moment is None:
        return None
    text = moment.isoformat()
    return text[: -len("+00:00")] + "Z" if text.endswith("+00:00") else text


@extend_schema_field({"type": "string", "nullable": True, "description": "a key id, or an ISO 8601 time"})
class ProvenanceField(serializers.Field):
    """The API's reading of one of ``TASK_PROVENANCE_FIELDS`` (named by the field's own name) of a
    task result, the value the exports give: a key id, or the time a key was revoked (null: none)."""

    def __init__(self) -> None:
        super().__init__(source="*", read_only=True)

    def to_representation(self, value: TaskResult) -> str | None:
        return task_provenance(value)[str(self.field_name)]
