"""docs/deploy.md's "Install" block, run as written into a fresh directory: the runtime
requirements alone (no development packages) start every process the document runs.

CI and ``make bootstrap`` install requirements-dev.txt, whose test tools bring packages the
runtime list may lack: kombu's Redis transport imports ``packaging``, which only the
``redis`` extra brings, so a host installed from requirements.txt alone stopped its worker
and beat at start while every test passed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from tests.servers import REPO_ROOT

INSTALL_BLOCK = re.compile(r"## Install\n.*?```sh\n(?P<body>.*?)```", re.DOTALL)
# What each process imports before it serves: the broker's transport (worker, beat and an
# upload's enqueue), the S3 storage, gunicorn and WhiteNoise.
RUNTIME_IMPORTS = (
    "import kombu.transport.redis, storages.backends.s3, gunicorn.app.wsgiapp, whitenoise.middleware, numpy"
)


def test_the_install_block_alone_gives_a_venv_that_starts_the_worker_and_the_site(tmp_path: Path) -> None:
    match = INSTALL_BLOCK.search((REPO_ROOT / "docs" / "deploy.md").read_text())
    assert match, "docs/deploy.md lost its Install block"
    shutil.copy(REPO_ROOT / "requirements.txt", tmp_path / "requirements.txt")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH", "PIP_"))}
    subprocess.run(["bash", "-euo", "pipefail", "-c", match["body"]], cwd=tmp_path, env=env, check=True, timeout=600)
    python = str(tmp_path / ".venv" / "bin" / "python")
    imports = subprocess.run([python, "-c", RUNTIME_IMPORTS], env=env, capture_output=True, text=True)
    assert imports.returncode == 0, imports.stderr
    # The project itself with those packages: settings, every app, the Celery app (the embedded default).
    embedded = {k: v for k, v in env.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL")}
    embedded["PODIUM_VAR_DIR"] = str(tmp_path / "var")
    check = subprocess.run(
        [python, "-c", "import django; django.setup(); import leaderboard.site.celery; "
         "from django.core.management import call_command; call_command('check')"],
        cwd=REPO_ROOT, env={**embedded, "DJANGO_SETTINGS_MODULE": "leaderboard.site.settings"},
        capture_output=True, text=True,
    )  # fmt: skip
    assert check.returncode == 0, check.stderr
