"""Bundles, cryptography and the verification worker."""
