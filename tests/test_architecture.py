"""The architecture as a test (docs/architecture.md): which module may import which.

Read with the standard library's ``ast`` only, never by importing the code, so the checks
see function-level imports too and hold for code paths no test happens to run:

- ``submissions`` depends on ``leaderboard``, never the reverse: no module of ``leaderboard``
  imports ``submissions``, except ``leaderboard.site`` (settings, URLs, WSGI/ASGI, Celery),
  the one module that wires both apps together;
- ``leaderboard.site`` is the top: no module outside it imports it;
- ``scoring`` is pure: it imports neither app nor Django;
- no import cycle between project modules (module-level imports; migrations left out);
- an import inside a function says why on its line or the line above (Celery
  autodiscovery, an optional dependency, a command that loads Django first, ...);
- the API's string fields are the strict ones (``leaderboard.api.fields``): no module names
  DRF's plain CharField, SlugField, URLField, ChoiceField or ModelSerializer, which turn a
  number into text.

Each check is a function over a source tree, so the meta-tests at the bottom can feed it a
tiny synthetic tree and see it fail.
"""

from __future__ import annotations

import ast
import functools
import io
import tokenize
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("leaderboard", "submissions", "scoring")
# The site sub-package: settings, root URLconf, WSGI/ASGI, the Celery app. It alone imports both apps.
SITE = "leaderboard.site"


@dataclass(frozen=True)
class Import:
    importer: str  # the module containing the statement
    target: str  # the module imported (``from pkg import name`` -> pkg.name when that is a module)
    line: int
    end_line: int
    function_level: bool
    type_checking: bool  # inside ``if TYPE_CHECKING:`` (never executed)


def module_files(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """Every module of the given packages by dotted name, migrations left out (a migration
    is frozen history that names whatever models existed when it was written)."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if "migrations" in parts:
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve_from(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _targets(statement: ast.Import | ast.ImportFrom, module: str, is_package: bool, known: set[str]) -> list[str]:
    """The modules one import statement names (``from pkg import name``: pkg.name when a module)."""
    if isinstance(statement, ast.Import):
        return [alias.name for alias in statement.names]
    base = _resolve_from(module, is_package, statement)
    return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in statement.names]


def imports_of(module: str, path: Path, known: set[str]) -> list[Import]:
    """The import statements of one module, each resolved to the module it names."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    found: list[Import] = []

    def visit(nodes: list[ast.AST], in_function: bool, in_type_checking: bool) -> None:
        for child in nodes:
            if isinstance(child, ast.Import | ast.ImportFrom):
                end = child.end_lineno or child.lineno
                found.extend(
                    Import(module, target, child.lineno, end, in_function, in_type_checking)
                    for target in _targets(child, module, is_package, known)
                )
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                visit(list(child.body), in_function, True)
                visit(list(child.orelse), in_function, in_type_checking)
            else:
                nested = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
                visit(list(ast.iter_child_nodes(child)), nested, in_type_checking)

    visit(list(tree.body), False, False)
    return found


def all_imports(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[Import]:
    files = module_files(root, packages)
    known = set(files)
    return [imp for module, path in files.items() for imp in imports_of(module, path, known)]


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def forbidden_imports(imports: list[Import]) -> list[str]:
    """Imports against the layering: leaderboard -> submissions (outside leaderboard.site),
    anything -> leaderboard.site (from outside it), and scoring -> either app or Django."""
    problems = []
    for imp in imports:
        where = f"{imp.importer}:{imp.line} imports {imp.target}"
        if _in(imp.importer, "leaderboard") and not _in(imp.importer, SITE) and _in(imp.target, "submissions"):
            problems.append(f"{where} (leaderboard never imports submissions; submissions depends on leaderboard)")
        if _in(imp.target, SITE) and not _in(imp.importer, SITE):
            problems.append(f"{where} (the site package is the top: only it imports both apps, nothing imports it)")
        if _in(imp.importer, "scoring") and any(
            _in(imp.target, name) for name in ("leaderboard", "submissions", "django", "rest_framework")
        ):
            problems.append(f"{where} (scoring is pure: no app, no Django)")
    return problems


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    stack = [start]
    while stack:
        for successor in graph[stack.pop()] - seen:
            seen.add(successor)
            stack.append(successor)
    return seen


def import_cycles(imports: list[Import]) -> list[list[str]]:
    """The groups of modules that import one another at module level (each group holds at least
    one import cycle): two modules are in one group when each reaches the other."""
    modules = {imp.importer for imp in imports}
    graph: dict[str, set[str]] = {module: set() for module in modules}
    for imp in imports:
        if not (imp.function_level or imp.type_checking) and imp.target in modules and imp.target != imp.importer:
            graph[imp.importer].add(imp.target)
    reach = {module: _reachable(graph, module) for module in modules}
    groups = {frozenset(m for m in reach[module] if module in reach[m]) | {module} for module in modules}
    return sorted(sorted(group) for group in groups if len(group) > 1)


def _comment_lines(path: Path) -> set[int]:
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
    return {token.start[0] for token in tokens if token.type == tokenize.COMMENT}


def uncommented_function_imports(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """Imports inside a function with no comment on their lines or the line above."""
    files = module_files(root, packages)
    known = set(files)
    problems = []
    for module, path in files.items():
        local = [imp for imp in imports_of(module, path, known) if imp.function_level]
        if not local:
            continue
        comments = _comment_lines(path)
        for imp in local:
            if not comments & set(range(imp.line - 1, imp.end_line + 1)):
                problems.append(f"{module}:{imp.line} imports {imp.target} inside a function without saying why")
    return sorted(set(problems))


# A module past this many lines must say at its top why it is not split (no module doing
# five jobs); the phrase is what a reader searches for.
MAX_MODULE_LINES = 500
LONG_MODULE_PHRASE = "Longer than 500 lines on purpose"


def long_modules_without_a_reason(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """Production modules over MAX_MODULE_LINES whose docstring does not say why."""
    found = []
    for module, path in module_files(root, packages).items():
        text = path.read_text(encoding="utf-8")
        lines = text.count("\n")
        if lines <= MAX_MODULE_LINES:
            continue
        docstring = ast.get_docstring(ast.parse(text)) or ""
        if LONG_MODULE_PHRASE not in docstring:
            found.append(f"{module}: {lines} lines and no reason at its top")
    return found


# The one module that may name DRF's lenient string fields: it subclasses them.
STRICT_FIELDS_MODULE = "leaderboard.api.fields"
LENIENT_FIELDS = frozenset({"CharField", "SlugField", "URLField", "ChoiceField", "ModelSerializer"})
_DRF_FIELD_MODULES = frozenset({"rest_framework.serializers", "rest_framework.fields"})


def lenient_string_fields(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """Uses of DRF's string fields that str() a number (``serializers.CharField``, or the name
    imported from rest_framework) outside the strict fields' module."""
    found = []
    for module, path in module_files(root, packages).items():
        if module == STRICT_FIELDS_MODULE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                if node.value.id == "serializers" and node.attr in LENIENT_FIELDS:
                    found.append(f"{module}:{node.lineno} uses serializers.{node.attr}")
            elif isinstance(node, ast.ImportFrom) and node.module in _DRF_FIELD_MODULES:
                found += [f"{module}:{node.lineno} imports {a.name}" for a in node.names if a.name in LENIENT_FIELDS]
    return sorted(found)


# ---------------------------------------------------------------- the project


@functools.cache
def project_imports() -> tuple[Import, ...]:
    return tuple(all_imports(ROOT))


def test_no_leaderboard_module_outside_the_site_package_imports_submissions() -> None:
    problems = [p for p in forbidden_imports(list(project_imports())) if "leaderboard never" in p]
    assert problems == []


def test_no_module_outside_the_site_package_imports_it() -> None:
    problems = [p for p in forbidden_imports(list(project_imports())) if "site package is the top" in p]
    assert problems == []


def test_scoring_imports_neither_app_nor_django() -> None:
    problems = [p for p in forbidden_imports(list(project_imports())) if "scoring is pure" in p]
    assert problems == []


def test_no_import_cycle_between_project_modules() -> None:
    assert import_cycles(list(project_imports())) == []


def test_every_function_level_import_says_why_in_a_comment() -> None:
    assert uncommented_function_imports(ROOT) == []


def test_every_module_over_500_lines_says_at_its_top_why() -> None:
    assert long_modules_without_a_reason(ROOT) == []


def test_every_api_string_field_refuses_a_number() -> None:
    assert lenient_string_fields(ROOT) == []


def test_the_checks_see_every_package_of_the_project() -> None:
    # A package added at the top level without being listed here would escape every check.
    top_level = {path.parent.name for path in ROOT.glob("*/__init__.py") if path.parent.name not in {"tests", "bench"}}
    assert top_level == set(PACKAGES)


# ---------------------------------------------------------------- the checker can fail


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def synthetic(tmp_path: Path) -> Path:
    return _tree(
        tmp_path,
        {
            "leaderboard/__init__.py": "",
            "leaderboard/models.py": "from django.db import models\n",
            "leaderboard/site/__init__.py": "",
            "leaderboard/site/urls.py": "import submissions.views\nimport leaderboard.views\n",
            "leaderboard/views.py": "from leaderboard import models\n",
            "submissions/__init__.py": "",
            "submissions/views.py": "from leaderboard.models import Run\n",
            "scoring/__init__.py": "",
            "scoring/gap.py": "import math\n",
        },
    )


def test_the_checker_passes_a_tree_that_keeps_the_rules(synthetic: Path) -> None:
    imports = all_imports(synthetic)
    assert forbidden_imports(imports) == []
    assert import_cycles(imports) == []
    assert uncommented_function_imports(synthetic) == []


def test_the_checker_reports_a_leaderboard_module_importing_submissions_even_inside_a_function(
    synthetic: Path,
) -> None:
    _tree(synthetic, {"leaderboard/views.py": "def page():\n    # deferred: why\n    from submissions import views\n"})
    assert forbidden_imports(all_imports(synthetic)) == [
        "leaderboard.views:3 imports submissions.views "
        "(leaderboard never imports submissions; submissions depends on leaderboard)"
    ]


def test_the_checker_reports_an_app_module_importing_the_site_package(synthetic: Path) -> None:
    _tree(synthetic, {"submissions/views.py": "from leaderboard.site.urls import urlpatterns\n"})
    assert forbidden_imports(all_imports(synthetic)) == [
        "submissions.views:1 imports leaderboard.site.urls "
        "(the site package is the top: only it imports both apps, nothing imports it)"
    ]


def test_the_checker_reports_scoring_importing_django(synthetic: Path) -> None:
    _tree(synthetic, {"scoring/gap.py": "from django.conf import settings\n"})
    assert forbidden_imports(all_imports(synthetic)) == [
        "scoring.gap:1 imports django.conf (scoring is pure: no app, no Django)"
    ]


def test_the_checker_reports_a_cycle_through_a_from_import_of_a_module(synthetic: Path) -> None:
    # ``from leaderboard import views`` names the module leaderboard.views, not the package.
    _tree(synthetic, {"leaderboard/models.py": "from leaderboard import views\n"})
    assert import_cycles(all_imports(synthetic)) == [["leaderboard.models", "leaderboard.views"]]


def test_the_checker_ignores_a_cycle_closed_only_inside_a_function(synthetic: Path) -> None:
    _tree(synthetic, {"leaderboard/models.py": "def f():\n    import leaderboard.views  # deferred: why\n"})
    assert import_cycles(all_imports(synthetic)) == []


def test_the_checker_reports_a_function_level_import_without_a_comment(synthetic: Path) -> None:
    _tree(
        synthetic,
        {
            "submissions/views.py": (
                "def a():\n    import json\n\n"
                "def b():\n    # deferred: the reason\n    import json\n\n"
                "def c():\n    import json  # deferred: the reason\n"
            )
        },
    )
    assert uncommented_function_imports(synthetic) == [
        "submissions.views:2 imports json inside a function without saying why"
    ]


def test_the_checker_reports_a_long_module_without_a_reason(synthetic: Path) -> None:
    body = "x = 1\n" * (MAX_MODULE_LINES + 1)
    _tree(
        synthetic,
        {
            "leaderboard/long.py": '"""A long module."""\n' + body,
            "leaderboard/reasoned.py": f'"""A long module.\n\n{LONG_MODULE_PHRASE}: one job."""\n' + body,
        },
    )
    assert [line.split(":")[0] for line in long_modules_without_a_reason(synthetic)] == ["leaderboard.long"]


def test_the_checker_reports_a_plain_drf_string_field_outside_the_strict_fields_module(synthetic: Path) -> None:
    _tree(
        synthetic,
        {
            "leaderboard/api/__init__.py": "",
            "leaderboard/api/fields.py": "from rest_framework import serializers\nF = serializers.CharField\n",
            "submissions/views.py": (
                "from rest_framework import serializers\n"
                "from rest_framework.serializers import SlugField\n"
                "from leaderboard.api.fields import StrictCharField\n"
                "name = serializers.CharField()\n"
                "ok = StrictCharField()\n"
                "count = serializers.IntegerField()\n"
            ),
        },
    )
    assert lenient_string_fields(synthetic) == [
        "submissions.views:2 imports SlugField",
        "submissions.views:4 uses serializers.CharField",
    ]
