"""Validation of an agent version's declaration: one form behind the page and the API."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from django import forms

from leaderboard.models.declarations import MAX_BASE_MODELS, MAX_DESCRIPTION_CHARS, AgentVersionMeta

LINK_FIELDS = ("code_url", "paper_url", "model_card_url")
# A run costing more than this is a typo (a missing decimal point), not a declaration.
MAX_DECLARED_COST_USD = Decimal(1_000_000)


# An amount as typed: ASCII digits, an optional point and decimals.
_PLAIN_AMOUNT = re.compile(r"[0-9]+(?:\.[0-9]+)?", re.ASCII)


class AgentVersionMetaForm(forms.ModelForm):
    # One base model per comma; the API sends a list and joins it (leaderboard.api.declarations).
    base_models = forms.CharField(
        required=False,
        max_length=1000,
        help_text=f"Comma-separated, at most {MAX_BASE_MODELS}; the first one with a price prices the run.",
    )
    # https is assumed for a bare domain (Django 6's default); any other scheme is refused in _clean_link.
    code_url = forms.URLField(required=False, max_length=500, assume_scheme="https", label="Code")
    paper_url = forms.URLField(required=False, max_length=500, assume_scheme="https", label="Paper")
    model_card_url = forms.URLField(required=False, max_length=500, assume_scheme="https", label="Model card")
    description_md = forms.CharField(
        required=False,
        max_length=MAX_DESCRIPTION_CHARS,
        widget=forms.Textarea(attrs={"rows": 8}),
        label="Description",
        help_text="Markdown; raw HTML is shown as text.",
    )

    class Meta:
        model = AgentVersionMeta
        fields = [
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
        ]
        labels = {
            "scaffold_name": "Scaffold / harness",
            "scaffold_version": "Scaffold version",
            "code_url": "Code",
            "paper_url": "Paper",
            "model_card_url": "Model card",
            "declared_cost_usd": "Declared cost per run (USD)",
        }
        help_texts = {
            "declared_cost_usd": "Shown only when the run reports no tokens or the release has no price for them.",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk and not self.is_bound:
            self.initial["base_models"] = ", ".join(self.instance.base_models or [])
        for name in LINK_FIELDS:
            self.fields[name].widget.attrs["placeholder"] = "https://"
        for name, field in self.fields.items():
            if field.help_text:  # declare.html renders the help as <p id="id_<name>-help">
                field.widget.attrs["aria-describedby"] = f"id_{name}-help"

    def clean_base_models(self) -> list[str]:
        raw = self.cleaned_data.get("base_models") or ""
        names = [name.strip() for name in raw.split(",") if name.strip()]
        if len(names) > MAX_BASE_MODELS:
            raise forms.ValidationError(f"At most {MAX_BASE_MODELS} base models, got {len(names)}.", code="too_many")
        for name in names:
            if len(name) > 100:
                raise forms.ValidationError(f"{name[:20]!r}…: a model name is at most 100 characters.", code="too_long")
        return names

    def _clean_link(self, name: str) -> str:
        value = self.cleaned_data.get(name) or ""
        # URLField also accepts ftp(s); a link on a board is followed by visitors' browsers: http(s) only.
        if value and urlsplit(value).scheme.lower() not in ("http", "https"):
            raise forms.ValidationError("Only http:// and https:// links.", code="scheme")
        return value

    def clean_code_url(self) -> str:
        return self._clean_link("code_url")

    def clean_paper_url(self) -> str:
        return self._clean_link("paper_url")

    def clean_model_card_url(self) -> str:
        return self._clean_link("model_card_url")

    def clean_declared_cost_usd(self) -> Decimal | None:
        value = self.cleaned_data.get("declared_cost_usd")
        # Decimal() also reads "1_000", "-0" and non-ASCII digits, which the page would then show
        # otherwise than they were typed; an amount is plain ASCII digits with an optional point.
        raw = str(self.data.get(self.add_prefix("declared_cost_usd"), "")).strip()
        if value is not None and raw and not _PLAIN_AMOUNT.fullmatch(raw):
            raise forms.ValidationError("Expected an amount such as 12.50 (digits and a point only).", code="format")
        if value is not None and (value < 0 or value > MAX_DECLARED_COST_USD):
            raise forms.ValidationError(f"Expected 0 to {MAX_DECLARED_COST_USD} USD.", code="range")
        return value

    def declaration(self) -> dict[str, Any]:
        """The cleaned values, as leaderboard.services.declarations stores them."""
        return {name: self.cleaned_data[name] for name in self.Meta.fields}
