"""Runs carried onto newer releases (a rescore's carry: ``Run.carried_from``)."""

from __future__ import annotations

from leaderboard.models import Run

__all__ = ["run_carried_copy_ids"]


def run_carried_copy_ids(*, run_id: int) -> list[int]:
    """Every run carried from run ``run_id``, and from those, and so on, in id order.

    A carried run rests on its source's evidence (the same stored bundle, recomputed): what
    staff conclude of the source -- a lowered or revoked level, a hidden run -- holds for each
    copy too. One query per generation of carrying (a release chain is short)."""
    ids: list[int] = []
    frontier = [run_id]
    while frontier:
        frontier = list(Run.objects.filter(carried_from_id__in=frontier).order_by("pk").values_list("pk", flat=True))
        ids += frontier
    return sorted(ids)
