"""API for an agent version's declared metadata (its owner writes it) and the
baseline mark (staff write it). Reads follow leaderboard.selectors.agents: a version
nobody may see yet answers 404, never 403, so a refusal does not confirm a private name.

Errors: 401 ``not_authenticated`` (no credentials, before anything is looked up);
403 ``agent_not_yours`` (a declaration by anyone but the agent's owner, staff included);
403 ``permission_denied`` (a baseline change by a non-staff account); 404 ``not_found``;
400 ``invalid`` with ``fields``.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.api.errors import ErrorSerializer
from leaderboard.api.fields import StrictCharField, StrictModelSerializer, json_type
from leaderboard.api.selectors import releases_visible
from leaderboard.api_errors import ApiError, refuse_body_fields, refuse_unknown_fields, refuse_unread_parameters
from leaderboard.declaration_forms import AgentVersionMetaForm
from leaderboard.models import AgentVersion, AgentVersionMeta, Baseline, ReleasePrice
from leaderboard.permissions import ADD_BASELINE, DELETE_BASELINE, staff_may
from leaderboard.selectors.declarations import agent_version_get
from leaderboard.services.declarations import (
    agent_meta_may_declare,
    agent_version_meta_declare,
    baseline_mark,
    baseline_unmark,
)

ERRORS = {
    400: OpenApiResponse(ErrorSerializer, description="Invalid declaration"),
    401: OpenApiResponse(ErrorSerializer, description="Not authenticated"),
    403: OpenApiResponse(ErrorSerializer, description="Not the agent's owner (agent_not_yours) or not staff"),
    404: OpenApiResponse(ErrorSerializer, description="No such agent version"),
}


class DeclarationSerializer(StrictModelSerializer):
    """An agent version's declared metadata, as the owner stated it (nothing is checked)."""

    agent = StrictCharField(source="agent_version.agent.slug", read_only=True)
    version = StrictCharField(source="agent_version.version", read_only=True)
    base_models = serializers.ListField(child=StrictCharField(max_length=100), max_length=8, required=False)
    declared_cost_usd = serializers.DecimalField(
        max_digits=12, decimal_places=4, allow_null=True, required=False, coerce_to_string=False
    )
    declared = serializers.SerializerMethodField()

    class Meta:
        model = AgentVersionMeta
        fields = [
            "agent",
            "version",
            "declared",
            "organisation",
            "base_models",
            "weights",
            "scaffold_name",
            "scaffold_version",
            "code_url",
            "paper_url",
            "model_card_url",
            "description_md",
            "declared_cost_usd",
            "declared_at",
        ]
        read_only_fields = ["declared_at"]

    def get_declared(self, obj: AgentVersionMeta) -> bool:
        """Always true: a marker for clients that every field here is the owner's claim."""
        return True


class BaselineSerializer(StrictModelSerializer):
    class Meta:
        model = Baseline
        fields = ["kind", "note", "marked_at"]
        read_only_fields = ["marked_at"]


# What a baseline PUT sets (marked_at is the server's).
BASELINE_FIELDS = ("kind", "note")


def _require_user(request: Request) -> None:
    if not request.user or not request.user.is_authenticated:
        raise ApiError(code="not_authenticated", message="Sign in or send an API key.", status_code=401)


def _version(request: Request, slug: str, version: str) -> AgentVersion:
    try:
        return agent_version_get(agent_slug=slug, version=version, user=request.user)
    except Http404:
        raise ApiError(code="not_found", message="No such agent version.", status_code=404) from None


# The declaration's fields the form parses as numbers: a JSON number is accepted there (as text, the
# form's own parsing), and only there.
_NUMBER_FIELDS = frozenset(
    name
    for name, field in AgentVersionMetaForm.base_fields.items()
    if isinstance(field, forms.DecimalField | forms.FloatField | forms.IntegerField)
)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _form_data(payload: Any) -> dict[str, Any]:
    """The JSON body as the declaration form's fields (base_models: a list of names)."""
    if not isinstance(payload, dict):
        raise ApiError(code="invalid", message="Expected a JSON object.", extra={"fields": {}})
    refuse_unknown_fields(payload, AgentVersionMetaForm.Meta.fields)  # the API's one rule and wording
    data: dict[str, Any] = {}
    for name in AgentVersionMetaForm.Meta.fields:
        value = payload.get(name)
        if name == "base_models":
            if value is None:
                value = []
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ApiError(
                    code="invalid",
                    message="base_models: expected a list of model names.",
                    extra={"fields": {"base_models": ["Expected a list of strings."]}},
                )
            if any("," in v for v in value):
                raise ApiError(
                    code="invalid",
                    message="base_models: a model name cannot contain a comma.",
                    extra={"fields": {"base_models": ["A model name cannot contain a comma."]}},
                )
            value = ", ".join(value)
        elif value is None:
            value = ""
        elif not isinstance(value, str) and not (name in _NUMBER_FIELDS and _is_number(value)):
            # A number only where the form reads one (declared_cost_usd): elsewhere str() made
            # the number 2 the scaffold version "2", as DRF's CharField did (leaderboard.api.fields).
            expected = "a number or a string" if name in _NUMBER_FIELDS else "a string"
            message = f"Expected {expected}, got {json_type(value)}."
            raise ApiError(code="invalid", message=f"{name}: {message}", extra={"fields": {name: [message]}})
        data[name] = str(value)
    return data


class AgentVersionDeclarationView(APIView):
    """GET: anyone who may see the version. PUT: the agent's owner only (the whole declaration)."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(summary="An agent version's declared metadata", responses={200: DeclarationSerializer, **ERRORS})
    def get(self, request: Request, agent: str, version: str) -> Response:
        agent_version = _version(request, agent, version)
        meta = getattr(agent_version, "meta", None)
        if meta is None:
            raise ApiError(code="not_found", message="Nothing declared for this agent version yet.", status_code=404)
        return Response(DeclarationSerializer(meta).data)

    @extend_schema(
        summary="Declare an agent version's metadata (the agent's owner)",
        request=DeclarationSerializer,
        responses={200: DeclarationSerializer, **ERRORS},
    )
    def put(self, request: Request, agent: str, version: str) -> Response:
        _require_user(request)
        agent_version = _version(request, agent, version)
        if not agent_meta_may_declare(user=request.user, agent_version=agent_version):
            raise ApiError(
                code="agent_not_yours",
                message="Only the account that owns this agent declares its metadata.",
                status_code=403,
            )
        form = AgentVersionMetaForm(_form_data(request.data), instance=getattr(agent_version, "meta", None))
        if not form.is_valid():
            fields = {name: [str(e) for e in errors] for name, errors in form.errors.items()}
            first = next(iter(fields.items()))
            raise ApiError(code="invalid", message=f"{first[0]}: {first[1][0]}", extra={"fields": fields})
        meta = agent_version_meta_declare(user=request.user, agent_version=agent_version, data=form.declaration())
        return Response(DeclarationSerializer(meta).data)


class AgentVersionBaselineView(APIView):
    """Staff only: PUT marks the version as a reference baseline, DELETE unmarks it."""

    permission_classes = [permissions.AllowAny]

    def _staff_version(self, request: Request, agent: str, version: str, *, perm: str) -> AgentVersion:
        _require_user(request)
        if not staff_may(request.user, perm):
            raise ApiError(
                code="permission_denied",
                message=f"Only staff with the permission {perm!r} mark or unmark baselines.",
                status_code=403,
            )
        return _version(request, agent, version)

    @extend_schema(
        summary="Mark an agent version as a reference baseline (staff)",
        request=BaselineSerializer,
        responses={200: BaselineSerializer, **ERRORS},
    )
    def put(self, request: Request, agent: str, version: str) -> Response:
        agent_version = self._staff_version(request, agent, version, perm=ADD_BASELINE)
        # A PUT replaces the mark: a body that is not an object, or names a field it does not have
        # (a typo such as "knd"), was read as {} and reset the kind and note it meant to set.
        payload = request.data
        if not isinstance(payload, dict):
            raise ApiError(code="invalid", message="Expected a JSON object.", extra={"fields": {}})
        refuse_unknown_fields(payload, BASELINE_FIELDS)
        serializer = BaselineSerializer(data=payload)
        if not serializer.is_valid():
            fields = {name: [str(e) for e in errors] for name, errors in serializer.errors.items()}
            first = next(iter(fields.items()))
            raise ApiError(code="invalid", message=f"{first[0]}: {first[1][0]}", extra={"fields": fields})
        baseline = baseline_mark(
            actor=request.user,
            agent_version=agent_version,
            kind=serializer.validated_data.get("kind", Baseline.Kind.OTHER),
            note=serializer.validated_data.get("note", ""),
        )
        return Response(BaselineSerializer(baseline).data)

    @extend_schema(summary="Return a baseline to the ranked board (staff)", responses={204: None, **ERRORS})
    def delete(self, request: Request, agent: str, version: str) -> Response:
        agent_version = self._staff_version(request, agent, version, perm=DELETE_BASELINE)
        refuse_body_fields(request)  # after who asks: an anonymous DELETE is a 401 whatever its body
        if not baseline_unmark(actor=request.user, agent_version=agent_version):
            raise ApiError(code="not_found", message="This agent version is not a baseline.", status_code=404)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ReleasePriceSerializer(StrictModelSerializer):
    input_usd_per_mtok = serializers.DecimalField(max_digits=10, decimal_places=4, coerce_to_string=False)
    output_usd_per_mtok = serializers.DecimalField(max_digits=10, decimal_places=4, coerce_to_string=False)

    class Meta:
        model = ReleasePrice
        fields = ["model", "input_usd_per_mtok", "output_usd_per_mtok"]


class ReleasePricesView(APIView):
    """The admin's price table of a release: what every recorded cost on its board was priced with."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(
        summary="A release's price table (USD per million tokens; model '*' is the default)",
        responses={200: ReleasePriceSerializer(many=True), **ERRORS},
    )
    def get(self, request: Request, release_id: int) -> Response:
        # The whole table, never paginated: a ?limit= here was ignored as if it had applied.
        refuse_unread_parameters(request, frozenset({"format"}), what="table")
        release = releases_visible(request.user).filter(pk=release_id).first()
        if release is None:
            raise ApiError(code="not_found", message="No such release.", status_code=404)
        prices = ReleasePrice.objects.filter(release=release).order_by("model")
        return Response(ReleasePriceSerializer(prices, many=True).data)
