"""The one agent-ownership rule, for every scheme and every entry point.

An agent belongs to the account that first named it (``Agent.owner``); its slug
is the identity, so ``Alice Agent`` and ``alice-agent`` are the same agent. Only
the owner files runs under it (paper-gap bundles, challenges, race entries and,
through ``agent_version_claim``, the server-played scorecards). An agent without
an owner (rows from before ownership existed) is nobody's to claim: staff assign it.

The unit is the account, not a team: every other limit and credential of the
site (API keys, daily limits, challenges) is per account, and an organisation
that wants several people to submit as one shares that account's API keys. A
team model would add a second owner rule to every check; see docs/security-model.md.

A new agent's name must be one its slug stands for entirely (``agent_name_check``: ASCII and
accented letters only, read by canonical decomposition): slugify keeps ASCII letters and digits
after compatibility decomposition, so a Cyrillic A (U+0410), a Greek
omicron, a Unicode hyphen or a right-to-left override would vanish from the identity while still
showing in the name, and "Alice Agent" spelled with that Cyrillic A (slug ``lice-agent``) would be
a second agent displayed on every board as another account's ``Alice Agent``.
"""

from __future__ import annotations

import unicodedata

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils.text import slugify

from leaderboard.models import Agent, AgentVersion
from submissions.bundle.errors import BundleError

# Column widths of Agent.slug / Agent.name / AgentVersion.version.
AGENT_SLUG_MAX = 100
AGENT_NAME_MAX = 200
AGENT_VERSION_MAX = 100


def agent_slug(name: str) -> str:
    """The identity of an agent name: ``Alice Agent`` -> ``alice-agent``."""
    return slugify(name)[:AGENT_SLUG_MAX]


# Where a bundle names its agent; the API's forms pass their own field name.
MANIFEST_AGENT = "manifest.json: agent"


def _checked_slug(name: str, version: str, where: str) -> str:
    if not version.strip():
        raise BundleError("agent_invalid", f"{where}: the agent version is empty; give the version these runs are of")
    slug = agent_slug(name)
    if not slug:
        # A name made only of characters the identity drops ("Новый") is told which one.
        agent_name_check(name, where=where)
        raise BundleError(
            "agent_invalid",
            f"{where}: agent name {name[:100]!r} has no letter or digit; an agent's identity (its slug) is made "
            "of its letters and digits",
        )
    return slug


def _dropped_by_slug(char: str) -> bool:
    """Whether ``char`` (of a name in NFD) would show in the name but not count in its slug as
    shown: anything but printable ASCII and the combining marks an accented letter decomposes into.
    Canonical (NFD), not compatibility, decomposition: NFKD reads a long s (U+017F) as "s" and a
    Roman numeral one (U+2160) as "I", so "\u017fast Agent" (slug ``sast-agent``) passed while
    reading as "fast Agent"."""
    return not (" " <= char <= "~" or unicodedata.category(char) == "Mn")


def agent_name_check(name: str, *, where: str = MANIFEST_AGENT) -> None:
    """Raise ``agent_name_ambiguous`` when ``name`` has a character its slug would drop (see
    the module docstring). Checked when an agent is first named, never for an existing one."""
    dropped = next((char for char in unicodedata.normalize("NFD", name) if _dropped_by_slug(char)), None)
    if dropped is not None:
        raise BundleError(
            "agent_name_ambiguous",
            f"{where}: agent name {name[:100]!a} has the character {dropped!a}, which an agent's "
            "identity (its slug) does not keep, so the name could pass for another agent's; a new agent's name "
            "uses ASCII letters, digits, spaces and punctuation (accented letters are fine)",
        )


def agent_owner_check(*, name: str, account: User, where: str = MANIFEST_AGENT) -> Agent | None:
    """The agent ``name`` stands for when ``account`` may file under it (None: not yet known).

    Raises ``agent_not_yours`` when the slug belongs to another account or to no account.
    Reads only: a refused run writes nothing.
    """
    agent = Agent.objects.filter(slug=agent_slug(name)).order_by().first()  # slugs are unique: no ordering
    if agent is not None:
        _owner_check(agent, account, where)
    return agent


def _owner_check(agent: Agent, account: User | None, where: str) -> None:
    """The ownership rule: raise ``agent_not_yours`` unless ``account`` owns ``agent``."""
    if account is None or agent.owner_id != account.pk:
        raise BundleError(
            "agent_not_yours",
            f"{where}: agent {agent.slug!r} belongs to another account; only its owner can submit runs "
            "under it (names that differ only in case, spaces or punctuation are the same agent); "
            "choose another agent name",
        )


def agent_version_claim(*, name: str, version: str, account: User, where: str = MANIFEST_AGENT) -> AgentVersion:
    """The version of ``account``'s agent ``name``, creating the agent (owned by ``account``)
    and the version on first use. Raises ``agent_not_yours`` / ``agent_invalid`` /
    ``agent_name_ambiguous``, their messages starting with ``where`` (the field the name came in)."""
    slug = _checked_slug(name, version, where)
    version = version[:AGENT_VERSION_MAX]
    # A version seen before (every re-run): one statement, the version with its agent. An agent
    # and its versions are never deleted while runs point at them, so what it finds stands.
    known = AgentVersion.objects.select_related("agent").filter(agent__slug=slug, version=version).order_by().first()
    if known is not None:
        _owner_check(known.agent, account, where)
        return known
    agent = agent_owner_check(name=name, account=account, where=where)
    if agent is None:
        agent_name_check(name, where=where)
        agent, _ = Agent.objects.get_or_create(slug=slug, defaults={"name": name[:AGENT_NAME_MAX], "owner": account})
        # A concurrent first use by another account may have won the get_or_create.
        agent_owner_check(name=name, account=account, where=where)
    try:
        # The read above found no such version: insert it, without get_or_create's second read.
        with transaction.atomic():
            return AgentVersion.objects.create(agent=agent, version=version)
    except IntegrityError:  # a concurrent first use of the version inserted it first
        return AgentVersion.objects.get(agent=agent, version=version)


def agent_version_find(*, name: str, version: str) -> AgentVersion | None:
    """The agent version a name and version stand for, if it exists (reads only)."""
    return (
        AgentVersion.objects.select_related("agent")
        .filter(agent__slug=agent_slug(name), version=version[:AGENT_VERSION_MAX])
        .first()
    )
