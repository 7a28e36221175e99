"""Visitor pages. Views validate the request and delegate: reads go through
leaderboard.selectors, writes through services; nothing here aggregates."""

from leaderboard.views.paper_gap import home

__all__ = ["home"]
