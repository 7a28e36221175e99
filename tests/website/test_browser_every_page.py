"""Every main page in a real browser, at a laptop (1366x900) and a phone (390x844) size:
no page scrolls sideways, and axe-core (vendored, tests/vendor/axe-core) finds no serious
or critical violation. The pages are those of the demo site (paper-gap, scorecard and race
benchmarks loaded through the real verification path), visited as a visitor and as a
signed-in submitter with an API key. Screenshots land in test-output/screenshots/every-page/."""

from __future__ import annotations

import io
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.browser import DESKTOP, PHONE, axe_violations, shoot, sideways_overflow
from tests.website.conftest import make_user

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def demo(settings: Any, tmp_path: Path) -> dict[str, Any]:
    """The demo site of `manage.py load_demo` and a submitter with a key and a submission."""
    import pyrage
    from django.core.management import call_command

    from submissions.models import Submission

    identity = pyrage.x25519.Identity.generate()
    settings.PODIUM_SITE_KEYS = str(identity)
    settings.MEDIA_ROOT = tmp_path / "media"
    call_command("load_demo", stdout=io.StringIO())
    return {"submission": Submission.objects.filter(run__isnull=False).order_by("created_at").first()}


# Paths never visited: downloads, the admin, signing out, the API itself (its docs page is visited).
SKIP = re.compile(r"^/(admin/|accounts/logout|api/v1/(?!docs/))|\.(csv|json|svg)$")


def shape_of(path: str) -> str:
    """The kind of page an address is: numbers, and the slug after agents/ or tasks/, blanked."""
    segments = path.strip("/").split("/")
    for i in range(1, len(segments)):
        if segments[i - 1] in ("agents", "tasks"):
            segments[i] = "*"
    return re.sub(r"\d+", "N", "/".join(segments))


def visitor_pages(page: Any, base: str) -> list[str]:
    """The visitor's main pages, found by following the site's own links from home (two links
    deep), one page per shape of address (/runs/4/ and /runs/5/ are the same page)."""
    urls = [f"{base}/", f"{base}/api/v1/docs/", f"{base}/accounts/login/", f"{base}/accounts/signup/"]
    shapes = {shape_of(urlsplit(url).path) for url in urls}
    frontier = [f"{base}/"]
    for _depth in range(3):
        found: list[str] = []
        for url in frontier:
            page.goto(url)
            for link in page.eval_on_selector_all("main a[href]", "els => els.map(e => e.href)"):
                parts = urlsplit(link)
                shape = shape_of(parts.path)
                if not link.startswith(base) or SKIP.search(parts.path) or shape in shapes:
                    continue
                shapes.add(shape)
                found.append(f"{base}{parts.path}")
        urls += found
        frontier = found
    return urls


def insight_pages(base: str) -> list[str]:
    """The pages of leaderboard/insight_urls.py and the task ranking, named outright: the compare
    page is reached through a form, not a link, and a crawl that stops reaching one of them
    must not silently drop it from the check. A task page, the release history, the comparison
    (empty and with two runs), a public run's artifact list, and the race history."""
    from django.urls import reverse

    from leaderboard.models import Benchmark, ReleaseTask, Run

    runs = list(
        Run.objects.filter(is_private=False, release__published=True)
        .select_related("release__benchmark")
        .order_by("release_id", "-overall")[:2]
    )
    assert len(runs) == 2, "the demo site has two public paper-gap runs on one release"
    release = runs[0].release
    task = ReleaseTask.objects.filter(release=release).select_related("task").order_by("position").first()
    race = Benchmark.objects.filter(scheme="race").first()
    assert task is not None and race is not None
    bench, version = release.benchmark.slug, release.version
    return [
        base + reverse("task_detail", args=[bench, version, task.task.slug]),
        base + reverse("release_history", args=[bench, version]),
        base + reverse("run_compare"),
        base + reverse("run_compare") + f"?a={runs[0].pk}&b={runs[1].pk}",
        base + reverse("run_artifacts", args=[runs[0].pk]),
        base + reverse("race_history", args=[race.slug]),
    ]


def sign_in(page: Any, base: str, username: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("a-long-test-password-1")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base}/")


def check(page: Any, url: str, label: str, problems: list[str]) -> None:
    page.goto(url)
    page.wait_for_load_state("networkidle")
    overflow = sideways_overflow(page)
    if overflow:
        problems.append(f"{label} {url}: scrolls sideways {overflow}")
    if page.viewport_size["width"] == DESKTOP["width"]:
        # A laptop shows every table whole: the run page's signatures, the agent page's compare
        # links and the release page's penalties had scrolled out of sight at 1366 px.
        scrolled = page.evaluate(
            """() => Array.from(document.querySelectorAll('main .table-scroll'))
                 .filter(e => e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1)
                 .map(e => (e.getAttribute('aria-labelledby') || '?') + ' +' + (e.scrollWidth - e.clientWidth))"""
        )
        problems.extend(f"{label} {url}: a table scrolls at laptop width: {where}" for where in scrolled)
    board_row = page.locator("table.board tbody tr").first
    # A history page leads with its chart; its table restates the chart's points below it.
    chart_first = "/history/" in urlsplit(url).path
    if page.viewport_size["height"] == DESKTOP["height"] and board_row.count() and not chart_first:
        box = board_row.bounding_box()
        if box["y"] + box["height"] > DESKTOP["height"]:
            problems.append(f"{label} {url}: no table row is visible before scrolling ({box})")
    for violation in axe_violations(page):
        problems.append(f"{label} {url}: axe {violation}")
    parts = urlsplit(url)
    name = (parts.path.strip("/").replace("/", "_") or "home") + ("-query" if parts.query else "")
    shoot(page, f"every-page/{label}-{name}")


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_no_main_page_scrolls_sideways_or_fails_axe(
    live_server: Any, browser: Any, demo: dict[str, Any], size: dict[str, int]
) -> None:
    base = live_server.url
    context = browser.new_context(viewport=size)
    page = context.new_page()
    problems: list[str] = []
    label = "desktop" if size == DESKTOP else "phone"
    crawled = visitor_pages(page, base)
    seen = {urlsplit(url).path for url in crawled}
    # Named pages the crawl already reached are not visited twice (the compare page with two runs is).
    named = [url for url in insight_pages(base) if urlsplit(url).path not in seen or urlsplit(url).query]
    for url in crawled + named:
        check(page, url, label, problems)

    submitter = make_user("axe-submitter")
    sign_in(page, base, "axe-submitter")
    page.goto(f"{base}/accounts/api-keys/")
    page.get_by_label("Name").fill("ci-runner")
    page.get_by_role("button", name="Create key").click()
    page.wait_for_selector("[data-new-key]")
    overflow = sideways_overflow(page)
    if overflow:
        problems.append(f"{label} api keys: {overflow}")
    problems += [f"{label} api keys: axe {v}" for v in axe_violations(page)]
    # Revoking takes two steps: the summary, then the confirming button, both on screen.
    page.get_by_text("Revoke…").click()
    assert page.get_by_role("button", name="Revoke ci-runner for good").is_visible()
    box = page.get_by_role("button", name="Revoke ci-runner for good").bounding_box()
    if box["x"] + box["width"] > size["width"]:
        problems.append(f"{label} api keys: the Revoke button is off-screen ({box})")
    shoot(page, f"every-page/{label}-api-keys")
    for path in ("/submit/", "/submissions/", "/submit/race-entries/"):
        check(page, f"{base}{path}", label, problems)

    # The owner of a demo run: its submission, the run with its owner's controls, the declaration form.
    from django.urls import reverse

    submission = demo["submission"]
    owner = submission.submitter
    owner.set_password("a-long-test-password-1")
    owner.save()
    page.context.clear_cookies()
    sign_in(page, base, owner.get_username())
    run = submission.run
    version = run.agent_version
    for path in (
        reverse("submission_detail", args=[submission.pk]),
        reverse("run_detail", args=[run.pk]),
        reverse("agent_version_declare", args=[version.agent.slug, version.version]),
    ):
        check(page, f"{base}{path}", f"{label}-owner", problems)
    context.close()
    assert submitter
    assert not problems, "\n".join(problems)
