"""Private and rejected submissions never make an agent name public: not in /api/v1/agents/,
not on agent pages, the home page, boards or exports (leaderboard.selectors.agents)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from leaderboard.models import Agent, AgentVersion
from tests.website.conftest import make_run, make_user

SECRET_NAME = "Skunkworks Private Agent"
REJECTED_NAME = "Rejected Bundle Agent"


@pytest.fixture
def agents(release):
    owner = make_user()
    make_run(release, agent_name="Public Agent", version="1.0", submitter=owner)
    make_run(release, agent_name="Public Agent", version="2.0-secret", submitter=owner, is_private=True)
    make_run(release, agent_name=SECRET_NAME, submitter=owner, is_private=True)
    # What a rejected bundle could leave behind: an agent and a version with no run at all.
    orphan = Agent.objects.create(slug="rejected-bundle-agent", name=REJECTED_NAME)
    AgentVersion.objects.create(agent=orphan, version="0.1")
    return owner


def _every_public_body(client, release) -> str:
    board = ["ale-robotics", release.version]
    urls = [reverse("home"), "/api/v1/agents/", "/api/v1/runs/", reverse("chart_data", args=board)]
    for tab in ("overall", "reproduction", "open"):
        urls += [reverse(name, args=board) + f"?tab={tab}" for name in ("release_board", "board_csv", "board_json")]
    bodies = []
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        bodies.append((b"".join(response.streaming_content) if response.streaming else response.content).decode())
    return "\n".join(bodies)


# (The owner's own API run list names their private runs to them: theirs, not public.)
@pytest.mark.parametrize("role", ["anonymous", "other"])
def test_no_public_list_names_an_agent_of_private_or_rejected_submissions(client, release, agents, role):
    if role != "anonymous":
        client.force_login(make_user())
    body = _every_public_body(client, release)
    assert "Public Agent" in body  # the search sees names that are public
    assert SECRET_NAME not in body
    assert REJECTED_NAME not in body
    assert "2.0-secret" not in body


def test_the_agents_api_lists_only_public_agents_and_their_public_versions(client, release, agents):
    results = client.get("/api/v1/agents/").json()["results"]
    assert [(a["slug"], [v["version"] for v in a["versions"]]) for a in results] == [("public-agent", ["1.0"])]


@pytest.mark.parametrize("slug", ["skunkworks-private-agent", "rejected-bundle-agent"])
def test_an_agent_without_a_public_run_has_no_page_and_no_api_detail(client, release, agents, slug):
    assert client.get(reverse("agent_detail", args=[slug])).status_code == 404
    response = client.get(f"/api/v1/agents/{slug}/")
    assert (response.status_code, response.json()["error"]["code"]) == (404, "not_found")
    client.force_login(agents)  # its own submitter: the page is about public runs, so still none
    assert client.get(reverse("agent_detail", args=[slug])).status_code == 404


def test_staff_see_every_agent(client, release, agents):
    client.force_login(make_user(is_staff=True))
    slugs = {a["slug"] for a in client.get("/api/v1/agents/").json()["results"]}
    assert slugs == {"public-agent", "skunkworks-private-agent", "rejected-bundle-agent"}
    assert client.get(reverse("agent_detail", args=["rejected-bundle-agent"])).status_code == 200


def test_an_agent_becomes_public_with_its_first_public_run(client, release, agents):
    assert client.get(reverse("agent_detail", args=["skunkworks-private-agent"])).status_code == 404
    make_run(release, agent_name=SECRET_NAME, version="2.0")
    assert client.get(reverse("agent_detail", args=["skunkworks-private-agent"])).status_code == 200
    versions = client.get("/api/v1/agents/skunkworks-private-agent/").json()["versions"]
    assert [v["version"] for v in versions] == ["2.0"]  # the private run's version stays unnamed


def test_the_race_page_of_an_agent_version_without_a_public_run_is_a_404(client, db):
    from leaderboard.models import Benchmark

    Benchmark.objects.create(slug="race-bench", name="Race bench", scheme="race")
    agent = Agent.objects.create(slug="left-by-a-rejected-race-bundle", name="Left Behind")
    AgentVersion.objects.create(agent=agent, version="1.0")
    url = reverse("race_agent_version", args=["race-bench", agent.slug, "1.0"])
    assert client.get(url).status_code == 404
    client.force_login(make_user(is_staff=True))
    assert client.get(url).status_code == 200
