"""Submitter and admin endpoints of the REST API (mounted by leaderboard/api_urls.py)."""
