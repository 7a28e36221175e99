"""The standalone bundle tool: ``python -m submissions.bundle <command>``.

Commands: keygen, seal, open, check, ed25519-keygen, sign-results, sign-faithfulness.
Exit codes: 0 success (check: validated or attested), 1 check verdict
mismatch, 2 usage error, 3 the bundle is rejected (BundleError), 4 a local
problem (missing file, bad key, unreadable release manifest).  Errors are one
line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from submissions.bundle.archive import DEFAULT_LIMITS, iter_members
from submissions.bundle.bundle import Bundle, read_bundle_dir, read_payload
from submissions.bundle.client import add_commands
from submissions.bundle.contract import JudgeKey, check_judged_results
from submissions.bundle.envelope import decrypt_to_tempfile, generate_identity, parse_identities, parse_recipient
from submissions.bundle.errors import BundleError
from submissions.bundle.evaluate import ATTESTED, MISMATCH, VALIDATED, Outcome, evaluate_paper_gap
from submissions.bundle.seal import members_drift, seal_dir
from submissions.bundle.sign_dir import SignError, manifest_challenge, sign_faithfulness, sign_results
from submissions.bundle.signatures import (
    generate_signing_key,
    key_id_for,
    load_private_key,
    private_key_pem,
    public_key_b64,
)
from submissions.bundle.strict_json import parse_json

__all__ = ["EXIT_LOCAL", "EXIT_MISMATCH", "EXIT_OK", "EXIT_REJECTED", "EXIT_USAGE", "main"]

EXIT_OK = 0
EXIT_MISMATCH = 1
EXIT_USAGE = 2
EXIT_REJECTED = 3
EXIT_LOCAL = 4


class LocalError(Exception):
    """A problem on the user's side that is not about the bundle's content."""


def _read_text(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise LocalError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise LocalError(f"{what} {path} is not UTF-8 text") from None


def _write_new(path: str, text: str, mode: int = 0o600) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError:
        raise LocalError(f"{path} already exists; refusing to overwrite a key") from None
    except OSError as exc:
        raise LocalError(f"cannot write {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


# ------------------------------------------------------------------ commands


def cmd_keygen(args: argparse.Namespace) -> int:
    secret, public = generate_identity()
    now = dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()
    text = f"# created: {now}\n# public key: {public}\n{secret}\n"
    if args.output:
        _write_new(args.output, text)
        print(f"Public key: {public}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_seal(args: argparse.Namespace) -> int:
    for recipient in args.recipient:
        try:
            parse_recipient(recipient)
        except ValueError as exc:
            raise LocalError(str(exc)) from None
    if not Path(args.directory).is_dir():
        raise LocalError(f"{args.directory} is not a directory")
    if Path(args.output).exists() and not args.force:
        raise LocalError(f"{args.output} already exists (use --force to replace it)")
    # Judge the directory as it will be sealed before writing anything.

    read_bundle_dir(args.directory, members_as_sealed=not args.keep_members)
    seal_dir(
        args.directory,
        args.recipient,
        args.output,
        compress=not args.no_compress,
        update_members=not args.keep_members,
    )
    print(f"sealed {args.directory} -> {args.output} ({Path(args.output).stat().st_size} bytes)")
    return EXIT_OK


def _identities(paths: Sequence[str]) -> list[str]:
    texts = [_read_text(path, "identity file") for path in paths]
    try:
        parse_identities(texts)
    except ValueError as exc:
        raise LocalError(f"{', '.join(paths)}: {exc}") from None
    return texts


def cmd_open(args: argparse.Namespace) -> int:
    identities = parse_identities(_identities(args.identity))
    if not Path(args.file).is_file():
        raise LocalError(f"{args.file} is not a file")
    if args.output and Path(args.output).exists() and any(Path(args.output).iterdir()):
        raise LocalError(f"{args.output} exists and is not empty")
    name = Path(args.file).name

    with decrypt_to_tempfile(args.file, identities, max_bytes=DEFAULT_LIMITS.max_bundle_bytes, name=name) as plain:
        bundle = read_payload(plain, name=name)
        if args.output:
            plain.seek(0)
            for _ in iter_members(plain, name=name, extract_to=args.output):
                pass
    m = bundle.manifest
    print(f"{name}: {m.kind} bundle, {m.benchmark} {m.release}, agent {m.agent.name} {m.agent.version}")
    print("  manifest.json")
    for member_name in sorted(bundle.member_sizes):
        print(f"  {member_name}  {bundle.member_sizes[member_name]} bytes  sha256 {m.members[member_name]}")
    if args.output:
        print(f"written to {args.output}")
    return EXIT_OK


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    return "-" if value is None else str(value)


def _trusted_keys(values: Sequence[str]) -> dict[str, str]:
    keys: dict[str, str] = {}
    for value in values:
        text = value.strip()
        if Path(text).is_file():
            text = _read_text(text, "public key file").strip()
        try:
            keys[key_id_for(text)] = text
        except ValueError as exc:
            raise LocalError(f"--trust {value!r}: not a base64 raw Ed25519 public key ({exc})") from None
    return keys


def cmd_check(args: argparse.Namespace) -> int:
    try:
        # deferred: only `check` reads a release manifest; the tool's other commands need none of it
        from leaderboard.manifest import ManifestError, load_manifest
    except ImportError as exc:  # pragma: no cover -- ships with the repository
        raise LocalError(f"the release manifest reader is unavailable ({exc})") from None
    try:
        release = load_manifest(args.manifest)
        spec = release.to_release_spec()
    except ManifestError as exc:
        raise LocalError(f"release manifest {args.manifest}: {exc}") from None
    except OSError as exc:
        raise LocalError(f"release manifest {args.manifest}: {exc}") from None
    keys = _trusted_keys(args.trust)
    bundle = None
    try:
        bundle = read_bundle_dir(args.directory, members_as_sealed=not args.keep_members)
        m = bundle.manifest
        if not args.keep_members:
            _warn_stale_members(args.directory, m.members)
        if (m.benchmark, m.release) != (release.benchmark.slug, release.version):
            raise BundleError(
                "unknown_release",
                f"manifest.json: benchmark {m.benchmark!r} release {m.release!r} is not the release in "
                f"{args.manifest} ({release.benchmark.slug} {release.version})",
            )
        if not args.trust_judge:  # a trusted judge's verdicts are checked by evaluate itself
            _warn_misjudged_results(bundle)
        # Locally a trusted judge counts as calibrated for the rubric it signed with; the server
        # checks the task and rubric version against the judge key's registered calibrations.
        rubrics = {slug: v.rubric_version or "" for slug, v in bundle.faithfulness.items() if v.signed}
        judges = {
            key_id: JudgeKey(public_key=public, name="locally trusted judge", rubrics=rubrics)
            for key_id, public in _trusted_keys(args.trust_judge).items()
        }
        outcome = evaluate_paper_gap(
            bundle,
            release_spec=spec,
            required_task_set_hash=release.required_task_set_hash,
            signing_keys=keys,
            judge_keys=judges,
            # As the server: a null claim of a value derived from a withheld anchor is not claimed
            # (the server's other rule for such tasks, signed results only, is not checked here).
            claims_withheld=frozenset(task.slug for task in release.tasks if not task.anchor_published),
            bootstrap_resamples=args.resamples,
        )
    except BundleError as error:
        outcome = Outcome.rejected(error, bundle)
    if args.json:
        print(json.dumps(outcome.to_dict(), indent=2, sort_keys=True))
    else:
        _print_outcome(outcome)
    if outcome.verdict in (VALIDATED, ATTESTED):
        return EXIT_OK
    return EXIT_MISMATCH if outcome.verdict == MISMATCH else EXIT_REJECTED


def _warn_misjudged_results(bundle: Bundle) -> None:
    """Say on stderr when a judge's signed verdict names other results than the bundle's (the
    results changed after the judge signed): without the judge's key ``check`` reads the
    verdict as self-declared, while the server refuses it (contract.check_judged_results)."""
    for slug, verdict in sorted(bundle.faithfulness.items()):
        result = bundle.results.get(slug)
        if verdict.results_sha256 is None or result is None:
            continue
        try:
            check_judged_results(
                verdict.results_sha256,
                result.raw,
                judged_sha256=None,
                member=result.member,
                where=f"faithfulness.json: {slug}",
            )
        except BundleError as error:
            print(f"warning: {error.message}; the server refuses it [{error.code}]", file=sys.stderr)


def _warn_stale_members(directory: str, files: dict[str, str]) -> None:
    """Say on stderr when manifest.json's members map no longer describes DIR's files.

    ``check`` judges DIR as ``seal`` and ``submit`` pack it: with a map they write afresh. A
    bundle packed another way (the README's tar and age) carries the map as written, and the
    server refuses a stale one; the submitter should learn that here, not from the verdict."""
    written = parse_json(Path(directory, "manifest.json").read_bytes(), member="manifest.json").get("members")
    drift = members_drift(written, files)
    if not drift:
        return
    if not written:
        print(
            f"note: {directory}/manifest.json lists no members yet; seal and submit write them, while the "
            "directory packed as it is (tar and age) would be rejected [unexpected_member]",
            file=sys.stderr,
        )
        return
    lines = [
        *(f"  {name}: changed since the map was written [member_hash_mismatch]" for name in drift.changed),
        *(f"  {name}: not listed [unexpected_member]" for name in drift.unlisted),
        *(f"  {name}: listed but absent [missing_member]" for name in drift.absent),
    ]
    print(
        f"warning: {directory}/manifest.json members is stale (checked here as seal and submit pack the "
        "directory, with a fresh map):\n"
        + "\n".join(lines)
        + "\nthe directory packed as it is (tar and age) would be rejected; seal or submit it with this tool, "
        "which rewrites the map, or see the verdict on the map as written with check --keep-members",
        file=sys.stderr,
    )


def _print_outcome(outcome: object) -> None:
    assert isinstance(outcome, Outcome)
    print(f"verdict: {outcome.verdict}" + (f" [{outcome.error_code}]" if outcome.error_code else ""))
    print(outcome.message)
    if outcome.agent_name:
        print(f"agent: {outcome.agent_name} {outcome.agent_version}  release: {outcome.benchmark} {outcome.release}")
    if outcome.breakdown is not None:
        agg = outcome.breakdown["aggregates"]
        cov = agg["coverage"]
        print(
            f"overall {_fmt(agg['overall'])}  reproduction {_fmt(agg['reproduction'])}  open {_fmt(agg['open'])}  "
            f"pass rate {_fmt(agg['pass_rate'])}  coverage {cov['covered']}/{cov['required']}"
        )
        print(f"  {'task':<32} {'genre':<13} {'gap':>7} {'factor':>7} {'final':>7}  signature")
        checks = {task.slug: task for task in outcome.tasks}
        for slug in sorted(checks):
            row = outcome.breakdown["tasks"].get(slug)
            values = (_fmt(row["gap"]), _fmt(row["factor"]), _fmt(row["final"])) if row else ("-", "-", "not covered")
            print(
                f"  {slug:<32} {checks[slug].genre:<13} {values[0]:>7} {values[1]:>7} {values[2]:>7}  "
                f"{checks[slug].signature}"
            )
    for diff in outcome.diff:
        print(f"  {diff['status']}: {diff['path']}: claimed {diff['claimed']!r}, recomputed {diff['recomputed']!r}")


def cmd_ed25519_keygen(args: argparse.Namespace) -> int:
    key = generate_signing_key()
    _write_new(args.output, private_key_pem(key).decode("ascii"))
    public = public_key_b64(key)
    print(f"public key (register this): {public}")
    print(f"key id: {key_id_for(public)}")
    return EXIT_OK


def _signing_key(path: str) -> Ed25519PrivateKey:
    try:
        return load_private_key(Path(path).read_bytes())
    except (OSError, ValueError) as exc:
        raise LocalError(f"{path}: not an Ed25519 private key ({exc})") from None


def cmd_sign_results(args: argparse.Namespace) -> int:
    key = _signing_key(args.key)
    try:
        count = sign_results(args.directory, key, tasks=args.task)
    except SignError as exc:
        raise LocalError(str(exc)) from None
    bound = " (with the manifest's challenge)" if manifest_challenge(args.directory) is not None else ""
    print(f"signed {count} result file(s) with key id {key_id_for(public_key_b64(key))}{bound}")
    return EXIT_OK


def cmd_sign_faithfulness(args: argparse.Namespace) -> int:
    key = _signing_key(args.key)
    try:
        count = sign_faithfulness(args.directory, key, rubric_version=args.rubric, tasks=args.task)
    except SignError as exc:
        raise LocalError(str(exc)) from None
    print(
        f"signed {count} faithfulness verdict(s) with key id {key_id_for(public_key_b64(key))} "
        f"(rubric {args.rubric}, with the manifest's challenge)"
    )
    return EXIT_OK


# ------------------------------------------------------------------- parsing


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m submissions.bundle",
        description="Seal, open and check Podium result bundles (format: docs/bundle-format.md).",
        epilog="exit codes: 0 ok, 1 verdict mismatch, 2 usage, 3 bundle rejected, 4 local problem, "
        "5 the site refused or was unreachable (submit/status), 6 no verdict yet",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("keygen", help="create an age X25519 identity (like age-keygen)")
    p.add_argument("-o", "--output", help="write the identity here (mode 0600) instead of stdout")
    p.set_defaults(func=cmd_keygen)

    p = sub.add_parser("seal", help="write the members map, pack and encrypt a bundle directory")
    p.add_argument("directory", metavar="DIR")
    p.add_argument(
        "-r",
        "--recipient",
        action="append",
        required=True,
        metavar="AGE_PUBLIC_KEY",
        help="the site's age public key (age1...); repeatable",
    )
    p.add_argument("-o", "--output", required=True, metavar="FILE")
    p.add_argument("--no-compress", action="store_true", help="plain tar instead of tar.zst")
    p.add_argument("--keep-members", action="store_true", help="seal manifest.json as is (do not rewrite members)")
    p.add_argument("--force", action="store_true", help="replace FILE if it exists")
    p.set_defaults(func=cmd_seal)

    p = sub.add_parser("open", help="decrypt and validate a bundle, list (or write out) its members")
    p.add_argument("file", metavar="FILE")
    p.add_argument(
        "-i",
        "--identity",
        action="append",
        required=True,
        metavar="KEY_FILE",
        help="age identity file; repeatable (every key is tried)",
    )
    p.add_argument("-o", "--output", metavar="DIR", help="also write the members into DIR")
    p.set_defaults(func=cmd_open)

    p = sub.add_parser("check", help="recompute a bundle directory locally and print the server's verdict")
    p.add_argument("directory", metavar="DIR")
    p.add_argument("--manifest", required=True, metavar="RELEASE_MANIFEST_DIR")
    p.add_argument(
        "--trust",
        action="append",
        default=[],
        metavar="PUBLIC_KEY",
        help="a registered evaluator public key (base64 or a file); repeatable",
    )
    p.add_argument(
        "--trust-judge",
        action="append",
        default=[],
        metavar="PUBLIC_KEY",
        help="a registered judge public key (base64 or a file), trusted for every task it signed; repeatable",
    )
    p.add_argument("--keep-members", action="store_true", help="check manifest.json's members map as written")
    p.add_argument("--json", action="store_true", help="print the outcome as JSON")
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples for the CIs (0: none)")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("ed25519-keygen", help="create an Ed25519 signing key (PEM) for an evaluator or validator")
    p.add_argument("-o", "--output", required=True, metavar="FILE")
    p.set_defaults(func=cmd_ed25519_keygen)

    p = sub.add_parser("sign-results", help="sign every results/*.json of a bundle directory (or --task's)")
    p.add_argument("directory", metavar="DIR")
    p.add_argument("--key", required=True, metavar="ED25519_KEY_FILE")
    p.add_argument(
        "--task",
        action="append",
        default=[],
        metavar="SLUG",
        help="sign only results/SLUG.json (repeatable): one evaluator key signs its own simulator's tasks",
    )
    p.set_defaults(func=cmd_sign_results)

    p = sub.add_parser("sign-faithfulness", help="sign a bundle directory's faithfulness.json verdicts (or --task's)")
    p.add_argument("directory", metavar="DIR")
    p.add_argument("--key", required=True, metavar="ED25519_KEY_FILE", help="the judge's key (ed25519-keygen)")
    p.add_argument(
        "--rubric",
        required=True,
        metavar="VERSION",
        help="the rubric version the judge judged with: one its key is registered (calibrated) for",
    )
    p.add_argument(
        "--task",
        action="append",
        default=[],
        metavar="SLUG",
        help="sign only SLUG's verdict (repeatable); the others stay as they are",
    )
    p.set_defaults(func=cmd_sign_faithfulness)

    # submit / status against a Podium site (standard library HTTP; PODIUM_URL, PODIUM_API_KEY).

    add_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except BundleError as error:
        print(f"rejected [{error.code}]: {error.message}", file=sys.stderr)
        return EXIT_REJECTED
    except LocalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_LOCAL
    except KeyboardInterrupt:
        return 130
