"""The one error type of the bundle package and its stable codes.

Every way a bundle can be unreadable, tampered with or invalid maps to exactly
one code below.  Codes are part of the public contract (the worker stores them
on the Submission row, the API returns them, docs/bundle-format.md lists
them): never rename one.  Messages are for people: they name the file, the
field and the task, and never contain a traceback.
"""

from __future__ import annotations

__all__ = ["ERROR_CODES", "BundleError"]

# code -> one-line meaning (documented in docs/bundle-format.md, section "Error codes").
ERROR_CODES: dict[str, str] = {
    # envelope (age)
    "empty_file": "the uploaded file has no bytes",
    "too_large": "the file, a member, or the unpacked archive exceeds a size limit",
    "not_age_file": "the file does not start with an age header",
    "wrong_key": "the bundle was sealed to a key this server does not hold (or its recipient stanza is damaged)",
    "truncated": "the file ends before the age header or payload is complete",
    "corrupted": "a byte of the age header or payload was altered (authentication failed)",
    # archive (tar, optionally zstd)
    "invalid_archive": "the decrypted payload is not a readable tar (or tar.zst) archive",
    "too_many_members": "the archive has more members than allowed",
    "unsafe_path": "a member name is absolute, contains '..' or is otherwise unsafe",
    "invalid_member_name": "a member name is not valid UTF-8",
    "link_member": "a member is a symbolic or hard link",
    "special_member": "a member is a device, FIFO, sparse or other non-regular file",
    "duplicate_member": "two archive members have the same name",
    "decompression_bomb": "the compressed payload expands beyond the allowed ratio or total size",
    "header_too_large": "a tar extended header (pax, GNU long name or long link) is larger than allowed",
    "too_many_headers": "too many tar extended headers in front of one member or in the whole archive",
    # members
    "invalid_json": "a JSON member does not parse (syntax, encoding or duplicate key)",
    "non_finite_number": "a JSON member contains NaN, Infinity or a number too large for a double",
    "schema_error": "a JSON member has a missing, extra or wrongly typed field",
    "missing_member": "a member required by the format or listed in manifest.json is absent",
    "unexpected_member": "the archive holds a member that manifest.json does not list",
    "member_hash_mismatch": "a member's SHA-256 differs from the one in manifest.json",
    "unsupported_format": "manifest.json names a format version this server does not read",
    "wrong_kind": "the bundle is of another kind than the one being evaluated",
    "kind_retired": "manifest.json names kind 'scorecard': scorecards are played on the server, never uploaded",
    # release and tasks
    "unknown_release": "the benchmark/release named by the manifest is not known",
    "release_hash_mismatch": "required_task_set_hash differs from the release's",
    "unknown_task": "a task is not part of the release",
    "duplicate_task": "a task appears twice",
    "genre_mismatch": "a task's declared genre differs from the release's",
    "missing_faithfulness": "a reproduction task has no faithfulness verdict",
    "invalid_value": "a value is out of range for scoring (e.g. a negative rate)",
    # signatures
    "bad_signature": "a signature does not verify under the registered key it names (forged)",
    "missing_signature": "a signature the format requires is absent",
    "key_out_of_scope": "a registered key signed something outside its scope (another simulator, task or benchmark)",
    "judge_key_out_of_scope": "a judge key signed the verdict of a task (or rubric) it is not calibrated for",
    "verdict_results_mismatch": "a judge's signed verdict names other results than the bundle's for its task",
    "unsigned_withheld_task": "a task whose anchor is withheld has a result no registered evaluator key signed",
    "challenge_mismatch": "a signed document carries another challenge, or the challenge is for another run",
    "validator_key_unknown": "a race run is not signed by a registered, unrevoked validator key",
    "validator_mismatch": "a race run names another validator than the one whose key signed it",
    "validator_not_yours": "a race run is filed by an account that does not act for the validator whose key signed it",
    "validator_conflict": "a race run's agent is owned by an account acting for the validator whose key signed it",
    # the server's records (checked by the verification service)
    "challenge_unknown": "the manifest's challenge was not issued by this server",
    "challenge_not_yours": "the manifest's challenge was issued to another account",
    "challenge_used": "the manifest's challenge was already used by an earlier submission",
    "challenge_expired": "the manifest's challenge has expired",
    "duplicate_results": (
        "the same evaluator results were already accepted from another account "
        "(or, signed in a `podium-bundle/1` bundle, from this one)"
    ),
    "agent_not_yours": "the agent belongs to another account",
    "agent_invalid": "the agent name or version is empty",
    "agent_name_ambiguous": "a new agent's name has a character its slug would drop, e.g. a lookalike letter",
    "not_entered": "the agent version is not entered (by its owner) in the race",
    "race_run_private": "a race run was uploaded as private; race runs are public (every entry is ranked by name)",
    "validator_daily_limit_reached": "the signing validator key has used its staff-set daily limit of race runs",
    "wrong_scheme": "the benchmark uses another scoring scheme than the bundle's kind",
    "release_not_scorable": "the release cannot be scored on this server yet (ours to fix)",
    "release_not_ready": "the release's hidden set is not configured on this server yet",
    "unknown_race": "the race named by the run does not exist",
    "race_release_mismatch": "the race belongs to another release",
    "race_not_running": "the race is not running (results are accepted only while it runs)",
    "race_run_already_filed": (
        "the signing validator already filed a run of this agent version in this race (or qualifying release) "
        "that stands (counted, or failed with no output); it runs it again only after an infrastructure failure "
        "or a staff exclusion"
    ),
    "race_run_invalid": "the race run's outcomes are inconsistent with the expected task set",
    "race_run_mismatch": "a claimed paid reward, category or run score differs from the recomputation",
    # requests for challenges and race entries
    "not_a_validator": "the account acts for no validator",
    "unknown_benchmark": "no benchmark of that scheme has that slug",
    "race_closed": "the race has ended and takes no new entries",
    "too_many_challenges": "the account holds too many unused challenges",
}


class BundleError(Exception):
    """A bundle that cannot be accepted.

    ``code`` is one of :data:`ERROR_CODES`; ``message`` is a complete human
    sentence naming what is wrong and where.  ``str(error)`` is the message.
    """

    def __init__(self, code: str, message: str) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unknown bundle error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"BundleError({self.code!r}, {self.message!r})"

    def to_dict(self) -> dict[str, str]:
        """JSON-able ``{"code": ..., "message": ...}``."""
        return {"code": self.code, "message": self.message}
