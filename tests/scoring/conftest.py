"""Make the repository root importable when pytest runs without pytest-django.

The scoring tests need nothing but the standard library, pytest and
hypothesis; ``-p no:django`` turns off the plugin that would otherwise put the
project directory on ``sys.path``.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
