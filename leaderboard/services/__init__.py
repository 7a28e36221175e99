"""Services of the registry app: every write to the leaderboard's tables goes through one of these modules."""
