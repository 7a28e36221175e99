"""``python -m submissions.bundle``: see :mod:`submissions.bundle.cli`."""

from __future__ import annotations

import sys

from submissions.bundle.cli import main

if __name__ == "__main__":
    sys.exit(main())
