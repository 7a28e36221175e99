"""Every page works under a CSP without 'unsafe-inline': no inline script, no
style attribute or element, no event-handler attribute; user strings escaped."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tests.website.conftest import make_release, make_run, make_task, make_user

HOSTILE = '<script>alert("x")</script>'


@pytest.fixture
def site(client, benchmark):
    make_task(benchmark, "hostile", title=HOSTILE, paper_md=HOSTILE, brief_md="<img src=x onerror=alert(1)>")
    release = make_release(benchmark, tasks=[("hostile", "open", None, False), ("grasp", "reproduction", 0.5, False)])
    owner = make_user()
    run = make_run(release, agent_name=HOSTILE, version='"><b>v', submitter=owner)
    run.effort_tier = HOSTILE
    run.save()
    client.force_login(owner)
    board = ["ale-robotics", "v0.5"]
    return [
        reverse("home"),
        reverse("release_board", args=board),
        reverse("release_board", args=board) + "?tab=open",
        reverse("release_detail", args=board),
        reverse("task_detail", args=[*board, "hostile"]),
        reverse("run_detail", args=[run.pk]),
        reverse("agent_detail", args=[run.agent_version.agent.slug]),
        reverse("my_submissions"),
        reverse("submission_detail", args=[run.submission.pk]),
        reverse("submission_upload"),
    ]


def test_every_page_has_a_csp_without_unsafe_inline(client, site):
    for url in site:
        response = client.get(url)
        assert response.status_code == 200, url
        policy = response["Content-Security-Policy"]
        assert "script-src 'self'" in policy
        assert "unsafe-inline" not in policy


def test_no_page_has_inline_script_style_or_event_handlers(client, site):
    for url in site:
        html = client.get(url).content.decode()
        assert re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", html) == [], url
        assert "<style" not in html, url
        assert re.findall(r"<[^>]+\sstyle=", html) == [], url
        assert re.findall(r"<[^>]+\son[a-z]+=", html) == [], url


def test_user_supplied_strings_are_escaped_everywhere(client, site):
    for url in site:
        html = client.get(url).content.decode()
        assert HOSTILE not in html, url
        assert "<img src=x" not in html, url
        assert '"><b>v' not in html, url


def test_the_logout_link_is_a_post_form_and_get_is_refused(client, site):
    html = client.get(reverse("home")).content.decode()
    assert '<form class="inline-form" method="post" action="/accounts/logout/">' in html
    assert client.get(reverse("logout")).status_code == 405


def test_the_sign_in_and_sign_up_pages_have_no_inline_script_or_style(client, db):
    for url in (reverse("login"), reverse("signup")):
        html = client.get(url).content.decode()
        assert re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", html) == [], url
        assert re.findall(r"<[^>]+\sstyle=", html) == [], url
        assert '<input type="hidden" name="csrfmiddlewaretoken"' in html
