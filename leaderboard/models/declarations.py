"""What people say about agents, and what runs cost.

* ``AgentVersionMeta``: declared by the account owning the agent, once per agent
  version (the owner may correct it). Nothing in it is checked: every page labels it
  "declared".
* ``Baseline``: staff mark an agent version as a reference baseline (the paper's own
  method, a random agent). Its runs are shown distinctly and never take a rank.
* ``ReleasePrice``: the admin's per-release price table, USD per million tokens, by
  base model ("*" is the release's default price).
* ``RunCost``: each ranked run's cost, precomputed with the standings
  (leaderboard.services.costs) so a board reads it with its rows and never prices per
  request.
"""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models

from leaderboard.models.agents import AgentVersion
from leaderboard.models.registry import Release

# Limits of a declaration, each to keep a board row and an agent page readable.
MAX_BASE_MODELS = 8  # an ensemble rarely names more; a list beyond this is spam on a board row
MAX_DESCRIPTION_CHARS = 8000  # a few screens of markdown on the agent page


class AgentVersionMeta(models.Model):
    class Weights(models.TextChoices):
        OPEN = "open", "Open weights"
        CLOSED = "closed", "Closed weights"

    agent_version = models.OneToOneField(AgentVersion, on_delete=models.CASCADE, related_name="meta")
    organisation = models.CharField(max_length=200, blank=True)
    base_models = models.JSONField(default=list, blank=True)  # list[str], at most MAX_BASE_MODELS
    weights = models.CharField(max_length=8, choices=Weights.choices, blank=True)
    scaffold_name = models.CharField(max_length=100, blank=True)
    scaffold_version = models.CharField(max_length=100, blank=True)
    code_url = models.URLField(max_length=500, blank=True)
    paper_url = models.URLField(max_length=500, blank=True)
    model_card_url = models.URLField(max_length=500, blank=True)
    description_md = models.TextField(blank=True)
    # Declared cost of one full run in USD, for agents whose tokens the harness does not record.
    declared_cost_usd = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    declared_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    declared_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["organisation"]), models.Index(fields=["weights"])]

    def __str__(self) -> str:
        return f"declared metadata of {self.agent_version_id}"


class Baseline(models.Model):
    class Kind(models.TextChoices):
        PAPER = "paper", "Paper's own method"
        RANDOM = "random", "Random agent"
        OTHER = "other", "Reference"

    agent_version = models.OneToOneField(AgentVersion, on_delete=models.CASCADE, related_name="baseline")
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.OTHER)
    note = models.CharField(max_length=300, blank=True)
    marked_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    marked_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"baseline {self.agent_version_id} ({self.kind})"


class ReleasePrice(models.Model):
    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="prices")
    # A base model name as agents declare it (matched case-insensitively), or "*" for the default.
    model = models.CharField(max_length=100)
    # Never negative: a price below 0 put a negative cost on the public board.
    input_usd_per_mtok = models.DecimalField(max_digits=10, decimal_places=4, validators=[MinValueValidator(0)])
    output_usd_per_mtok = models.DecimalField(max_digits=10, decimal_places=4, validators=[MinValueValidator(0)])

    class Meta:
        ordering = ["release", "model"]
        constraints = [models.UniqueConstraint(fields=["release", "model"], name="release_price_unique_model")]

    def __str__(self) -> str:
        return f"{self.release} {self.model}"


class RunCost(models.Model):
    class Basis(models.TextChoices):
        RECORDED = "recorded"  # the run's submitter-reported tokens x the release's price table (shown "reported")
        DECLARED = "declared"  # the owner's declared USD per run

    run = models.OneToOneField("leaderboard.Run", on_delete=models.CASCADE, related_name="cost", primary_key=True)
    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="+")
    usd = models.FloatField()
    basis = models.CharField(max_length=8, choices=Basis.choices)
    priced_model = models.CharField(max_length=100, blank=True)

    class Meta:
        indexes = [models.Index(fields=["release", "usd"])]

    def __str__(self) -> str:
        return f"run {self.run_id}: ${self.usd:.2f} ({self.basis})"
