"""The automated review gates of seed 003 (pure: no Django).

* Contract review: the task's simulator is a registered evaluator, and the
  contract is consistent (a penalty is a separate safety metric, never the
  headline metric; ``mode: read_from_task_config`` carries the ``eval_config``
  that fixes the procedure, and only that mode does). Allowed values of mode,
  metric direction, genre, platform and direction are checked while parsing
  (leaderboard.manifest.task_parser), so a contract reaching this gate parsed cleanly.
* Leak audit: paper.md, brief.md, sandbox/Dockerfile and the other text files of sandbox/ (the
  files mounted in or built into the agent's sandbox) never mention the task's anchor value,
  never mention the hidden ``reference/`` path, and the Dockerfile never
  COPYs/ADDs ``reference/`` (nor reaches above sandbox/ with ``..``).
* Published text: what the site shows everyone from release.yaml and task.yaml beside those
  files (the release's title and notes, the benchmark's name and description, each task's
  title) never mentions a withheld anchor of any task of the release.

Every problem names the file relative to the manifest and the line. A leak
message never repeats the anchor: it says *that* the value appears, not what
it is.

How a number "mentions the anchor" (documented in docs/manifest.md): a
standalone number in the text equals the anchor (0.7 = 0.70 = .7), or as a
percentage equals 100 x anchor (70%, 70 %, 70 percent), or is the anchor
rounded to the decimals written (0.734 -> "0.73", "73%") when that rounding
keeps at least two significant digits. Numbers right after Table/Figure/
Section/Eq./Appendix or inside [..] citations of whole numbers ([12], [3, 12]) are
references, not values; version pins (pkg==0.5) and, on a line naming an image (FROM,
docker pull/run), image tags (base:0.5) are versions. A unit written onto a number
("9.8s", "0.21m") keeps it a number.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Collection, Iterable, Mapping
from pathlib import PurePosixPath
from typing import Any

from leaderboard.manifest.types import (
    RELEASE_FILE,
    ParsedManifest,
    Problem,
    ReleaseManifest,
    TaskContract,
    TaskTexts,
)

__all__ = [
    "contract_review",
    "leak_audit",
    "mentions_anchor",
    "published_text_audit",
    "review_manifest",
    "review_parsed",
]


# ----------------------------------------------------------- contract review


def contract_review(task: TaskContract, *, known_simulators: Collection[str]) -> list[Problem]:
    """Problems with one parsed task contract (empty when it passes)."""
    file = f"{task.directory}/task.yaml"
    problems: list[Problem] = []
    if task.simulator not in known_simulators:
        known = ", ".join(sorted(known_simulators)) or "none registered"
        problems.append(
            Problem(
                file,
                task.lines.get("simulator"),
                "simulator",
                f"expected a registered evaluator ({known}), got {task.simulator!r}; "
                "declare it under evaluators in release.yaml or register it in the admin",
            )
        )
    for index, penalty in enumerate(task.penalties):
        if penalty.metric == task.metric_name:
            problems.append(
                Problem(
                    file,
                    task.lines.get(f"penalties[{index}].metric"),
                    f"penalties[{index}].metric",
                    f"expected a zero-target safety metric other than the headline metric {task.metric_name!r}",
                )
            )
    if task.mode == "read_from_task_config" and not task.eval_config:
        problems.append(
            Problem(
                file,
                task.lines.get("mode"),
                "mode",
                "read_from_task_config fixes the eval procedure in config: expected a non-empty eval_config mapping",
            )
        )
    if task.mode != "read_from_task_config" and task.eval_config is not None:
        problems.append(
            Problem(
                file,
                task.lines.get("eval_config"),
                "eval_config",
                f"only mode read_from_task_config reads eval_config; this task's mode is {task.mode}",
            )
        )
    problems.extend(_eval_config_leaks(task, file))
    return problems


def _scalars(value: Any, path: str) -> Iterable[tuple[str, Any]]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _scalars(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _scalars(item, f"{path}[{index}]")
    else:
        yield path, value


def _eval_config_leaks(task: TaskContract, file: str) -> list[Problem]:
    """eval_config is published with the contract (the task page, /api/v1/tasks/): a value in it
    that writes the anchor (say ``target: 0.7331``) would publish a withheld one. The same test
    as the leak audit's for agent-visible text."""
    if task.paper_value is None or not task.eval_config:
        return []
    return [
        Problem(
            file,
            task.lines.get("eval_config"),
            path,
            f"mentions the anchor value of task {task.slug!r}; eval_config is published with the contract "
            "(the anchor belongs in release.yaml only)",
        )
        for path, value in _scalars(task.eval_config, "eval_config")
        if not isinstance(value, bool) and value is not None and mentions_anchor(str(value), task.paper_value)
    ]


# ---------------------------------------------------------------- leak audit

# A standalone number: not glued to a word or dot before it, nor to another digit (so "v0.5",
# "1.2.3" and "x86" are not numbers), optional thousands commas, optional percent. A unit
# written onto it ("9.8s", "0.21m", "12ms", "0.5x") keeps it a number -- the usual way to write
# a measured result; what stops it is an identifier or exponent going on after the letters
# ("0x1F", "3d2", "1e-3", "5_000") or a word of five letters or more ("70percent").
_NUMBER = re.compile(
    r"(?<![\w.])(?P<number>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(?!\.?\d)"
    r"(?![eE][+-]?\d)(?![A-Za-z]*[\d_])(?![A-Za-z]{5})"
    r"(?P<percent>\s?(?:%|percent\b))?",
)
_CITATION_BEFORE = re.compile(
    r"(?:\btables?|\btab\.|\bfigures?|\bfigs?\.|\bsections?|\bsec\.|\bsecs?\.|\beqs?\.|\bequations?|\bappendix|"
    r"\balgorithm|\balg\.|\bref\.|§|\bchapter|\bline)\s*$",
    re.IGNORECASE,
)
# A citation in brackets, "[12]" or "[3, 12]": whole numbers only ("[0.96]" is a value).
_BRACKET_BEFORE = re.compile(r"\[(?:\s*\d+\s*[,;\u2013-])*\s*$")
# Version pins (pkg==0.5, >=0.5) are versions, not values; a plain assignment (ENV TARGET=0.96)
# is still a value.
_PIN_BEFORE = re.compile(r"[=<>~!]=$")
# An image tag (base:0.5) is a version only where an image is named: a Dockerfile FROM (or
# --from=) and a docker pull/run; elsewhere "success_rate:0.96" is a value.
_TAG_BEFORE = re.compile(r"[\w\]]:$")
_IMAGE_LINE = re.compile(r"^\s*FROM\s|--from=|\bdocker\s+(?:pull|run)\b", re.IGNORECASE)
_URL = re.compile(r"https?://\S+")
_REFERENCE_PATH = re.compile(r"(?<![\w-])reference/")


def _significant_digits(token: str) -> int:
    digits = token.replace(",", "").replace(".", "").lstrip("0")
    return len(digits)


# A word saying the number after it is rounded: "about 47" for 47.3 states the anchor.
_APPROXIMATE_BEFORE = re.compile(
    r"(?:\babout|\baround|\broughly|\bapproximately|\bapprox\.|\bnearly|\balmost|\bclose to|~|\u2248)\s*$",
    re.IGNORECASE,
)


def _number_matches(token: str, percent: bool, anchor: float, *, approximate: bool = False) -> bool:
    value = float(token.replace(",", ""))
    decimals = len(token.split(".", 1)[1]) if "." in token else 0
    candidates = [anchor * 100.0, anchor] if percent else [anchor]
    for candidate in candidates:
        if math.isclose(value, candidate, rel_tol=1e-9, abs_tol=1e-12):
            return True
        # A rounded rendering (decimals, a percent sign, or a whole number said to be rounded:
        # "about 47"; two significant digits or more) leaks the anchor too: value is the
        # candidate rounded to the decimals written. A bare whole number is not taken for a
        # rounding: prose is full of counts ("47 tasks", "100 episodes").
        rounded_form = (decimals > 0 or percent or approximate) and _significant_digits(token) >= 2
        if rounded_form and abs(candidate - value) <= 0.5 * 10.0**-decimals + 1e-12:
            return True
    return False


def _is_reference_or_version(number: str, before: str, names_image: bool) -> bool:
    """Whether a number written after ``before`` cites (Table 3, [12]) or versions (==0.5, and
    base:0.5 on a line that names an image) rather than states a value."""
    if _CITATION_BEFORE.search(before) or _PIN_BEFORE.search(before):
        return True
    if "." not in number and _BRACKET_BEFORE.search(before):
        return True
    return names_image and _TAG_BEFORE.search(before) is not None


def mentions_anchor(line: str, anchor: float) -> bool:
    """True when ``line`` writes ``anchor`` in one of its textual forms (see the module docs)."""
    text = _URL.sub(" ", line)
    names_image = _IMAGE_LINE.search(text) is not None
    for match in _NUMBER.finditer(text):
        before = text[max(0, match.start() - 16) : match.start()]
        if _is_reference_or_version(match.group("number"), before, names_image):
            continue
        approximate = _APPROXIMATE_BEFORE.search(before) is not None
        if _number_matches(match.group("number"), bool(match.group("percent")), anchor, approximate=approximate):
            return True
    return False


def _dockerfile_instructions(text: str) -> Iterable[tuple[int, str]]:
    """(first line number, instruction text) with backslash continuations joined."""
    start = 0
    parts: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not parts:
            start = number
            if not stripped or stripped.startswith("#"):
                continue
        elif stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            parts.append(stripped[:-1])
            continue
        parts.append(stripped)
        yield start, " ".join(parts)
        parts = []
    if parts:
        yield start, " ".join(parts)


def _copy_sources(arguments: str) -> list[str]:
    arguments = arguments.strip()
    if arguments.startswith("["):
        try:
            values = json.loads(arguments)
        except (ValueError, RecursionError):  # RecursionError: brackets nested past the parser's limit
            values = None
        if isinstance(values, list) and all(isinstance(v, str) for v in values):
            return values[:-1]
    try:
        words = shlex.split(arguments)
    except ValueError:
        words = arguments.split()
    words = [word for word in words if not word.startswith("--")]
    return words[:-1]


def _copies_reference(source: str) -> bool:
    return "reference" in PurePosixPath(source.strip().rstrip("/") or "/").parts


def _reaches_above(source: str) -> bool:
    return ".." in PurePosixPath(source.strip()).parts


def leak_audit(texts: TaskTexts) -> list[Problem]:
    """Problems in the agent-visible files of one task (empty when it passes)."""
    problems: list[Problem] = []
    for relpath in sorted(texts.files):
        text = texts.files[relpath]
        copy_lines: set[int] = set()
        if relpath.endswith("/Dockerfile"):
            for number, instruction in _dockerfile_instructions(text):
                word, _, arguments = instruction.partition(" ")
                verb = word.upper()
                if verb not in {"COPY", "ADD"}:
                    continue
                sources = _copy_sources(arguments)
                if any(_copies_reference(source) for source in sources):
                    copy_lines.add(number)
                    problems.append(
                        Problem(
                            relpath,
                            number,
                            "",
                            f"{verb} copies the hidden reference/ tree into the sandbox image; "
                            "it must stay outside the build context",
                        )
                    )
                elif any(_reaches_above(source) for source in sources):
                    copy_lines.add(number)
                    problems.append(
                        Problem(
                            relpath,
                            number,
                            "",
                            f"{verb} reaches above sandbox/ (..), which would bring the hidden reference/ tree "
                            "into the image",
                        )
                    )
        for number, line in enumerate(text.splitlines(), start=1):
            if texts.paper_value is not None and mentions_anchor(line, texts.paper_value):
                problems.append(
                    Problem(
                        relpath,
                        number,
                        "",
                        f"mentions the anchor value of task {texts.slug!r}; the agent must never see it "
                        "(describe the result without the number)",
                    )
                )
            if number not in copy_lines and _REFERENCE_PATH.search(_URL.sub(" ", line)):
                problems.append(
                    Problem(
                        relpath,
                        number,
                        "",
                        "mentions the hidden reference/ path; it is never mounted into the sandbox, remove the mention",
                    )
                )
    return problems


# ------------------------------------------------------------ published text


def published_text_audit(manifest: ReleaseManifest) -> list[Problem]:
    """Problems in the text the site publishes from the manifest outside the task files: the
    release's title and notes, the benchmark's name and description (release.yaml) and each
    task's title (task.yaml). They are on the release, board and task pages and in the API for
    everyone once the release is published, so none may mention a withheld anchor of any task of
    the release, by the leak audit's number rule: notes saying "re-anchors Lift to 0.96" published
    the anchor the release withholds."""
    withheld = [
        (task.slug, task.paper_value)
        for task in manifest.tasks
        if task.paper_value is not None and not task.anchor_published
    ]
    if not withheld:
        return []
    texts: list[tuple[str, int | None, str, str]] = [
        (RELEASE_FILE, manifest.lines.get("title"), "title", manifest.title),
        (RELEASE_FILE, manifest.lines.get("notes"), "notes", manifest.notes),
        (RELEASE_FILE, manifest.lines.get("benchmark.name"), "benchmark.name", manifest.benchmark.name),
        (
            RELEASE_FILE,
            manifest.lines.get("benchmark.description"),
            "benchmark.description",
            manifest.benchmark.description,
        ),
        *((f"{task.directory}/task.yaml", task.lines.get("title"), "title", task.title) for task in manifest.tasks),
    ]
    return [
        Problem(
            file,
            line,
            path,
            f"mentions the withheld anchor value of task {slug!r}; this text is published to everyone "
            "(describe it without the number)",
        )
        for file, line, path, text in texts
        for slug, anchor in withheld
        if any(mentions_anchor(text_line, anchor) for text_line in text.splitlines())
    ]


# ------------------------------------------------------------------- entries


def review_parsed(parsed: ParsedManifest, *, known_simulators: Collection[str]) -> list[Problem]:
    """Both gates over whatever parsed (the leak audit runs even where task.yaml is broken).

    ``known_simulators`` are the registered evaluators; the evaluators the
    manifest itself declares count as registered (sync registers them).
    """
    known = set(known_simulators) | {evaluator.simulator for evaluator in parsed.evaluators}
    problems: list[Problem] = []
    for task in parsed.tasks:
        problems.extend(contract_review(task, known_simulators=known))
    for texts in parsed.texts:
        problems.extend(leak_audit(texts))
    if parsed.manifest is not None:  # release.yaml's own fields parsed (else its problems fail the sync)
        problems.extend(published_text_audit(parsed.manifest))
    return problems


def review_manifest(manifest: ReleaseManifest, *, known_simulators: Collection[str]) -> list[Problem]:
    """Both gates over a loaded manifest."""
    parsed = ParsedManifest(
        manifest=manifest,
        tasks=list(manifest.tasks),
        evaluators=list(manifest.evaluators),
        problems=[],
        texts=[_texts_of(task) for task in manifest.tasks],
    )
    return review_parsed(parsed, known_simulators=known_simulators)


def _texts_of(task: TaskContract) -> TaskTexts:
    files: Mapping[str, str | None] = {
        f"{task.directory}/paper.md": task.paper_md,
        f"{task.directory}/brief.md": task.brief_md,
        f"{task.directory}/sandbox/Dockerfile": task.sandbox_dockerfile,
    }
    return TaskTexts(task.slug, task.paper_value, {k: v for k, v in files.items() if v is not None})
