from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from leaderboard import selectors


def home(request: HttpRequest) -> HttpResponse:
    return render(request, "leaderboard/home.html", {"benchmarks": selectors.benchmark_list_for_home()})
