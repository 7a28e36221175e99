"""HTML pages of paper-gap benchmarks: home, leaderboard, release, task, agent (the run page:
leaderboard.views.run_page)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import yaml
from django.conf import settings
from django.core.cache import cache
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_safe

from leaderboard.api.serializers import contract_without_anchor
from leaderboard.disclosure import WITHHELD_SCORE_REASON, run_disclosure
from leaderboard.markdown import render_markdown
from leaderboard.models import Benchmark, ReleaseTask, Standing
from leaderboard.selectors import paper_gap as selectors
from leaderboard.selectors.declarations import LEVELS, WEIGHTS, agent_versions_declared, board_baselines
from leaderboard.selectors.paper_gap import TABS, BoardQueryError, BoardRow
from leaderboard.selectors.race import agent_race_versions
from leaderboard.selectors.release_diff import release_diff_rows
from leaderboard.selectors.releases import release_previous
from leaderboard.selectors.scorecard import agent_scorecards
from leaderboard.selectors.task_ranking import task_ranking
from leaderboard.selectors.visibility import benchmarks_visible, viewer_is_staff
from leaderboard.templatetags.podium import duration, percent, ratio, tokens
from leaderboard.views.declarations import cost_cell, declared_line

# Anonymous board pages are cached this long (and keyed by Release.generation).
BOARD_CACHE_SECONDS = 60

# Columns of the board: (sort key, heading, note shown under the heading).
BOARD_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("rank", "Rank", ""),
    ("agent", "Agent", ""),
    ("score", "Score", "ratio, 95% CI"),
    ("pass_rate", "Pass rate", "episodes"),
    ("coverage", "Coverage", "tasks"),
    # From the unsigned manifest.json: the submitter's figures (docs/scoring.md "Runtime and tokens").
    ("runtime", "Runtime", "submitter-reported"),
    ("tokens", "Tokens", "submitter-reported"),
    ("cost", "Cost", "USD, labelled"),
    ("effort", "Effort tier", "submitter-declared"),
    ("verification", "Verification", ""),
    ("date", "Date", "verified"),
)


@dataclass(frozen=True)
class BoardCells:
    """One board row with its cells formatted once in Python: a 50-row page renders
    in a few milliseconds instead of resolving a dozen filters per row in the template."""

    standing: Standing
    overlaps_above: bool
    score: str
    ci: str
    pass_rate: str
    runtime: str
    tokens: str
    cost: SafeString
    declared: SafeString
    verified_iso: str
    verified_day: str
    # (covered, required) over the tab's genre; None on Overall (the Standing's own figures).
    tab_coverage: tuple[int, int] | None = None

    def html(self, run_url_prefix: str) -> SafeString:
        """The row's <tr>; every value passes through format_html's escaping."""
        s = self.standing
        tie = (
            mark_safe(
                ' <abbr class="tie" title="Confidence interval overlaps the row above: '
                'statistically indistinguishable">\u2248</abbr>'
            )
            if self.overlaps_above
            else ""
        )
        # Partial runs rank after every complete run (seed 000: not comparable to a full run);
        # the mark and the tag say so where the order would otherwise surprise.
        partial_mark = (
            mark_safe(
                ' <abbr class="partial-mark" title="Partial coverage: ranked after every complete run">\u25d0</abbr>'
            )
            if not s.complete
            else ""
        )
        covered, required = self.tab_coverage or (s.covered, s.required)
        if s.complete:
            partial = ""
        elif self.tab_coverage is not None:
            partial = format_html(
                '<span class="tag tag--warn">partial run ({}/{} tasks overall): not comparable to a full run, '
                "ranked after complete runs</span>",
                s.covered,
                s.required,
            )
        else:
            partial = mark_safe(
                '<span class="tag tag--warn">not comparable to a full run: ranked after complete runs</span>'
            )
        return format_html(
            '<tr{}><td class="num rank">{}{}{}</td>'
            '<th scope="row" class="agent"><a href="{}{}/">{}</a> <span class="version-chip">{}</span>{}'
            ' <span class="badge badge--{} phone-only">{}</span></th>'
            '<td class="num score"><strong>{}</strong>{}</td>'
            '<td class="num">{}</td>'
            '<td class="num coverage">{}/{}{}</td>'
            '<td class="num col-runtime">{}</td><td class="num col-tokens">{}</td>'
            '<td class="num cost col-cost">{}</td><td class="col-effort">{}</td>'
            '<td class="col-verification"><span class="badge badge--{}">{}</span></td>'
            '<td class="date col-date"><time datetime="{}">{}</time></td></tr>\n',
            mark_safe(' class="row--partial"') if not s.complete else "",
            s.rank,
            tie,
            partial_mark,
            run_url_prefix,
            s.run_id,
            s.agent_name,
            s.version,
            self.declared,
            s.verification,
            s.verification,
            self.score,
            format_html('<span class="ci">{}</span>', self.ci) if self.ci else "",
            self.pass_rate,
            covered,
            required,
            partial,
            self.runtime,
            self.tokens,
            self.cost,
            s.effort_tier or "\u2014",
            s.verification,
            s.verification,
            self.verified_iso,
            self.verified_day,
        )

    @classmethod
    def of(cls, row: BoardRow, tab_coverage: dict[int, tuple[int, int]] | None = None) -> BoardCells:
        s = row.standing
        has_ci = s.ci_low is not None and s.ci_high is not None
        return cls(
            standing=s,
            overlaps_above=row.overlaps_above,
            score=ratio(s.score),
            ci=f"{ratio(s.ci_low)}\u2013{ratio(s.ci_high)}" if has_ci else "",
            pass_rate=percent(s.pass_rate),
            runtime=duration(s.runtime_seconds),
            tokens=tokens(s.tokens),
            cost=cost_cell(s),
            declared=declared_line(s),
            verified_iso=s.verified_at.isoformat() if s.verified_at else "",
            verified_day=s.verified_at.strftime("%Y-%m-%d") if s.verified_at else "",
            tab_coverage=(tab_coverage or {}).get(s.run_id),
        )


def _board_cache_key(request: HttpRequest, benchmark: str, version: str) -> str | None:
    """The cache key of an anonymous visitor's board page, or None when it must be rendered.

    Only requests without a session or messages cookie are cached: their page
    is the same for everyone (no user name, no CSRF token). The key includes
    Release.generation, which standings_refresh bumps, read through a pointer
    cached for RELEASE_POINTER_SECONDS, so a cached page costs no query and a
    newly verified run shows within that delay.
    """
    if settings.SESSION_COOKIE_NAME in request.COOKIES or "messages" in request.COOKIES:
        return None
    pointer = selectors.release_pointer(benchmark_slug=benchmark, version=version)
    if pointer is None:
        return None  # not published (or absent): rendered, which 404s for visitors
    release_id, generation = pointer
    path = hashlib.sha256(request.get_full_path().encode()).hexdigest()[:32]
    return f"podium:board:{release_id}:{generation}:{path}"


def bad_request(request: HttpRequest, message: str) -> HttpResponse:
    """A 400 page stating what was wrong with the request."""
    body = render_to_string("leaderboard/bad_request.html", {"message": message}, request=request)
    return HttpResponseBadRequest(body)


@require_safe
def healthz(request: HttpRequest) -> HttpResponse:
    """Liveness probe, and the baseline the leaderboard bench compares against."""
    return HttpResponse("ok", content_type="text/plain")


@require_safe
def home(request: HttpRequest) -> HttpResponse:
    return render(
        request, "leaderboard/home.html", {"entries": selectors.home_entries(staff=viewer_is_staff(request.user))}
    )


@require_safe
def benchmark_detail(request: HttpRequest, benchmark: str) -> HttpResponse:
    """A benchmark's address: its current release's board (or the scheme's own page)."""
    staff = viewer_is_staff(request.user)
    scheme_page = _scheme_page(benchmark, staff=staff)
    if scheme_page is not None:
        return scheme_page
    release = selectors.release_current(benchmark_slug=benchmark, staff=staff)
    return redirect("release_board", benchmark=benchmark, version=release.version)


def _scheme_page(benchmark: str, *, staff: bool, version: str = "") -> HttpResponse | None:
    """A redirect to a scorecard or race benchmark's own page (leaderboard/scheme_urls.py): its
    release's board where the scheme has one per release, else its benchmark page. None for a
    paper-gap benchmark, and for one the viewer may not see: through visibility, a draft-only
    benchmark of another scheme is the same 404 as none at all (a redirect would confirm it)."""
    scheme = benchmarks_visible(staff=staff).filter(slug=benchmark).values_list("scheme", flat=True).first()
    if scheme is None or scheme == Benchmark.Scheme.PAPER_GAP:
        return None
    if scheme == Benchmark.Scheme.SCORECARD and version:
        return redirect("scorecard_board", benchmark=benchmark, version=version)  # a board per release
    return redirect(f"{scheme}_benchmark", benchmark=benchmark)  # scorecard_benchmark, race_benchmark


@require_safe
def release_board(request: HttpRequest, benchmark: str, version: str) -> HttpResponse:
    """The leaderboard of one release: tab, sort, filter and page come from the querystring."""
    try:
        query = selectors.board_query_from_params(request.GET)
    except BoardQueryError as error:
        return bad_request(request, str(error))
    cache_key = _board_cache_key(request, benchmark, version)
    if cache_key is not None:
        cached = cache.get(cache_key)
        if cached is not None:
            return HttpResponse(cached)
    staff = viewer_is_staff(request.user)
    try:
        release = selectors.release_get(benchmark_slug=benchmark, version=version, staff=staff)
    except Http404:
        # A scorecard or race benchmark's address under the paper-gap board: its own page.
        scheme_page = _scheme_page(benchmark, staff=staff, version=version)
        if scheme_page is None:
            raise
        return scheme_page
    page = selectors.board_page(release=release, query=query)
    run_url_prefix = reverse("run_detail", args=[0])[:-2]  # "/runs/": one reverse() per page, not per row
    chart_n = selectors.CHART_DEFAULT_N
    chart_by = "pass_rate" if query.chart == "pass_rate" else "score"
    chart_rows = selectors.chart_top(release=release, tab=query.tab, n=chart_n, by=chart_by, filters=query.filters)
    baselines = board_baselines(release=release, tab=query.tab, filters=query.filters)
    # One lookup for the page's rows and the chart table's, over the tab's tasks (as chart_data).
    run_ids = {row.standing.run_id for row in page.rows} | {row.run_id for row in chart_rows}
    coverage = selectors.tab_coverage(release=release, tab=query.tab, run_ids=sorted(run_ids))
    chart_table = [(row, "{}/{}".format(*coverage.get(row.run_id, (row.covered, row.required)))) for row in chart_rows]
    releases = selectors.release_siblings(release=release, staff=staff)
    newer = selectors.release_newer_unranked(release=release, releases=releases)
    columns = [
        {
            "key": key,
            "heading": heading,
            "note": note,
            "active": query.sort == key,
            "aria_sort": ("descending" if query.descending else "ascending") if query.sort == key else None,
            "params": query.params(
                sort=key,
                dir=("asc" if query.descending else "desc")
                if query.sort == key
                else ("desc" if selectors.SORTS[key][1] else "asc"),
                page=1,
            ),
        }
        for key, heading, note in BOARD_COLUMNS
    ]
    tabs = [
        {"key": key, "label": label, "active": key == query.tab, "params": query.params(tab=key, page=1)}
        for key, label in TABS.items()
    ]
    chart_modes = [
        {"key": key, "label": label, "checked": key == query.chart} for key, label in selectors.CHART_METRICS.items()
    ]
    response = render(
        request,
        "leaderboard/board.html",
        {
            "release": release,
            "benchmark": release.benchmark,
            "releases": releases,
            # Newer releases: announced, with whether any has a ranked run yet (then it is the default).
            "newer_releases": newer,
            "newer_ranked": any(getattr(other, "ranked", False) for other in newer),
            "query": query,
            "tab_label": TABS[query.tab],
            "tabs": tabs,
            "columns": columns,
            "page": page,
            "rows_html": mark_safe(  # noqa: S308 - each row is built with format_html
                "".join(BoardCells.of(row, coverage).html(run_url_prefix) for row in page.rows)
            ),
            "complete_params": query.params(complete="" if query.complete_only else "1", page=1),
            "prev_params": query.params(page=page.page - 1) if page.page > 1 else None,
            "next_params": query.params(page=page.page + 1) if page.page < page.pages else None,
            "export_params": {k: v for k, v in query.params().items() if k != "page"},
            "chart_table": chart_table,
            "chart_by": chart_by,
            "chart_by_label": "pass rate" if chart_by == "pass_rate" else "score",
            "chart_modes": chart_modes,
            "has_partial": any(not row.standing.complete for row in page.rows),
            "chart_n": chart_n,
            "chart_n_choices": (5, 10, 20, 50),
            "baselines": baselines,
            "filters": query.filters,
            "filter_levels": LEVELS,
            "filter_weights": WEIGHTS,
            "keep_params": {k: v for k, v in query.params(page=1).items() if k in ("tab", "sort", "dir", "complete")},
            "cost_chart_params": {k: v for k, v in query.params().items() if k not in ("page", "sort", "dir")},
        },
    )
    if cache_key is not None:
        cache.set(cache_key, response.content, BOARD_CACHE_SECONDS)
    return response


@require_safe
def release_detail(request: HttpRequest, benchmark: str, version: str) -> HttpResponse:
    """Required tasks, the task-set hash and what changed since the previous release."""
    staff = viewer_is_staff(request.user)
    release = selectors.release_get(benchmark_slug=benchmark, version=version, staff=staff)
    tasks = selectors.release_tasks(release=release)
    previous = release_previous(release, staff=staff)
    # The same diff as the admin's release page; a visitor sees an anchor value only if both releases publish it.
    diff = (
        release_diff_rows(previous, release, old_rows=selectors.release_tasks(release=previous), new_rows=tasks)
        if previous
        else None
    )
    return render(
        request,
        "leaderboard/release.html",
        {
            "release": release,
            "benchmark": release.benchmark,
            "tasks": tasks,
            "previous": previous,
            "differences": diff.entries(show_anchors=False) if diff else [],
            "release_changes": diff.other if diff else [],
            "notes_html": render_markdown(release.notes),
        },
    )


def _public_contract(release_task: ReleaseTask) -> str:
    """The task.yaml contract as YAML, with the anchor only where the release publishes it."""
    # The release's own snapshot of task.yaml, never the shared Task row: a later
    # release that rewords the task must not change what this release showed.
    # Task.contract is stored without the anchor; dropping every anchor-like key again, as the API
    # does (one rule: contract_without_anchor), keeps that invariant here too.
    contract = contract_without_anchor(dict(release_task.contract or {}))
    metric = dict(contract.get("metric") or {})
    if release_task.public_paper_value is not None:
        metric["paper_value"] = release_task.public_paper_value
    if metric:
        contract["metric"] = metric
    return yaml.safe_dump(contract, sort_keys=False, allow_unicode=True)


@require_safe
def task_detail(request: HttpRequest, benchmark: str, version: str, task: str) -> HttpResponse:
    release = selectors.release_get(benchmark_slug=benchmark, version=version, staff=viewer_is_staff(request.user))
    release_task = selectors.release_task_get(release=release, task_slug=task)
    return render(
        request,
        "leaderboard/task.html",
        {
            "release": release,
            "benchmark": release.benchmark,
            "release_task": release_task,
            "task": release_task.task,
            "contract_yaml": _public_contract(release_task),
            "paper_html": render_markdown(release_task.paper_md, below=2),
            "brief_html": render_markdown(release_task.brief_md, below=2),
            # Every agent version on this task (leaderboard.views.insights; one query).
            "ranking": task_ranking(release_task=release_task, user=request.user),
            "withheld_reason": WITHHELD_SCORE_REASON,
        },
    )


@require_safe
def agent_detail(request: HttpRequest, agent: str) -> HttpResponse:
    agent_row = selectors.agent_get(slug=agent, user=request.user)
    runs = selectors.agent_runs(agent=agent_row, staff=viewer_is_staff(request.user))
    for run in runs:
        # The same rule as the run page: an aggregate that would reveal a withheld anchor is not shown.
        disclosure = run_disclosure(run, user=request.user)
        # Display-only attributes the template reads beside the row's own fields.
        shown = {key: disclosure.aggregate(key, getattr(run, key)) for key in ("overall", "reproduction", "open")}
        run.shown = shown  # type: ignore[attr-defined]
        run.withheld = disclosure.aggregates_hidden  # type: ignore[attr-defined]
    # Each run links the comparison with the agent's run before it on the same benchmark (the
    # runs are newest first): how a new version moved is the question this page is visited for.
    for position, run in enumerate(runs):
        earlier = (r for r in runs[position + 1 :] if r.release.benchmark_id == run.release.benchmark_id)
        run.compare_with = next(earlier, None)  # type: ignore[attr-defined]
    badges = []
    for release in {run.release_id: run.release for run in runs if run.release.published}.values():
        args = [release.benchmark.slug, release.version]
        badge = request.build_absolute_uri(reverse("agent_badge", args=[*args, agent_row.slug]))
        board = request.build_absolute_uri(reverse("release_board", args=args))
        label = f"{release.benchmark.name} {release.version}"
        badges.append({"label": label, "url": badge, "markdown": f"[![{label}]({badge})]({board})"})
    versions = agent_versions_declared(agent=agent_row, user=request.user)
    for agent_version in versions:
        meta = getattr(agent_version, "meta", None)
        description = render_markdown(meta.description_md, below=3) if meta else ""
        agent_version.description_html = description  # type: ignore[attr-defined]  # display-only, for the template
    is_owner = request.user.is_authenticated and agent_row.owner_id == request.user.pk
    return render(
        request,
        "leaderboard/agent.html",
        {
            "agent": agent_row,
            "runs": runs,
            "badges": badges,
            "versions": versions,
            "is_owner": is_owner,
            "race_versions": agent_race_versions(agent=agent_row),
            "scorecards": agent_scorecards(agent=agent_row),
        },
    )
