"""load_manifest: open a source, parse it, run the review gates; the one composition of the three.

Kept outside the parsers so they stay pure (no file I/O): this module is where
a directory path becomes a source and where the gates join the parse problems.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from leaderboard.manifest.release_parser import parse_manifest
from leaderboard.manifest.review import review_parsed
from leaderboard.manifest.sources import ManifestSource, read_manifest_dir
from leaderboard.manifest.types import ManifestError, ReleaseManifest

__all__ = ["load_manifest"]


def load_manifest(
    path_or_source: str | Path | ManifestSource, *, known_simulators: Collection[str] | None = None
) -> ReleaseManifest:
    """Load and validate a manifest directory (or an already opened source).

    With ``known_simulators`` (the simulators registered as evaluators), the
    automated review gates of leaderboard.manifest.review also run (contract
    review and leak audit) and their problems are reported with the parse
    problems. Raises :class:`ManifestError` listing every problem.
    """
    source = path_or_source if isinstance(path_or_source, ManifestSource) else read_manifest_dir(path_or_source)
    parsed = parse_manifest(source)
    problems = list(parsed.problems)
    if known_simulators is not None:
        problems.extend(review_parsed(parsed, known_simulators=known_simulators))
    if problems or parsed.manifest is None:
        raise ManifestError(problems)
    return parsed.manifest
