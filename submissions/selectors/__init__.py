"""Reads of intake rows and of stored bundles (the submitter's pages, the scorecard
card pages, downloads and comparisons that open a run's bundle)."""
