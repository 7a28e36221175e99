import pytest


@pytest.mark.django_db
@pytest.mark.parametrize("query", ["offset=", "release=&complete=true", "complete="])
def test_an_api_query_parameter_given_without_a_value_is_refused(client, query):
    response = client.get(f"/api/v1/runs/?{query}")
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    first_empty = sorted(part.split("=")[0] for part in query.split("&") if part.endswith("="))
    assert response.json() == {
        "error": {
            "code": "invalid_query",
            "message": f"{', '.join(first_empty)}: a query parameter that is given needs a value.",
        }
    }


@pytest.mark.django_db
def test_a_page_outside_the_api_still_treats_an_empty_field_as_absent(client):
    assert client.get("/?q=").status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/v1/runs/?limit=1&limit=2", "/api/v1/benchmarks/?format=json&format=json"])
def test_an_api_query_parameter_given_twice_is_refused_naming_it(client, path):
    response = client.get(path)
    assert response.status_code == 400
    name = path.split("?")[1].split("=")[0]
    assert response.json() == {
        "error": {"code": "invalid_query", "message": f"{name}: given more than once; give each query parameter once."}
    }
    assert client.get(path.split("&")[0]).status_code == 200
