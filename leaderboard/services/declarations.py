"""Writes for agent declarations, run costs and baselines.

* Only the account owning an agent declares its versions' metadata
  (``agent_meta_may_declare``: the one permission rule, used by the page and the API).
* Costs are precomputed per run (``RunCost``) when a run is recorded, and recomputed
  when what they depend on changes: the release's price table or the version's
  declaration. A board reads them with its rows; nothing is priced per request.
* Marking or unmarking a baseline rewrites the standings of every release the version
  ran on, so a baseline never holds a rank (leaderboard.services.paper_gap_standings leaves
  baseline versions out) and the others close up behind it.

Every change that alters what a board shows bumps the release's generation, which
keys the board, chart and API caches.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import F

from leaderboard.models import AgentVersion, AgentVersionMeta, Baseline, Release, ReleasePrice, Run, RunCost
from leaderboard.permissions import ADD_BASELINE, DELETE_BASELINE, staff_write_actor
from leaderboard.selectors.visibility import runs_public_q
from leaderboard.services.paper_gap_standings import standings_update_version
from leaderboard.users import Viewer

# The price table's catch-all row: used when no row names the version's base model.
DEFAULT_PRICE_MODEL = "*"
MILLION = Decimal(1_000_000)


def agent_meta_may_declare(*, user: Viewer | None, agent_version: AgentVersion) -> bool:
    """True when ``user`` may declare ``agent_version``'s metadata: the agent's owner only.

    Agent.owner is the account that first named the agent in an accepted bundle (and the
    one bundles from other accounts are refused for). Staff are not owners: a declaration
    is the owner's own claim, shown as such; staff correct abuse in the admin.
    """
    owner_id = agent_version.agent.owner_id
    return bool(user is not None and user.is_authenticated and owner_id is not None and owner_id == user.pk)


def _releases_of_version(agent_version: AgentVersion, *, public_only: bool = False) -> list[int]:
    runs = Run.objects.filter(agent_version=agent_version)
    if public_only:
        runs = runs.filter(runs_public_q())
    return list(runs.values_list("release_id", flat=True).distinct())


def releases_generation_bump(*, release_ids: Iterable[int]) -> None:
    """Invalidate every cache keyed by these releases' generation (boards, charts, API ETags)."""
    ids = list(release_ids)
    if ids:
        Release.objects.filter(pk__in=ids).update(generation=F("generation") + 1)


@transaction.atomic
def agent_version_meta_declare(
    *, user: Viewer | None, agent_version: AgentVersion, data: dict[str, Any]
) -> AgentVersionMeta:
    """Store the owner's declaration (``data``: cleaned by leaderboard.forms.AgentVersionMetaForm)
    and re-price the version's runs. The caller has checked ``agent_meta_may_declare``."""
    meta, _ = AgentVersionMeta.objects.update_or_create(
        agent_version=agent_version, defaults={**data, "declared_by": user}
    )
    for release_id in _releases_of_version(agent_version):
        run_costs_refresh(release=Release(pk=release_id), agent_version=agent_version)
    # Only the boards that show this version: where its runs are all private, withdrawn, hidden or
    # on a draft, the board shows nothing of it, and a bump there (a public generation, an ETag)
    # told a visitor polling it that a hidden run exists and its owner just acted.
    releases_generation_bump(release_ids=_releases_of_version(agent_version, public_only=True))
    return meta


def _price_for(prices: dict[str, ReleasePrice], base_models: list[str]) -> ReleasePrice | None:
    for name in base_models or []:
        price = prices.get(str(name).strip().lower())
        if price is not None:
            return price
    return prices.get(DEFAULT_PRICE_MODEL)


def run_cost_of(
    *, run: Run, meta: AgentVersionMeta | None, prices: dict[str, ReleasePrice]
) -> tuple[float, str, str] | None:
    """(usd, basis, priced model) of a run, or None when it has no cost to show.

    Recorded first: the run's tokens times the release's price for the first declared base
    model that has one (else the release's "*" price). Otherwise the owner's declared USD.
    The tokens are submitter-reported (manifest.json, unsigned), so the basis is shown as
    "reported" (docs/scoring.md, "Runtime and tokens"): only the price is the site's.
    """
    if run.tokens_in is not None or run.tokens_out is not None:
        price = _price_for(prices, meta.base_models if meta else [])
        if price is not None:
            usd = (
                Decimal(run.tokens_in or 0) * price.input_usd_per_mtok
                + Decimal(run.tokens_out or 0) * price.output_usd_per_mtok
            ) / MILLION
            return float(usd), RunCost.Basis.RECORDED, price.model
    if meta is not None and meta.declared_cost_usd is not None:
        return float(meta.declared_cost_usd), RunCost.Basis.DECLARED, ""
    return None


def _prices(release_id: int) -> dict[str, ReleasePrice]:
    # The model's ordering (release, model) within one release: by model alone, without the
    # joins ordering by the release's own ordering adds (the last of two names that differ only
    # in case or spaces wins, as before).
    return {p.model.strip().lower(): p for p in ReleasePrice.objects.filter(release_id=release_id).order_by("model")}


def run_cost_refresh(*, run: Run) -> RunCost | None:
    """Price one newly recorded run (two reads: declaration, prices; an insert when it has a cost).

    Newly recorded: created in the caller's transaction, so it has no RunCost row yet (no other
    transaction can see the run to price it), and there is nothing to delete or update.
    Re-pricing existing runs is ``run_costs_refresh``'s."""
    meta = AgentVersionMeta.objects.filter(agent_version_id=run.agent_version_id).order_by().first()  # one-to-one
    cost = run_cost_of(run=run, meta=meta, prices=_prices(run.release_id))
    if cost is None:
        return None
    usd, basis, model = cost
    return RunCost.objects.create(run=run, release_id=run.release_id, usd=usd, basis=basis, priced_model=model)


@transaction.atomic
def run_costs_refresh(*, release: Release, agent_version: AgentVersion | None = None) -> int:
    """Re-price every run of a release (or of one version on it); returns the rows written.

    Four queries whatever the number of runs: prices, runs with their declarations, delete, insert.
    """
    prices = _prices(release.pk)
    runs = Run.objects.filter(release_id=release.pk).select_related("agent_version__meta")
    runs = runs.only("id", "release_id", "agent_version_id", "tokens_in", "tokens_out", "agent_version__meta")
    stale = RunCost.objects.filter(release_id=release.pk)
    if agent_version is not None:
        runs = runs.filter(agent_version=agent_version)
        stale = stale.filter(run__agent_version=agent_version)
    rows = []
    for run in runs:
        # A missing reverse one-to-one raises an AttributeError subclass: getattr gives None.
        meta = getattr(run.agent_version, "meta", None)
        cost = run_cost_of(run=run, meta=meta, prices=prices)
        if cost is not None:
            rows.append(RunCost(run_id=run.pk, release_id=release.pk, usd=cost[0], basis=cost[1], priced_model=cost[2]))
    stale.delete()
    RunCost.objects.bulk_create(rows)
    return len(rows)


@transaction.atomic
def release_prices_changed(*, release: Release) -> int:
    """After the admin edits a release's price table: re-price its runs, invalidate its caches."""
    written = run_costs_refresh(release=release)
    releases_generation_bump(release_ids=[release.pk])
    return written


def _restand(agent_version: AgentVersion) -> None:
    """Bring the version's rows of every release it ran on up to date: the incremental update
    takes a baseline's rows off (the others close up) or puts a former baseline back in place."""

    for release in Release.objects.filter(pk__in=_releases_of_version(agent_version)):
        standings_update_version(release=release, agent_version_id=agent_version.pk)


@transaction.atomic
def baseline_mark(*, actor: Viewer | None, agent_version: AgentVersion, kind: str, note: str = "") -> Baseline:
    """Staff mark a version as a reference baseline (or re-describe one); its releases' standings
    are rewritten without it. Needs ``leaderboard.add_baseline`` whoever calls: the admin's change
    form reached this with only ``change_baseline`` and could mark another version, taking it off
    every ranked board (tests/website/test_declarations_admin.py)."""
    staff_write_actor(actor, ADD_BASELINE, doing="mark baselines")
    baseline, _ = Baseline.objects.update_or_create(
        agent_version=agent_version, defaults={"kind": kind, "note": note, "marked_by": actor}
    )
    _restand(agent_version)
    return baseline


@transaction.atomic
def baseline_unmark(*, actor: Viewer | None, agent_version: AgentVersion) -> bool:
    """Staff return a baseline to the ranked board; False when it was not one. Needs
    ``leaderboard.delete_baseline``."""
    staff_write_actor(actor, DELETE_BASELINE, doing="unmark baselines")
    deleted, _ = Baseline.objects.filter(agent_version=agent_version).delete()
    if deleted:
        _restand(agent_version)
    return bool(deleted)
