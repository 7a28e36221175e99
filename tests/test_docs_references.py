"""Every test a document cites exists.

docs/security-model.md states each guarantee with the test that proves it, and the other
documents point at tests the same way: ``tests/x/test_y.py::test_name``, a class and its method
(``::TestClass::test_method``), and, after a file has been named, ``::test_other`` or
``...::test_other`` for another test of that same file (or of the class named just before).
A renamed or deleted test would leave a guarantee resting on nothing while its text still
reads as proven; this check makes that a failing test instead.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]

# A file reference, or a ``::Name`` chain after one (a chain of its own names the last file
# named before it). Only test-shaped names count: ``::a.b.c.d`` in prose is an IPv6 form.
_REFERENCE = re.compile(r"(?P<file>tests/[\w/]+\.py)(?P<chain>(?:::\w+)*)|(?P<bare>(?:::(?:test_|Test)\w*)+)")


def _defined_names(source: str) -> set[str]:
    """``name`` for each module-level test function or class, ``Class::method`` for each method."""
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            names.add(node.name)
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    names.add(f"{node.name}::{item.name}")
    return names


def dangling_references(text: str, root: Path) -> list[str]:
    """The references in ``text`` (a document) to a test file or test that does not exist under ``root``."""
    dangling: list[str] = []
    last_file: str | None = None
    last_class: str | None = None
    defined: dict[str, set[str] | None] = {}
    for match in _REFERENCE.finditer(text):
        if match.group("file"):
            last_file, chain = match.group("file"), match.group("chain")
        else:
            chain = match.group("bare")
            if last_file is None:
                dangling.append(f"{chain} (no test file named before it)")
                continue
        if last_file not in defined:
            path = root / last_file
            defined[last_file] = _defined_names(path.read_text()) if path.is_file() else None
        names = defined[last_file]
        if names is None:
            dangling.append(f"{last_file} (no such file)")
            continue
        parts = [part for part in chain.split("::") if part]
        if not parts:
            continue
        if match.group("file"):
            last_class = parts[0] if len(parts) > 1 else None
        candidates = {"::".join(parts)}
        if match.group("bare") and len(parts) == 1 and last_class is not None:
            candidates.add(f"{last_class}::{parts[0]}")  # "...::test_b" after "::TestA::test_a"
        if not candidates & names:
            dangling.append(f"{last_file}::{'::'.join(parts)}")
    return dangling


# A test named alone in backticks (`test_name`, no file): it must at least exist somewhere.
_ALONE = re.compile(r"(?<!::)`(?P<name>test_\w+)`")


@functools.lru_cache(maxsize=4)
def _every_test_name(root: Path) -> frozenset[str]:
    names: set[str] = set()
    for path in (root / "tests").rglob("test_*.py"):
        names |= {name.rsplit("::", 1)[-1] for name in _defined_names(path.read_text())}
    return frozenset(names)


def unknown_lone_names(text: str, root: Path) -> list[str]:
    """Test names cited alone in ``text`` that no test file under ``root`` defines."""
    known = _every_test_name(root)
    return [match.group("name") for match in _ALONE.finditer(text) if match.group("name") not in known]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.name)
def test_every_test_a_document_names_alone_exists_somewhere(document: Path) -> None:
    assert unknown_lone_names(document.read_text(), ROOT) == []


def test_the_lone_name_check_reports_a_name_no_test_defines(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("def test_here():\n    pass\n")
    text = "proved by `test_here` and `test_gone`, and `tests/test_x.py::test_also_gone`"
    assert unknown_lone_names(text, tmp_path) == ["test_gone"]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.name)
def test_every_test_a_document_cites_exists(document: Path) -> None:
    assert dangling_references(document.read_text(), ROOT) == []


def test_the_check_reports_a_missing_test_a_missing_method_and_a_missing_file(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text(
        "def test_present():\n    pass\n\nclass TestGroup:\n    def test_inside(self):\n        pass\n"
    )
    text = (
        "`tests/test_a.py::test_present`, `::test_gone`, `tests/test_a.py::TestGroup::test_inside`, "
        "`::TestGroup::test_missing`, `...::test_inside_too`, `tests/test_b.py::test_x`, and `::a.b.c.d` is prose."
    )
    assert dangling_references(text, tmp_path) == [
        "tests/test_a.py::test_gone",
        "tests/test_a.py::TestGroup::test_missing",
        "tests/test_a.py::test_inside_too",
        "tests/test_b.py (no such file)",
    ]


def test_the_check_accepts_a_document_whose_every_reference_exists(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text(
        "def test_present():\n    pass\n\nclass TestGroup:\n    def test_one(self):\n        pass\n"
        "    def test_two(self):\n        pass\n"
    )
    text = "`tests/test_a.py::test_present`, `::test_present`, `tests/test_a.py::TestGroup::test_one`, `...::test_two`"
    assert dangling_references(text, tmp_path) == []
