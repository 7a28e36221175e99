"""Race runs get an opaque public id, their address on the site (instead of the row number).

Added nullable, filled with a fresh id per existing row, then made unique and required: a
callable default on AddField would give every existing row the same value."""

from django.db import migrations, models

import leaderboard.models.runs


def fill_public_ids(apps, schema_editor):
    RaceRun = apps.get_model("leaderboard", "RaceRun")
    runs = list(RaceRun.objects.filter(public_id__isnull=True).only("pk"))
    for run in runs:
        run.public_id = leaderboard.models.runs.race_run_public_id()
    RaceRun.objects.bulk_update(runs, ["public_id"], batch_size=1000)


class Migration(migrations.Migration):
    dependencies = [("leaderboard", "0008_release_price_not_negative")]

    operations = [
        migrations.AddField(
            model_name="racerun",
            name="public_id",
            field=models.CharField(editable=False, max_length=16, null=True),
        ),
        migrations.RunPython(fill_public_ids, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="racerun",
            name="public_id",
            field=models.CharField(
                default=leaderboard.models.runs.race_run_public_id, editable=False, max_length=16, unique=True
            ),
        ),
    ]
