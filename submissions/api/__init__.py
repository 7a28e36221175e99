"""Submitter and admin endpoints of the REST API (mounted by leaderboard/site/api_urls.py)."""
