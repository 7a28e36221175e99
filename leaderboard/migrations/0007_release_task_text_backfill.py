# Created with `makemigrations --empty`; the RunPython below is the one hand-written part.
# Releases synced before issue 11 have no text snapshot: give each ReleaseTask the text its
# Task row holds now (the best copy there is), so every page keeps rendering.

from django.db import migrations

FIELDS = (
    "title",
    "platform",
    "direction",
    "mode",
    "metric_name",
    "paper_md",
    "brief_md",
    "sandbox_dockerfile",
    "contract",
    "anchor_provenance",
)


def backfill(apps, schema_editor):
    ReleaseTask = apps.get_model("leaderboard", "ReleaseTask")
    for row in ReleaseTask.objects.select_related("task").filter(title=""):
        for name in FIELDS:
            setattr(row, name, getattr(row.task, name))
        row.simulator_id = row.task.simulator_id
        row.save(update_fields=[*FIELDS, "simulator"])


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0006_releasetask_anchor_cited_source_and_more"),
    ]

    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
