"""Write-side services of the submissions app, one module per concept:

* ``submissions`` -- receiving an upload (``submission_upload`` for both upload views,
  ``submission_create`` without the daily quota, ``SubmissionRejected``);
* ``verification`` -- the verification state machine (``submission_verify``);
* ``signing_keys`` -- registering and revoking evaluator/validator Ed25519 keys;
* ``runs`` -- maintainer attestations on runs (the append-only event log).
"""
