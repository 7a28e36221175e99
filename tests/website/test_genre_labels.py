"""A task's genre has one name everywhere, the board's tab names: "Reproduction" and
"Open-ended". The task, release and run pages said "Open", the comparison "open", the board's
notes "Open-genre" (visual review); templates name it through includes/genre.html."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from tests.website.conftest import make_run

pytestmark = pytest.mark.django_db

TEMPLATES = Path(settings.BASE_DIR) / "templates"
OPEN = '<span class="genre genre--open">Open-ended</span>'
REPRODUCTION = '<span class="genre genre--reproduction">Reproduction</span>'


def test_no_template_names_a_genre_but_through_the_genre_include() -> None:
    # get_genre_display gives "Open"; a bare {{ x.genre }} gives "open".
    spelled_out = re.compile(r"get_genre_display|\{\{ *[\w.]*genre *\}\}")
    offenders = [
        str(path.relative_to(TEMPLATES))
        for path in sorted(TEMPLATES.rglob("*.html"))
        if path.name != "genre.html" and spelled_out.search(path.read_text())
    ]
    assert offenders == []


def test_an_open_tasks_page_names_its_genre_open_ended(client, release):
    body = client.get(reverse("task_detail", args=["ale-robotics", "v0.5", "fly"])).content.decode()
    assert OPEN in body


def test_the_release_page_names_both_genres_as_the_boards_tabs(client, release):
    body = client.get(reverse("release_detail", args=["ale-robotics", "v0.5"])).content.decode()
    assert (body.count(REPRODUCTION), body.count(OPEN)) == (2, 2)


def test_a_run_page_names_both_genres_as_the_boards_tabs(client, release):
    run = make_run(release, agent_name="Alpha")
    body = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert (body.count(REPRODUCTION), body.count(OPEN)) == (2, 2)


def test_the_comparison_names_both_genres_as_the_boards_tabs(client, release):
    first, second = make_run(release, agent_name="Alpha"), make_run(release, agent_name="Bravo")
    body = client.get(reverse("run_compare") + f"?a={first.pk}&b={second.pk}").content.decode()
    assert (body.count(REPRODUCTION), body.count(OPEN)) == (2, 2)


def test_the_open_ended_tabs_note_says_open_ended_tasks(client, release):
    body = client.get(reverse("release_board", args=["ale-robotics", "v0.5"]) + "?tab=open").content.decode()
    assert "Open-ended tasks only (beat the paper's result by any means; no faithfulness gate)." in body
