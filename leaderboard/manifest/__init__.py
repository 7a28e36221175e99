"""Release manifests: reading, parsing and validating (no Django: stdlib + PyYAML).

A manifest is a directory (or a .zip of one)::

    release.yaml                 # benchmark, version, policy, anchors, evaluators, task list
    tasks/<slug>/task.yaml       # the seed-003 contract of one task
    tasks/<slug>/paper.md        # mounted read-only into the agent's sandbox
    tasks/<slug>/brief.md        # mounted read-only into the agent's sandbox
    tasks/<slug>/sandbox/Dockerfile   # optional
    tasks/<slug>/reference/      # HIDDEN: never opened, never read into the database

The format is documented in docs/manifest.md. One module per job, each
importing only the ones above it in this list:

* ``types``: field vocabularies, Problem/ManifestError and the parsed types;
* ``sources``: a directory or a zip as a source (the only file I/O);
* ``loader``: YAML text -> data plus the line of every field;
* ``checker``: typed field readers that record problems instead of raising;
* ``episode_parser``, ``task_parser``, ``release_parser``: text -> types
  (pure, mypy --strict; files are read through the ManifestFiles view);
* ``review``: the automated review gates (contract review, leak audit);
* ``load``: ``load_manifest``, composing source + parser + review.

Invariants kept here:

* every problem is collected (not just the first) into :class:`ManifestError`,
  each naming the file relative to the manifest, the line (from the YAML node
  marks), the field path and what was expected;
* no message ever contains an anchor (``paper_value``): a withheld anchor never
  leaves the server, and a refused manifest's errors may be shown to anyone
  who can upload one;
* nothing under a ``reference/`` directory is ever opened, from a directory or
  from a zip;
* :meth:`ReleaseManifest.canonical_json` is a deterministic form of everything
  the database will hold (file texts by SHA-256), so its hash decides whether a
  re-sync changes anything.
"""

from leaderboard.manifest.load import load_manifest
from leaderboard.manifest.sources import ManifestSource, ZipLimits, read_manifest_dir, read_manifest_zip
from leaderboard.manifest.types import (
    RELEASE_FILE,
    ManifestError,
    Problem,
    ReleaseManifest,
    TaskContract,
    TaskTexts,
)

__all__ = [
    "RELEASE_FILE",
    "ManifestError",
    "ManifestSource",
    "Problem",
    "ReleaseManifest",
    "TaskContract",
    "TaskTexts",
    "ZipLimits",
    "load_manifest",
    "read_manifest_dir",
    "read_manifest_zip",
]
