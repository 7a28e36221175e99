"""Issue 13 on the pages: the owner's declaration form, costs on the board, baselines, search."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.cache import cache
from django.urls import reverse

from leaderboard.models import AgentVersionMeta, Baseline, Release, RunCost, Standing
from leaderboard.selectors.paper_gap import release_pointer_key
from leaderboard.selectors.standing_ranks import standings_ranked
from leaderboard.services.declarations import baseline_mark, baseline_unmark, release_prices_changed
from leaderboard.services.paper_gap_standings import standings_refresh
from tests.website.conftest import make_run, make_user
from tests.website.declarations_factories import declare, own, price

pytestmark = pytest.mark.django_db

FORM = {
    "organisation": "Acme Labs",
    "base_models": "gpt-x, helper-1",
    "weights": "open",
    "scaffold_name": "OpenHands",
    "scaffold_version": "0.9.1",
    "code_url": "https://example.org/code",
    "paper_url": "",
    "model_card_url": "http://example.org/card",
    "description_md": "Plans with **search**. <script>alert(1)</script>",
    "declared_cost_usd": "",
}


def board_table_of(body: str) -> str:
    start = body.index('<table class="data board"')
    return body[start : body.index("</table>", start)]


def board_table(response) -> str:
    return board_table_of(response.content.decode())


def declare_url(run) -> str:
    return reverse("agent_version_declare", args=[run.agent_version.agent.slug, run.agent_version.version])


@pytest.fixture
def owned(release):
    owner = make_user("owner")
    run = make_run(release, agent_name="Alpha", submitter=owner)
    own(run, owner)
    return owner, run


# --- the declaration form: owner, another account, anonymous, staff ----------------------------


def test_a_version_with_slashes_has_a_declaration_form_its_owner_reaches_from_the_agent_page(client, release):
    owner = make_user("owner")
    run = make_run(release, agent_name="Alpha", version="2026/05", submitter=owner)
    own(run, owner)
    client.force_login(owner)
    agent_page = client.get(reverse("agent_detail", args=["alpha"]))
    assert agent_page.status_code == 200
    assert declare_url(run) == "/agents/alpha/versions/2026/05/declare/"
    assert declare_url(run).encode() in agent_page.content
    assert client.post(declare_url(run), FORM).status_code == 302
    assert AgentVersionMeta.objects.get(agent_version=run.agent_version).organisation == "Acme Labs"


def test_the_owner_declares_a_version_and_it_is_stored(client, owned):
    owner, run = owned
    client.force_login(owner)
    assert client.get(declare_url(run)).status_code == 200
    response = client.post(declare_url(run), FORM)
    assert response.status_code == 302
    meta = AgentVersionMeta.objects.get(agent_version=run.agent_version)
    assert meta.organisation == "Acme Labs"
    assert meta.base_models == ["gpt-x", "helper-1"]
    assert meta.weights == "open"
    assert meta.declared_by == owner


def test_another_account_may_not_declare_someone_elses_agent(client, owned):
    _, run = owned
    client.force_login(make_user("intruder"))
    page = client.get(declare_url(run))
    assert page.status_code == 403
    # The site's page with the refusal's own sentence (Django's default page dropped it).
    assert "Only the account that owns this agent declares its metadata." in page.content.decode()
    assert client.post(declare_url(run), FORM).status_code == 403
    assert not AgentVersionMeta.objects.exists()


def test_an_anonymous_visitor_is_sent_to_sign_in(client, owned):
    _, run = owned
    response = client.post(declare_url(run), FORM)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))
    assert not AgentVersionMeta.objects.exists()


def test_staff_do_not_declare_on_an_owners_behalf(client, owned):
    _, run = owned
    client.force_login(make_user("staffer", is_staff=True))
    assert client.post(declare_url(run), FORM).status_code == 403
    assert not AgentVersionMeta.objects.exists()


def test_a_version_with_only_private_runs_is_not_found_for_another_account(client, release):
    owner = make_user("owner")
    run = make_run(release, agent_name="Secret", submitter=owner, is_private=True)
    own(run, owner)
    client.force_login(make_user("intruder"))
    assert client.get(declare_url(run)).status_code == 404
    client.force_login(owner)
    assert client.get(declare_url(run)).status_code == 200


@pytest.mark.parametrize("link", ["javascript:alert(1)", "ftp://example.org/x", "data:text/html,hi"])
def test_a_link_that_is_not_http_is_refused(client, owned, link):
    owner, run = owned
    client.force_login(owner)
    response = client.post(declare_url(run), {**FORM, "code_url": link})
    assert response.status_code == 400
    assert "code_url" in response.context["form"].errors
    assert not AgentVersionMeta.objects.exists()


def test_too_many_base_models_are_refused(client, owned):
    owner, run = owned
    client.force_login(owner)
    response = client.post(declare_url(run), {**FORM, "base_models": ",".join(f"m{i}" for i in range(9))})
    assert response.status_code == 400
    assert not AgentVersionMeta.objects.exists()


def test_the_agent_page_shows_the_declaration_marked_declared_with_the_markdown_sanitised(client, owned):
    owner, run = owned
    client.force_login(owner)
    client.post(declare_url(run), FORM)
    client.logout()
    body = client.get(reverse("agent_detail", args=["alpha"])).content.decode()
    assert "declared by the owner" in body
    assert "Acme Labs" in body and "gpt-x, helper-1" in body and "OpenHands 0.9.1" in body
    assert "<strong>search</strong>" in body
    assert "<script>alert(1)</script>" not in body and "&lt;script&gt;" in body
    assert 'href="https://example.org/code"' in body
    assert "Edit metadata" not in body  # the edit link is the owner's only


# --- costs -------------------------------------------------------------------------------------


def test_a_run_is_priced_from_recorded_tokens_and_the_release_price_table(release):
    run = make_run(release, agent_name="Alpha")
    declare(run, base_models=["GPT-X"])
    price(release, "gpt-x", inp="2", out="8")
    cost = RunCost.objects.get(run=run)
    # 1,200,000 input and 34,000 output tokens (tests.website.conftest.make_run)
    assert cost.usd == pytest.approx(1.2 * 2 + 0.034 * 8)
    assert (cost.basis, cost.priced_model) == ("recorded", "gpt-x")


def test_the_release_default_price_applies_when_no_row_names_the_model(release):
    run = make_run(release, agent_name="Alpha")
    price(release, "*", inp="1", out="1")
    assert RunCost.objects.get(run=run).usd == pytest.approx(1.234)


def test_a_declared_cost_is_used_only_without_a_recorded_one(release):
    run = make_run(release, agent_name="Alpha")
    declare(run, base_models=["unpriced"], declared_cost_usd=Decimal("3.5"))
    release_prices_changed(release=release)
    cost = RunCost.objects.get(run=run)
    assert (cost.usd, cost.basis) == (3.5, "declared")
    price(release, "unpriced", inp="1", out="0")
    assert RunCost.objects.get(run=run).basis == "recorded"


def test_changing_the_price_table_bumps_the_release_generation(release):
    make_run(release, agent_name="Alpha")
    before = Release.objects.get(pk=release.pk).generation
    price(release, "*")
    release_prices_changed(release=release)
    assert Release.objects.get(pk=release.pk).generation == before + 1


def test_declaring_a_version_bumps_only_the_releases_whose_boards_show_it(release):
    from leaderboard.services.declarations import agent_version_meta_declare
    from tests.website.conftest import make_release

    owner = make_user("declarer")
    shown = make_run(release, agent_name="Alpha", submitter=owner)
    own(shown, owner)
    elsewhere = make_release(release.benchmark, "v0.6")
    make_run(elsewhere, agent_name="Alpha", submitter=owner, is_private=True, with_standings=False)
    generations = dict(Release.objects.values_list("pk", "generation"))
    agent_version_meta_declare(user=owner, agent_version=shown.agent_version, data={"organisation": "Acme"})
    after = dict(Release.objects.values_list("pk", "generation"))
    # The board of v0.5 shows the version (its declaration changed there); v0.6 holds only a private
    # run of it: a bump there would tell anyone polling v0.6's generation that a hidden run exists.
    assert after == {release.pk: generations[release.pk] + 1, elsewhere.pk: generations[elsewhere.pk]}


def test_the_board_shows_the_cost_labelled_and_the_declaration_under_the_name(client, release):
    run = make_run(release, agent_name="Alpha")
    declare(run, organisation="Acme Labs", weights="open")
    price(release, "gpt-x")
    body = client.get(reverse("release_board", args=["ale-robotics", "v0.5"])).content.decode()
    assert "$2.67" in body and "cost-basis--recorded" in body
    assert "Acme Labs · open weights" in body and "declared__mark" in body


def test_the_board_sorts_by_cost(client, release):
    cheap = make_run(release, agent_name="Cheap", score=0.5)
    dear = make_run(release, agent_name="Dear", score=0.9)
    declare(cheap, base_models=["small"])
    declare(dear, base_models=["big"])
    price(release, "small", inp="0.1", out="0.1")
    price(release, "big", inp="10", out="10")
    table = board_table(client.get(reverse("release_board", args=["ale-robotics", "v0.5"]) + "?sort=cost"))
    assert table.index("Cheap") < table.index("Dear")
    table = board_table(client.get(reverse("release_board", args=["ale-robotics", "v0.5"]) + "?sort=cost&dir=desc"))
    assert table.index("Dear") < table.index("Cheap")


def test_the_cost_chart_flags_the_pareto_frontier(client, release):
    runs = {
        name: make_run(release, agent_name=name, score=score)
        for name, score in (("Cheap", 0.5), ("Dominated", 0.4), ("Best", 0.9))
    }
    for name, model in (("Cheap", "small"), ("Dominated", "big"), ("Best", "big")):
        declare(runs[name], base_models=[model])
    price(release, "small", inp="0.1", out="0.1")
    price(release, "big", inp="10", out="10")
    data = client.get(reverse("cost_chart_data", args=["ale-robotics", "v0.5"])).json()
    frontier = {p["label"].split()[0]: p["frontier"] for p in data["points"]}
    assert frontier == {"Cheap": True, "Dominated": False, "Best": True}
    assert data["points"][0]["cost_basis"] == "recorded"


def test_the_cost_chart_refuses_a_bad_filter(client, release):
    response = client.get(reverse("cost_chart_data", args=["ale-robotics", "v0.5"]) + "?weights=half")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_query"
    assert "weights='half'" in response.json()["error"]["message"]


# --- baselines ---------------------------------------------------------------------------------


def test_a_baseline_never_takes_a_rank_and_the_others_close_up(client, release):
    staff = make_user("staffer", is_staff=True)
    alpha = make_run(release, agent_name="Alpha", score=0.9, with_standings=False)
    paper = make_run(release, agent_name="Paper Method", score=0.8, with_standings=False)
    make_run(release, agent_name="Charlie", score=0.7, with_standings=False)
    standings_refresh(release=release)
    assert standings_ranked().get(tab="overall", run=paper).rank == 2

    baseline_mark(actor=staff, agent_version=paper.agent_version, kind="paper", note="the paper's own numbers")
    ranks = dict(standings_ranked().filter(tab="overall").values_list("agent_name", "rank"))
    assert ranks == {"Alpha": 1, "Charlie": 2}
    assert Baseline.objects.get().marked_by == staff
    # The incremental update lands where the full rebuild does.
    incremental = sorted(standings_ranked().values_list("tab", "agent_name", "rank"))
    standings_refresh(release=release)
    assert sorted(standings_ranked().values_list("tab", "agent_name", "rank")) == incremental

    body = client.get(reverse("release_board", args=["ale-robotics", "v0.5"])).content.decode()
    assert "Reference baselines" in body and "Paper Method" in body and "Paper&#x27;s own method" in body
    assert "Paper Method" not in board_table_of(body)

    baseline_unmark(actor=staff, agent_version=paper.agent_version)
    assert standings_ranked().get(tab="overall", run=paper).rank == 2
    assert alpha.pk


def test_a_private_baseline_run_is_not_shown(client, release):
    staff = make_user("staffer", is_staff=True)
    run = make_run(release, agent_name="Random", is_private=True, with_standings=False)
    baseline_mark(actor=staff, agent_version=run.agent_version, kind="random")
    body = client.get(reverse("release_board", args=["ale-robotics", "v0.5"])).content.decode()
    assert "Random" not in body


def test_a_baseline_with_an_unsigned_result_on_a_withheld_anchor_is_not_shown(client, release):
    staff = make_user("staffer", is_staff=True)
    run = make_run(release, agent_name="Leaky", signature="unsigned", with_standings=False)
    baseline_mark(actor=staff, agent_version=run.agent_version, kind="random")
    body = client.get(reverse("release_board", args=["ale-robotics", "v0.5"])).content.decode()
    assert "Leaky" not in body


# --- search and filters ------------------------------------------------------------------------


@pytest.fixture
def filtered_board(release):
    a = make_run(release, agent_name="Alpha", level="attested")
    b = make_run(release, agent_name="Bravo")
    make_run(release, agent_name="Charlie")
    declare(a, organisation="Acme Labs", weights="open", base_models=["Llama-3.1-70B", "Qwen2.5-Coder"])
    declare(b, organisation="Beta Corp", weights="closed", base_models=["gpt-4o", "Mistral-Größe"])
    Standing.objects.filter(agent_name="Charlie").update(verified_at="2020-01-02T00:00:00Z")
    return release


def board_agents(client, query: str) -> list[str]:
    table = board_table(client.get(reverse("release_board", args=["ale-robotics", "v0.5"]) + query))
    return [name for name in ("Alpha", "Bravo", "Charlie") if f">{name}</a>" in table]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("?q=rav", ["Bravo"]),
        ("?org=acme", ["Alpha"]),
        ("?weights=closed", ["Bravo"]),
        ("?level=attested", ["Alpha"]),
        ("?until=2020-01-31", ["Charlie"]),
        ("?since=2021-01-01", ["Alpha", "Bravo"]),
        ("?weights=open&q=bra", []),
        ("?model=llama", ["Alpha"]),
        ("?model=QWEN2.5", ["Alpha"]),
        ("?model=gpt-4o", ["Bravo"]),
        ("?model=Größe", ["Bravo"]),
        ("?model=gpt&weights=open", []),
    ],
)
def test_the_board_filters_by_agent_organisation_weights_level_and_date(client, filtered_board, query, expected):
    assert board_agents(client, query) == expected


@pytest.mark.parametrize("query", ['?model=70B" "Qwen', '?model=B"', '?model="', "?model=B%5C"])
def test_the_base_model_filter_matches_inside_one_name_never_across_two(client, filtered_board, query):
    assert board_agents(client, query) == []


def test_the_base_model_filter_is_in_the_form_and_every_link_of_the_view(client, filtered_board):
    body = client.get(reverse("release_board", args=["ale-robotics", "v0.5"]) + "?model=llama").content.decode()
    assert 'name="model" value="llama"' in body
    assert body.count("model=llama") >= 10  # sort headers, tabs, exports, the charts' data URLs


@pytest.mark.parametrize(
    ("query", "fragment"),
    [
        ("?weights=half", "weights='half'"),
        ("?level=gold", "level='gold'"),
        ("?since=yesterday", "since='yesterday'"),
        ("?since=2021-02-01&until=2021-01-01", "is after until"),
        ("?q=" + "x" * 101, "q: at most 100"),
        ("?model=" + "x" * 101, "model: at most 100"),
        ("?model=gpt,llama", "model='gpt,llama'"),
        ("?model=%5B%5D", "model='[]'"),
    ],
)
def test_a_bad_filter_is_a_400_naming_it(client, release, query, fragment):
    response = client.get(reverse("release_board", args=["ale-robotics", "v0.5"]) + query)
    assert response.status_code == 400
    assert fragment in response.content.decode().replace("&#x27;", "'")


def test_the_filters_stay_in_every_link_of_the_view(client, filtered_board):
    body = client.get(
        reverse("release_board", args=["ale-robotics", "v0.5"]) + "?org=acme&weights=open"
    ).content.decode()
    # sort headers, tabs, exports and the cost chart's data URL all carry the filters
    assert body.count("org=acme&amp;weights=open") >= 10
    assert 'name="org" value="acme"' in body


def test_the_exports_and_the_api_apply_the_filters(client, filtered_board):
    csv = b"".join(client.get(reverse("board_csv", args=["ale-robotics", "v0.5"]) + "?org=beta").streaming_content)
    assert b"Bravo" in csv and b"Alpha" not in csv and b"organisation_owner_declared" in csv
    data = client.get(reverse("board_json", args=["ale-robotics", "v0.5"]) + "?weights=open").json()
    assert [row["agent"] for row in data["rows"]] == ["Alpha"]
    assert data["filters"] == {"weights": "open"}
    api = client.get(
        reverse("api-leaderboard", args=[filtered_board.pk, "overall"]) + "?org=beta&since=2021-01-01"
    ).json()
    assert [row["agent_name"] for row in api["results"]] == ["Bravo"]
    assert api["results"][0]["organisation_declared"] == "Beta Corp"
    api = client.get(reverse("api-leaderboard", args=[filtered_board.pk, "overall"]) + "?model=LLAMA").json()
    assert [row["agent_name"] for row in api["results"]] == ["Alpha"]
    csv = b"".join(client.get(reverse("board_csv", args=["ale-robotics", "v0.5"]) + "?model=gpt-4").streaming_content)
    assert b"Bravo" in csv and b"Alpha" not in csv
    data = client.get(reverse("board_json", args=["ale-robotics", "v0.5"]) + "?model=qwen").json()
    assert [row["agent"] for row in data["rows"]] == ["Alpha"] and data["filters"] == {"model": "qwen"}
    response = client.get(reverse("api-leaderboard", args=[filtered_board.pk, "overall"]) + "?model=" + "x" * 101)
    assert (response.status_code, response.json()["error"]["code"]) == (400, "invalid_query")


def test_the_top_n_chart_follows_the_filters(client, filtered_board):
    url = reverse("chart_data", args=["ale-robotics", "v0.5"])
    assert [row["label"] for row in client.get(url + "?weights=open").json()["rows"]] == ["Alpha 1.0"]
    assert len(client.get(url).json()["rows"]) == 3
    response = client.get(url + "?level=gold")
    assert (response.status_code, response.json()["error"]["code"]) == (400, "invalid_query")
    body = client.get(reverse("release_board", args=["ale-robotics", "v0.5"]) + "?weights=open").content.decode()
    assert "chart.json?tab=overall&amp;weights=open" in body


def test_the_json_export_lists_baselines_apart_without_a_rank(client, release):
    staff = make_user("staffer", is_staff=True)
    make_run(release, agent_name="Alpha", score=0.9)
    paper = make_run(release, agent_name="Paper Method", score=0.8, with_standings=False)
    baseline_mark(actor=staff, agent_version=paper.agent_version, kind="paper")
    data = client.get(reverse("board_json", args=["ale-robotics", "v0.5"])).json()
    assert [row["agent"] for row in data["rows"]] == ["Alpha"]
    assert [(b["agent"], b["baseline_kind"], b["score"]) for b in data["baselines"]] == [("Paper Method", "paper", 0.8)]
    assert "rank" not in data["baselines"][0]


def test_a_declaration_refreshes_the_cached_board(client, owned, release):
    owner, run = owned
    url = reverse("release_board", args=["ale-robotics", "v0.5"])
    assert "Acme Labs" not in client.get(url).content.decode()  # now cached for anonymous visitors
    before = Release.objects.get(pk=release.pk).generation
    owner_client = type(client)()
    owner_client.force_login(owner)
    owner_client.post(declare_url(run), FORM)
    assert Release.objects.get(pk=release.pk).generation == before + 1
    # The release pointer is cached for 2 seconds; expire it as time would.
    cache.delete(release_pointer_key(benchmark_slug="ale-robotics", version="v0.5"))
    assert "Acme Labs" in client.get(url).content.decode()


def test_the_agent_page_lists_each_runs_cost_with_its_basis(client, release):
    run = make_run(release, agent_name="Alpha")
    price(release, "*", inp="1", out="1")
    body = client.get(reverse("agent_detail", args=["alpha"])).content.decode()
    assert "$1.23" in body and "cost-basis--recorded" in body
    assert run.pk


def test_a_page_attaches_each_rows_declaration_as_the_joined_query_reads_it(release):
    from leaderboard.selectors.declarations import DECLARED_FIELDS, declarations_attach, with_declarations

    declare(make_run(release, agent_name="Alpha"))
    make_run(release, agent_name="Bravo")  # nothing declared
    rows = list(Standing.objects.filter(release=release, tab="overall").order_by("agent_name"))
    declarations_attach(rows)
    joined = with_declarations(Standing.objects.filter(release=release, tab="overall")).order_by("agent_name")
    assert [[getattr(row, name) for name in DECLARED_FIELDS] for row in rows] == [
        [getattr(row, name) for name in DECLARED_FIELDS] for row in joined
    ]
    assert rows[0].declared_org == "Acme Labs" and rows[1].declared_org is None


def test_a_row_deleted_between_the_page_and_its_declarations_shows_nothing_declared(release):
    # Two statements, no shared snapshot: a run withdrawn meanwhile deletes its row.
    from leaderboard.selectors.declarations import declarations_attach

    declare(make_run(release, agent_name="Alpha"))
    row = Standing.objects.get(release=release, tab="overall")
    Standing.objects.filter(pk=row.pk).delete()
    declarations_attach([row])
    assert (row.declared_org, row.cost_usd) == (None, None)
