"""The scoring package stays plain Python: no Django, strictly typed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = [
    "scoring",
    "scoring.compare",
    "scoring.errors",
    "scoring.gap",
    "scoring.leaderboard",
    "scoring.pareto",
    "scoring.proportion",
    "scoring.race",
    "scoring.rerun",
    "scoring.scorecard",
    "scoring.task_interval",
    "scoring.uncertainty",
    "scoring.validate",
]

PROBE = """
import importlib, json, sys
for name in {modules!r}:
    importlib.import_module(name)
print(json.dumps(sorted(m for m in sys.modules if m == "django" or m.startswith("django."))))
"""


def test_importing_scoring_and_every_submodule_loads_no_django_module() -> None:
    completed = subprocess.run(
        [sys.executable, "-c", PROBE.format(modules=MODULES)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT)},
    )
    assert json.loads(completed.stdout) == []


def test_every_module_in_the_package_is_covered_by_the_import_probe() -> None:
    found = {f"scoring.{path.stem}" for path in (ROOT / "scoring").glob("*.py") if path.stem != "__init__"}
    assert found | {"scoring"} == set(MODULES)


# numpy where it is the right tool (the team guide): the vectorised bootstrap only.
NUMPY_MODULES = {"uncertainty.py"}


def test_the_package_imports_only_the_standard_library_and_numpy_for_the_bootstrap() -> None:
    for path in (ROOT / "scoring").glob("*.py"):
        allowed = set(sys.stdlib_module_names) | {"scoring", "__future__"}
        if path.name in NUMPY_MODULES:
            allowed.add("numpy")
        for line in path.read_text().splitlines():
            words = line.split()
            if len(words) >= 2 and words[0] in {"import", "from"} and not line.startswith(" "):
                assert words[1].split(".")[0] in allowed, f"{path.name}: {line}"


@pytest.mark.skipif(shutil.which("mypy", path=str(Path(sys.executable).parent)) is None, reason="mypy not installed")
def test_the_package_passes_mypy_strict() -> None:
    mypy = shutil.which("mypy", path=str(Path(sys.executable).parent))
    assert mypy is not None
    completed = subprocess.run([mypy, "--strict", "scoring/"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
