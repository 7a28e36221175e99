"""Factories for issue 13's tests: an owned agent with a declaration, a price table, baselines."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from leaderboard.models import AgentVersion, AgentVersionMeta, Release, ReleasePrice, Run
from leaderboard.services.declarations import run_costs_refresh


def own(run: Run, owner: Any) -> AgentVersion:
    """Make ``owner`` the owner of the run's agent (the first submitter, as verification does)."""
    agent = run.agent_version.agent
    agent.owner = owner
    agent.save(update_fields=["owner"])
    return run.agent_version


def declare(run: Run, **values: Any) -> AgentVersionMeta:
    defaults: dict[str, Any] = {
        "organisation": "Acme Labs",
        "base_models": ["gpt-x"],
        "weights": "closed",
        "scaffold_name": "OpenHands",
        "scaffold_version": "0.9",
    }
    defaults.update(values)
    meta, _ = AgentVersionMeta.objects.update_or_create(agent_version=run.agent_version, defaults=defaults)
    return meta


def price(release: Release, model: str = "gpt-x", *, inp: str = "2", out: str = "8") -> ReleasePrice:
    row = ReleasePrice.objects.create(
        release=release, model=model, input_usd_per_mtok=Decimal(inp), output_usd_per_mtok=Decimal(out)
    )
    run_costs_refresh(release=release)
    return row
