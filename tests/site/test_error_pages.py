import pytest
from django.test import Client, override_settings
from django.urls import path

from leaderboard.site import urls as root_urls


def boom(request):
    raise RuntimeError("secret internals: DATABASE_URL=postgres://hidden")


urlpatterns = [
    path("api/v1/boom/", boom),
    path("boom/", boom),
    *root_urls.urlpatterns,
]
handler404 = root_urls.handler404
handler500 = root_urls.handler500


@pytest.fixture
def crashing_client():
    with override_settings(ROOT_URLCONF=__name__, DEBUG=False):
        yield Client(raise_request_exception=False)


@pytest.mark.django_db
def test_an_unknown_page_gets_the_site_404_page(client):
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    assert b"There is nothing at <code>/no/such/page/</code>" in response.content


@pytest.mark.django_db
def test_a_crash_on_a_page_answers_a_plain_500_page_without_internals(crashing_client):
    response = crashing_client.get("/boom/")
    assert response.status_code == 500
    assert b"Something went wrong on our side" in response.content
    assert b"secret internals" not in response.content
    assert b"Traceback" not in response.content


@pytest.mark.django_db
def test_a_crash_outside_drf_under_the_api_answers_json_without_internals(crashing_client):
    response = crashing_client.get("/api/v1/boom/")
    assert response.status_code == 500
    assert response.json() == {
        "error": {"code": "server_error", "message": "The server failed to handle this request; it has been logged."}
    }
