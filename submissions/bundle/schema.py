"""Schemas of the members of a ``podium-bundle/1`` or ``podium-bundle/2`` bundle
(docs/bundle-format.md). Version 2 adds the submission challenge: the manifest
names it and every signed object (evaluator result, judge verdict, race run)
carries it inside what its signature covers.

Longer than 500 lines on purpose: one parser per bundle member, mostly declarative field
tables, so each member's rules sit next to the error wording they produce.

Each ``parse_*`` function takes the already-parsed JSON of one member and
returns a frozen dataclass, or raises :class:`BundleError` with code
``schema_error`` (or a more specific one) and a message of the form
``"<member>: <field path> must be <expected>, got <value>"``.  Unknown fields
are refused, so a typo in a harness is caught instead of silently ignored.
"""

from __future__ import annotations

import re
from collections.abc import Set
from dataclasses import dataclass, field
from functools import partial
from itertools import chain
from operator import itemgetter
from typing import Any, NamedTuple

from leaderboard.manifest.types import RACE_TASK_ID_MAX
from scoring.gap import GENRES
from scoring.race import VERDICT_STATUSES, TaskOutcome
from submissions.bundle.errors import BundleError

__all__ = [
    "FORMAT",
    "KINDS",
    "AgentInfo",
    "Episode",
    "EvaluatorResult",
    "FaithfulnessVerdict",
    "Manifest",
    "RaceOutcome",
    "RaceRun",
    "parse_breakdown",
    "parse_faithfulness",
    "parse_manifest",
    "parse_race_run",
    "parse_result",
]

FORMAT_V1 = "podium-bundle/1"
FORMAT_V2 = "podium-bundle/2"
# What new bundles are written as; both are read (a v1 bundle is capped at validated).
FORMAT = FORMAT_V2
FORMATS = (FORMAT_V1, FORMAT_V2)
PAPER_GAP = "paper_gap"
# Retired: a scorecard bundle carried episodes its own harness wrote, so a harness writing
# "solved": true everywhere scored 100%. Scorecards are played on the server instead
# (docs/api.md "Scorecards"); a bundle of this kind is refused with kind_retired.
RETIRED_SCORECARD = "scorecard"
RACE_RUN = "race_run"
KINDS = (PAPER_GAP, RACE_RUN)

_SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_KEY_ID = re.compile(r"^[0-9a-f]{16}$")
_MEMBER_PATH = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./-]{0,254}$")
_MAX_TEXT = 200
_MAX_INT = 2**63 - 1  # the largest value of a database integer column (PostgreSQL bigint)
# secrets.token_urlsafe(32) is 43 characters; leave room for other generators.
_CHALLENGE = re.compile(r"^[A-Za-z0-9_-]{20,64}$")


# ------------------------------------------------------------------ helpers


def _fail(where: str, path: str, expected: str, value: object) -> BundleError:
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return BundleError("schema_error", f"{where}: {path} must be {expected}, got {shown}")


def _obj(where: str, path: str, value: object, required: set[str], optional: Set[str] = frozenset()) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(where, path, "an object", value)
    dups = getattr(value, "duplicates", ())
    if dups:
        raise BundleError("invalid_json", f"{where}: {path} has the key {dups[0]!r} twice")
    missing = sorted(required - value.keys())
    if missing:
        raise BundleError("schema_error", f"{where}: {path} is missing the field {missing[0]!r}")
    extra = sorted(value.keys() - required - optional)
    if extra:
        allowed = ", ".join(sorted(required | optional))
        raise BundleError("schema_error", f"{where}: {path} has an unknown field {extra[0]!r} (allowed: {allowed})")
    return value


def _map(where: str, path: str, value: object, *, duplicate_code: str = "invalid_json") -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(where, path, "an object", value)
    dups = getattr(value, "duplicates", ())
    if dups:
        what = "task" if duplicate_code == "duplicate_task" else "key"
        raise BundleError(duplicate_code, f"{where}: {path} lists the {what} {dups[0]!r} twice")
    return value


def _text(where: str, path: str, value: object, *, max_len: int = _MAX_TEXT, empty: bool = False) -> str:
    if not isinstance(value, str) or (not value and not empty) or len(value) > max_len:
        raise _fail(where, path, f"a {'' if empty else 'non-empty '}string of at most {max_len} characters", value)
    return value


def _slug(where: str, path: str, value: object) -> str:
    if not isinstance(value, str) or not _SLUG.match(value):
        raise _fail(where, path, "a slug (letters, digits, '_', '-', '.'; at most 100 characters)", value)
    return value


def _bool(where: str, path: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise _fail(where, path, "true or false", value)
    return value


def _number(where: str, path: str, value: object, *, minimum: float | None = None, nullable: bool = False) -> Any:
    if value is None and nullable:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(where, path, "a number" + (" or null" if nullable else ""), value)
    if minimum is not None and value < minimum:
        raise _fail(where, path, f"a number >= {minimum:g}", value)
    return float(value)


def _int(where: str, path: str, value: object, *, minimum: int = 0, nullable: bool = False) -> int | None:
    if value is None and nullable:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _fail(where, path, f"an integer >= {minimum}" + (" or null" if nullable else ""), value)
    if value > _MAX_INT:
        # A database integer column holds 64 bits: a larger value failed the verifier's write
        # (PostgreSQL: bigint out of range; SQLite: OverflowError), retried as a server fault.
        raise _fail(where, path, f"an integer of at most {_MAX_INT} (64 bits)", value)
    return value


def _list(where: str, path: str, value: object, *, min_len: int = 0) -> list[Any]:
    if not isinstance(value, list) or len(value) < min_len:
        raise _fail(where, path, f"a list of at least {min_len} item(s)" if min_len else "a list", value)
    return value


def _challenge(where: str, path: str, value: object) -> str:
    if not isinstance(value, str) or not _CHALLENGE.match(value):
        raise _fail(where, path, "a challenge token from the server (20 to 64 of A-Z a-z 0-9 _ -)", value)
    return value


def _signature(where: str, value: object) -> None:
    sig = _obj(where, "signature", value, {"key_id", "alg", "sig"})
    if not isinstance(sig["key_id"], str) or not _KEY_ID.match(sig["key_id"]):
        raise _fail(where, "signature.key_id", "16 lower-case hex digits", sig["key_id"])
    if sig["alg"] != "ed25519":
        raise _fail(where, "signature.alg", "'ed25519'", sig["alg"])
    _text(where, "signature.sig", sig["sig"], max_len=200)


# ----------------------------------------------------------------- manifest


@dataclass(frozen=True)
class AgentInfo:
    name: str
    version: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version}


@dataclass(frozen=True)
class Manifest:
    """manifest.json.  Paper-gap-only fields are None for the other kinds."""

    format: str
    kind: str
    benchmark: str
    release: str
    agent: AgentInfo
    members: dict[str, str]
    required_task_set_hash: str | None = None
    genres: dict[str, str] = field(default_factory=dict)
    effort_tier: str | None = None
    runtime_seconds: float | None = None
    tokens_input: int | None = None
    tokens_output: int | None = None
    # podium-bundle/2: the server's single-use challenge this run was made for.
    challenge: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def bound(self) -> bool:
        """True for a format that binds results to a challenge (v2)."""
        return self.format == FORMAT_V2


_COMMON = {"format", "kind", "benchmark", "release", "agent", "members"}
_PAPER_GAP = {"required_task_set_hash", "tasks", "effort_tier", "runtime_seconds", "tokens"}


def parse_manifest(value: object, *, where: str = "manifest.json") -> Manifest:
    """Validate manifest.json (format and kind first, then the kind's fields)."""
    if not isinstance(value, dict):
        raise _fail(where, "the document", "an object", value)
    fmt, kind = _format_and_kind(value, where)
    required = _COMMON | (_PAPER_GAP if kind == PAPER_GAP else set()) | ({"challenge"} if fmt == FORMAT_V2 else set())
    optional = set() if kind == PAPER_GAP else {"effort_tier", "runtime_seconds", "tokens"}
    doc = _obj(where, "the document", value, required, optional)
    benchmark = _slug(where, "benchmark", doc["benchmark"])
    release = _text(where, "release", doc["release"], max_len=50)
    agent_doc = _obj(where, "agent", doc["agent"], {"name", "version"})
    agent = AgentInfo(
        name=_text(where, "agent.name", agent_doc["name"], max_len=100),
        version=_text(where, "agent.version", agent_doc["version"], max_len=100),
    )
    members = _members(where, doc["members"])
    manifest = Manifest(format=fmt, kind=kind, benchmark=benchmark, release=release, agent=agent, members=members)
    extra = _optional_fields(where, doc, fmt)
    if kind == PAPER_GAP:
        extra.update(_paper_gap_fields(where, doc))
    return Manifest(**{**manifest.__dict__, **extra, "raw": dict(doc)})


def _format_and_kind(value: dict[str, Any], where: str) -> tuple[str, str]:
    """The manifest's format and kind, each one this server accepts."""
    fmt = value.get("format")
    if fmt not in FORMATS:
        shown = fmt if isinstance(fmt, str | int | float | type(None)) else type(fmt).__name__
        raise BundleError(
            "unsupported_format",
            f"{where}: format must be {FORMAT_V2!r} (or the retired {FORMAT_V1!r}), got {shown!r} "
            "(see docs/bundle-format.md)",
        )
    kind = value.get("kind")
    if kind == RETIRED_SCORECARD:
        raise BundleError(
            "kind_retired",
            f"{where}: kind 'scorecard' is no longer accepted: scorecards are played on the server "
            "(POST /api/v1/scorecards/, see docs/api.md), never uploaded",
        )
    if kind not in KINDS:
        raise _fail(where, "kind", "one of " + ", ".join(repr(k) for k in KINDS), kind)
    return fmt, kind


def _members(where: str, value: object) -> dict[str, str]:
    """The members map: relative member paths (not manifest.json itself) to their SHA-256."""
    members: dict[str, str] = {}
    for path, digest in _map(where, "members", value).items():
        if not _MEMBER_PATH.match(path) or ".." in path.split("/") or path == "manifest.json":
            raise _fail(where, f"members[{path!r}]", "a relative member path other than manifest.json", path)
        if not isinstance(digest, str) or not _HEX64.match(digest):
            raise _fail(where, f"members[{path!r}]", "a lower-case hex SHA-256 (64 digits)", digest)
        members[path] = digest
    return members


def _optional_fields(where: str, doc: dict[str, Any], fmt: str) -> dict[str, Any]:
    """The challenge (format v2) and the run's effort, runtime and tokens, where given."""
    extra: dict[str, Any] = {}
    if fmt == FORMAT_V2:
        extra["challenge"] = _challenge(where, "challenge", doc["challenge"])
    if "effort_tier" in doc:
        extra["effort_tier"] = _text(where, "effort_tier", doc["effort_tier"], max_len=50)
    if "runtime_seconds" in doc:
        extra["runtime_seconds"] = _number(where, "runtime_seconds", doc["runtime_seconds"], minimum=0, nullable=True)
    if "tokens" in doc:
        tokens = _obj(where, "tokens", doc["tokens"], {"input", "output"})
        extra["tokens_input"] = _int(where, "tokens.input", tokens["input"], nullable=True)
        extra["tokens_output"] = _int(where, "tokens.output", tokens["output"], nullable=True)
    return extra


def _paper_gap_fields(where: str, doc: dict[str, Any]) -> dict[str, Any]:
    """A paper-gap manifest's required task set hash and its tasks' genres."""
    digest = doc["required_task_set_hash"]
    if not isinstance(digest, str) or not _HEX64.match(digest):
        raise _fail(where, "required_task_set_hash", "a lower-case hex SHA-256 (64 digits)", digest)
    genres: dict[str, str] = {}
    tasks = _map(where, "tasks", doc["tasks"], duplicate_code="duplicate_task")
    if not tasks:
        raise _fail(where, "tasks", "an object with at least one task", tasks)
    for slug, entry in tasks.items():
        _slug(where, f"tasks key {slug!r}", slug)
        task = _obj(where, f"tasks[{slug!r}]", entry, {"genre"})
        if task["genre"] not in GENRES:
            raise _fail(where, f"tasks[{slug!r}].genre", "'reproduction' or 'open'", task["genre"])
        genres[slug] = task["genre"]
    return {"required_task_set_hash": digest, "genres": genres}


# ------------------------------------------------------- evaluator results


class Episode(NamedTuple):
    """One evaluator episode (a NamedTuple: a bundle holds thousands)."""

    seed: int | None
    metric: float | None
    rates: dict[str, float]
    aborted: bool


# An episode is its metric, rates and abort flag. Seed 003: "bundles carry no hidden reference
# solutions or hidden seeds", so an episode names no seed; an older evaluator's optional
# ``seed`` (an int >= 0, unique in the file) is still read, so its results stay valid.
_EPISODE_KEYS = frozenset({"metric", "rates", "aborted"})
_LEGACY_EPISODE_KEYS = _EPISODE_KEYS | {"seed"}
# An episode's (metric, rates, aborted), and a legacy one's (seed, metric, rates, aborted).
_get_row = itemgetter("metric", "rates", "aborted")
_get_legacy_row = itemgetter("seed", "metric", "rates", "aborted")
# Episode((seed, metric, rates, aborted)) without the Python-level NamedTuple constructor.
_episode_from_row = partial(tuple.__new__, Episode)


def _episode_from_seedless_row(row: tuple[Any, Any, Any]) -> Episode:
    return _episode_from_row((None, *row))


def _fast_episode(item: object, seeds: set[int]) -> Episode | None:
    """The episode if it is plainly valid, else None (the slow path then explains why)."""
    if type(item) is not dict or (item.keys() != _EPISODE_KEYS and item.keys() != _LEGACY_EPISODE_KEYS):
        return None
    seed, metric, rates, aborted = item.get("seed"), item["metric"], item["rates"], item["aborted"]
    if seed is not None and (type(seed) is not int or seed < 0 or seed in seeds):
        return None
    if type(aborted) is not bool or type(rates) is not dict:
        return None
    if metric is not None:
        if type(metric) is int:
            metric = float(metric)
        elif type(metric) is not float:
            return None
    for name, rate in rates.items():
        if not (0 < len(name) <= 100) or type(rate) not in (float, int) or rate < 0:
            return None
    if any(type(rate) is int for rate in rates.values()):
        rates = {name: float(rate) for name, rate in rates.items()}
    return Episode(seed, metric, rates, aborted)


@dataclass(frozen=True)
class EvaluatorResult:
    """results/<slug>.json: the evaluator's authoritative per-episode stats."""

    member: str
    task: str
    evaluator_id: str
    simulator: str
    episodes: tuple[Episode, ...]
    signed: bool
    raw: dict[str, Any] = field(repr=False)
    # podium-bundle/2: the challenge inside the signed document.
    challenge: str | None = None


def parse_result(value: object, *, where: str, bound: bool = False) -> EvaluatorResult:
    """Validate one results/<slug>.json (``bound``: a podium-bundle/2 result, which carries the challenge)."""
    required = {"task", "evaluator", "episodes"} | ({"challenge"} if bound else set())
    doc = _obj(where, "the document", value, required, {"signature"})
    task = _slug(where, "task", doc["task"])
    evaluator = _obj(where, "evaluator", doc["evaluator"], {"id", "simulator"}, {"version"})
    evaluator_id = _text(where, "evaluator.id", evaluator["id"], max_len=100)
    simulator = _text(where, "evaluator.simulator", evaluator["simulator"], max_len=100)
    if "version" in evaluator:
        _text(where, "evaluator.version", evaluator["version"], max_len=100)
    items = _list(where, "episodes", doc["episodes"], min_len=1)
    plain = _plain_episodes(items)
    if plain is not None:
        episodes: list[Episode] = plain
    else:
        episodes = _checked_episodes(items, where)
    if "signature" in doc:
        _signature(where, doc["signature"])
    return EvaluatorResult(
        member=where,
        task=task,
        evaluator_id=evaluator_id,
        simulator=simulator,
        episodes=tuple(episodes),
        signed="signature" in doc,
        raw=dict(doc),
        challenge=_challenge(where, "challenge", doc["challenge"]) if bound else None,
    )


_PLAIN_KEY_TYPES = {dict}
_PLAIN_METRIC_TYPES = {float, type(None)}


def _plain_episodes(items: list[Any]) -> list[Episode] | None:
    """All episodes at once when every one is plainly valid, else None (then each is checked
    one by one by :func:`_checked_episodes`, which explains what is wrong).

    The same checks as :func:`_fast_episode`, column by column in C-level loops (a bundle holds
    thousands of episodes): every item an object with exactly metric/rates/aborted (or, all of
    them, a legacy seed too: ints >= 0 and unique); metrics floats or null; aborted bools; rates
    objects whose names are 1..100 characters and whose values are floats >= 0 (JSON floats are
    finite: parse_json refuses the rest). Integer metrics or rates are valid too but take the
    one-by-one path, which converts them to floats.
    """
    # Exactly the keys: as many of them, and each of them there (no frozenset per episode).
    if set(map(type, items)) != _PLAIN_KEY_TYPES:
        return None
    sizes = set(map(len, items))
    legacy = sizes == {len(_LEGACY_EPISODE_KEYS)}
    if not legacy and sizes != {len(_EPISODE_KEYS)}:
        return None
    try:
        rows = list(map(_get_legacy_row if legacy else _get_row, items))
    except KeyError:
        return None
    if legacy:
        seeds, metrics, rates, aborted = zip(*rows, strict=True)
        if set(map(type, seeds)) != {int} or min(seeds) < 0 or len(set(seeds)) != len(seeds):
            return None
    else:
        metrics, rates, aborted = zip(*rows, strict=True)
    if (
        not set(map(type, metrics)) <= _PLAIN_METRIC_TYPES
        or set(map(type, aborted)) != {bool}
        or set(map(type, rates)) != _PLAIN_KEY_TYPES
    ):
        return None
    names = set().union(*rates)
    if any(not 0 < len(name) <= 100 for name in names):
        return None
    values = list(chain.from_iterable(map(dict.values, rates)))
    if values and (set(map(type, values)) != {float} or min(values) < 0):
        return None
    return list(map(_episode_from_row if legacy else _episode_from_seedless_row, rows))


def _checked_episodes(items: list[Any], where: str) -> list[Episode]:
    """Episode by episode, naming the first invalid field (and converting integer numbers)."""
    episodes: list[Episode] = []
    seeds: set[int] = set()
    for index, item in enumerate(items):
        fast = _fast_episode(item, seeds)
        if fast is not None:
            if fast.seed is not None:
                seeds.add(fast.seed)
            episodes.append(fast)
            continue
        path = f"episodes[{index}]"
        ep = _obj(where, path, item, set(_EPISODE_KEYS), {"seed"})
        seed = None
        if "seed" in ep:
            seed = _int(where, f"{path}.seed", ep["seed"])
            assert seed is not None
            if seed in seeds:
                raise _fail(where, f"{path}.seed", "unique within the task", seed)
            seeds.add(seed)
        rates = {
            _text(where, f"{path}.rates key", metric, max_len=100): _number(
                where, f"{path}.rates[{metric!r}]", rate, minimum=0
            )
            for metric, rate in _map(where, f"{path}.rates", ep["rates"]).items()
        }
        episodes.append(
            Episode(
                seed=seed,
                metric=_number(where, f"{path}.metric", ep["metric"], nullable=True),
                rates=rates,
                aborted=_bool(where, f"{path}.aborted", ep["aborted"]),
            )
        )
    return episodes


# -------------------------------------------------- breakdown, faithfulness


def parse_breakdown(value: object, *, where: str = "score_breakdown.json") -> dict[str, Any]:
    """The claimed breakdown: only its outline is checked here; every leaf is
    compared with the recomputation (differences are a mismatch, not a rejection)."""
    doc = _obj(where, "the document", value, {"tasks", "aggregates"})
    _map(where, "tasks", doc["tasks"], duplicate_code="duplicate_task")
    _map(where, "aggregates", doc["aggregates"])
    return doc


@dataclass(frozen=True)
class FaithfulnessVerdict:
    faithful: bool
    judge: str
    # podium-bundle/2, a judge-signed verdict: the task, rubric and challenge the signature covers.
    rubric_version: str | None = None
    challenge: str | None = None
    signed: bool = False
    # The SHA-256 (hex) of the judged results' signed bytes (docs/bundle-format.md 11.3), inside
    # the signed verdict; None for a verdict signed before verdicts named what they judged.
    results_sha256: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


_SIGNED_VERDICT = {"task", "faithful", "judge", "rubric_version", "challenge", "signature"}
# Optional in a signed verdict: a verdict without it is still read (signed before the field
# existed), but it attests nothing (evaluate._attestation_caps): it could belong to any attempt.
_SIGNED_VERDICT_OPTIONAL = frozenset({"results_sha256"})


def parse_faithfulness(
    value: object, *, where: str = "faithfulness.json", bound: bool = False
) -> dict[str, FaithfulnessVerdict]:
    """faithfulness.json: ``{slug: {"faithful": bool, "judge": str}}`` (self-declared), or in
    podium-bundle/2 also ``{slug: {"task", "faithful", "judge", "rubric_version", "challenge",
    "results_sha256", "signature"}}``: a verdict signed by a registered judge key, whose signature
    covers the task, the rubric version, the challenge and the judged results' digest together
    with the verdict (``results_sha256`` is optional to read; without it the verdict attests nothing)."""
    verdicts: dict[str, FaithfulnessVerdict] = {}
    for slug, entry in _map(where, "the document", value, duplicate_code="duplicate_task").items():
        _slug(where, f"key {slug!r}", slug)
        signed = bound and isinstance(entry, dict) and "signature" in entry
        item = (
            _obj(where, slug, entry, _SIGNED_VERDICT, _SIGNED_VERDICT_OPTIONAL)
            if signed
            else _obj(where, slug, entry, {"faithful", "judge"})
        )
        results_sha256 = None
        if signed:
            if item["task"] != slug:
                raise _fail(where, f"{slug}.task", f"the task it is keyed under ({slug!r})", item["task"])
            _signature(f"{where}: {slug}", item["signature"])
            if "results_sha256" in item:
                results_sha256 = item["results_sha256"]
                if not isinstance(results_sha256, str) or not _HEX64.match(results_sha256):
                    raise _fail(
                        where,
                        f"{slug}.results_sha256",
                        "the SHA-256 of the judged results' signed bytes, 64 lowercase hex digits",
                        results_sha256,
                    )
        verdicts[slug] = FaithfulnessVerdict(
            faithful=_bool(where, f"{slug}.faithful", item["faithful"]),
            judge=_text(where, f"{slug}.judge", item["judge"], max_len=100),
            rubric_version=_text(where, f"{slug}.rubric_version", item["rubric_version"], max_len=100)
            if signed
            else None,
            challenge=_challenge(where, f"{slug}.challenge", item["challenge"]) if signed else None,
            signed=signed,
            results_sha256=results_sha256,
            raw=dict(item),
        )
    return verdicts


# ----------------------------------------------------------------- race run


@dataclass(frozen=True)
class RaceOutcome:
    task_id: str
    order_placed: bool
    verdict_status: str | None
    reward: float | None
    agent_error: bool
    step_limit_hit: bool
    time_limit_hit: bool
    env_error: bool
    verifier_error: bool
    claimed_paid_reward: float
    claimed_failure: str | None

    def to_scoring(self) -> Any:
        """As :class:`scoring.race.TaskOutcome` (paid reward and failure are recomputed)."""
        return TaskOutcome(
            task_id=self.task_id,
            order_placed=self.order_placed,
            verdict_status=self.verdict_status,
            reward=self.reward,
            agent_error=self.agent_error,
            step_limit_hit=self.step_limit_hit,
            time_limit_hit=self.time_limit_hit,
            env_error=self.env_error,
            verifier_error=self.verifier_error,
        )


@dataclass(frozen=True)
class RaceRun:
    """race_run.json: one validator's run of one agent version."""

    validator: str
    race: int | None
    agent: AgentInfo
    outcomes: tuple[RaceOutcome, ...]
    claimed_status: str
    claimed_run_score: float | None
    raw: dict[str, Any] = field(repr=False)
    challenge: str | None = None


_OUTCOME_FIELDS = {
    "task_id",
    "order_placed",
    "verdict_status",
    "reward",
    "agent_error",
    "step_limit_hit",
    "time_limit_hit",
    "env_error",
    "verifier_error",
    "paid_reward",
    "failure",
}


def parse_race_run(value: object, *, where: str = "race_run.json", bound: bool = False) -> RaceRun:
    if isinstance(value, dict) and "signature" not in value:
        raise BundleError(
            "missing_signature", f"{where}: a race run must carry the validator's Ed25519 signature (field 'signature')"
        )
    required = {"validator", "race", "agent", "outcomes", "claimed", "signature"} | ({"challenge"} if bound else set())
    doc = _obj(where, "the document", value, required)
    validator = _text(where, "validator", doc["validator"], max_len=100)
    race = _int(where, "race", doc["race"], minimum=1, nullable=True)
    agent_doc = _obj(where, "agent", doc["agent"], {"name", "version"})
    agent = AgentInfo(
        name=_text(where, "agent.name", agent_doc["name"], max_len=100),
        version=_text(where, "agent.version", agent_doc["version"], max_len=100),
    )
    outcomes: list[RaceOutcome] = []
    seen: set[str] = set()
    for index, item in enumerate(_list(where, "outcomes", doc["outcomes"])):
        path = f"outcomes[{index}]"
        o = _obj(where, path, item, _OUTCOME_FIELDS)
        task_id = _text(where, f"{path}.task_id", o["task_id"], max_len=RACE_TASK_ID_MAX)
        if task_id in seen:
            raise BundleError("duplicate_task", f"{where}: {path}.task_id {task_id!r} is reported twice")
        seen.add(task_id)
        status = o["verdict_status"]
        if status is not None and status not in VERDICT_STATUSES:
            raise _fail(where, f"{path}.verdict_status", "'accepted', 'rejected' or null", status)
        failure = o["failure"]
        if failure is not None:
            _text(where, f"{path}.failure", failure, max_len=50)
        outcomes.append(
            RaceOutcome(
                task_id=task_id,
                order_placed=_bool(where, f"{path}.order_placed", o["order_placed"]),
                verdict_status=status,
                reward=_number(where, f"{path}.reward", o["reward"], minimum=0, nullable=True),
                agent_error=_bool(where, f"{path}.agent_error", o["agent_error"]),
                step_limit_hit=_bool(where, f"{path}.step_limit_hit", o["step_limit_hit"]),
                time_limit_hit=_bool(where, f"{path}.time_limit_hit", o["time_limit_hit"]),
                env_error=_bool(where, f"{path}.env_error", o["env_error"]),
                verifier_error=_bool(where, f"{path}.verifier_error", o["verifier_error"]),
                claimed_paid_reward=_number(where, f"{path}.paid_reward", o["paid_reward"], minimum=0),
                claimed_failure=failure,
            )
        )
    claimed = _obj(where, "claimed", doc["claimed"], {"status", "run_score"})
    if claimed["status"] not in ("ok", "failed", "infrastructure_failure"):
        raise _fail(where, "claimed.status", "'ok', 'failed' or 'infrastructure_failure'", claimed["status"])
    _signature(where, doc["signature"])
    return RaceRun(
        validator=validator,
        race=race,
        agent=agent,
        outcomes=tuple(outcomes),
        claimed_status=claimed["status"],
        claimed_run_score=_number(where, "claimed.run_score", claimed["run_score"], minimum=0, nullable=True),
        raw=dict(doc),
        challenge=_challenge(where, "challenge", doc["challenge"]) if bound else None,
    )


def check_no_duplicate_keys(value: object, *, where: str) -> None:
    """Raise invalid_json for any object anywhere in ``value`` with a repeated key.

    Walks only documents that :func:`parse_json` flagged (the common case costs nothing).
    Iterative, and the path is spelled only for the object refused: built at every level, a
    deep document under long keys held depth x size characters (gigabytes from 14 MB).
    """
    if not getattr(value, "nested_duplicates", False):
        return
    # (value, its link): a link is (key or index, the parent's link); None at the top.
    stack: list[tuple[object, tuple[object, Any] | None]] = [(value, None)]
    while stack:
        item, link = stack.pop()
        if isinstance(item, dict):
            duplicates = getattr(item, "duplicates", ())
            if duplicates:
                raise BundleError(
                    "invalid_json",
                    f"{where}: {_spelled_path(link)} has the key {_shown_key(duplicates[0])} twice",
                )
            # Reversed: popped in document order, so the first repeated key is the one reported.
            stack.extend((child, (key, link)) for key, child in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((child, (index, link)) for index, child in reversed(list(enumerate(item))))


# How much of a refused key or path a message quotes: enough to find it, never the document.
_SHOWN_KEY_CHARS = 60
_SHOWN_PATH_PARTS = 8


def _shown_key(key: object) -> str:
    text = str(key)
    return repr(text if len(text) <= _SHOWN_KEY_CHARS else text[:_SHOWN_KEY_CHARS] + "...")


def _spelled_path(link: tuple[object, Any] | None) -> str:
    parts: list[str] = []
    while link is not None:
        part, link = link
        parts.append(f"[{part}]" if isinstance(part, int) else "." + _shown_key(part)[1:-1])
    if not parts:
        return "the document"
    parts.reverse()
    if len(parts) > _SHOWN_PATH_PARTS:
        parts = [*parts[:2], f".({len(parts) - 4} more)", *parts[-2:]]
    spelled = "".join(parts)
    # A path into a top-level list reads from the document ("the document[0]"), as it always did.
    return spelled[1:] if spelled.startswith(".") else f"the document{spelled}"
