"""Podium settings: every value comes from the environment.

Embedded default (nothing set): SQLite under var/, Celery tasks run in-process,
DEBUG on, so `make run` works on a bare machine. With DATABASE_URL and
CELERY_BROKER_URL set: PostgreSQL and Redis with real Celery workers. With
DJANGO_ENV=production: hardened settings that pass `check --deploy`.

The small typed readers below fail loudly on a malformed value rather than
falling back silently (the pattern of healthchecks' hc/settings.py).

Longer than 500 lines on purpose: settings live in one place (the house rule), each with
the comment that says why it has its value; split, a reader would hunt for them.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent.parent


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r}: expected one of 1/0, true/false, yes/no, on/off")


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r}: expected a whole number") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name}={raw!r}: expected a whole number >= {minimum}")
    return value


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw not in choices:
        raise ImproperlyConfigured(f"{name}={raw!r}: expected one of {', '.join(choices)}")
    return raw


def env_url(name: str, default: str = "", *, schemes: tuple[str, ...] = ("http", "https")) -> str:
    """An absolute URL (or empty); refuses a value with another scheme or no host."""
    raw = os.environ.get(name, default).strip()
    if not raw:
        return ""
    parsed = urlsplit(raw)
    if parsed.scheme not in schemes or not parsed.hostname:
        raise ImproperlyConfigured(f"{name}={raw!r}: expected an absolute {'/'.join(schemes)} URL with a host")
    return raw


def env_redis_url(name: str, default: str = "", *, sockets: tuple[str, ...] = (), others: tuple[str, ...] = ()) -> str:
    """A Redis URL (or empty): redis:// or rediss:// with a host, a ``sockets`` scheme with a
    path (a Unix socket), or one of ``others`` as it is. Anything else passed start-up before:
    "127.0.0.1:6379/15" (no scheme) left /readyz calling the cache "not configured" while
    every cached page answered 500 (redis-py refuses the URL at the first use)."""
    raw = os.environ.get(name, default).strip()
    parsed = urlsplit(raw)
    if not raw or parsed.scheme in others or (parsed.scheme in sockets and parsed.path not in ("", "/")):
        return raw
    schemes = ("redis", "rediss")
    if parsed.scheme not in schemes or not parsed.hostname:
        accepted = "/".join(schemes) + " URL with a host" + "".join(f", a {s}:// socket path" for s in sockets)
        raise ImproperlyConfigured(
            f"{name}={raw!r}: expected an absolute {accepted}" + "".join(f", or {s}://" for s in others)
        )
    return raw


# DRF reads "<count>/<period>" and looks only at the period's first letter, so "lots" or
# "10/fortnight" would pass start-up and then turn every throttled request into a 500.
_RATE = re.compile(r"^([1-9][0-9]*)/(s|sec|second|seconds|m|min|minute|minutes|h|hour|hours|d|day|days)$")


def env_rate(name: str, default: str) -> str:
    """A DRF throttle rate such as ``600/min``; refuses anything DRF would choke on later."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if not _RATE.match(raw.strip()):
        raise ImproperlyConfigured(
            f"{name}={raw!r}: expected a rate '<requests>/<period>' with a whole number >= 1 and a period "
            "of second, minute, hour or day (s, sec, m, min, h, hour, d, day), e.g. '600/min'"
        )
    return raw.strip()


# S3 bucket names (AWS rules, also what SeaweedFS and MinIO accept): 3-63 characters of
# lowercase letters, digits, dots and hyphens, starting and ending with a letter or digit.
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


DJANGO_ENV = env_str("DJANGO_ENV", "development")
if DJANGO_ENV not in {"development", "production"}:
    raise ImproperlyConfigured(f"DJANGO_ENV={DJANGO_ENV!r}: expected 'development' or 'production'")
PRODUCTION = DJANGO_ENV == "production"

VAR_DIR = Path(env_str("PODIUM_VAR_DIR", str(BASE_DIR / "var")))

if PRODUCTION:
    SECRET_KEY = env_str("SECRET_KEY")
    if len(SECRET_KEY) < 50:
        raise ImproperlyConfigured("SECRET_KEY must be set to a random string of at least 50 characters in production")
else:
    SECRET_KEY = env_str("SECRET_KEY", "podium-development-only-secret-key-never-use-in-production-0123456789")

DEBUG = env_bool("DEBUG", not PRODUCTION)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "" if PRODUCTION else "127.0.0.1,localhost,testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")
# A refused form gets the site's page saying what to do, not Django's page about its middleware.
CSRF_FAILURE_VIEW = "leaderboard.error_pages.csrf_failure"
# Absolute, with its scheme: links in mail and the API are built on it.
SITE_URL = env_url("SITE_URL", "http://127.0.0.1:8000")

INSTALLED_APPS = [
    "leaderboard.admin_site.PodiumAdminConfig",  # django.contrib.admin, its site guarded
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "leaderboard",
    "submissions",
]

MIDDLEWARE = [
    # /healthz and /readyz, answered whatever Host a load balancer's probe sends (leaderboard.probes).
    "leaderboard.probes.HealthProbeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Django's bodiless 405s get a JSON error or a page saying what the address answers.
    "leaderboard.error_pages.MethodNotAllowedMiddleware",
    # Too many query parameters: the 400 answered here, not a DEBUG-mode 500 later.
    "leaderboard.error_pages.QueryLimitsMiddleware",
    # PostgreSQL (or storage) down: a 503 page or JSON error, never a traceback.
    "leaderboard.unavailable.ServiceUnavailableMiddleware",
    # A view's 404 under /api/ or on a .json download: JSON even with DEBUG on.
    "leaderboard.error_pages.JsonNotFoundMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "leaderboard.security.ContentSecurityPolicyMiddleware",
    # A credentialed request's answer (a private run, the account's submissions) is never stored.
    "leaderboard.security.CredentialedNoStoreMiddleware",
    "leaderboard.api_query.EmptyApiQueryParameterMiddleware",
    # A NUL in the path, a query parameter or a form field: 400 invalid_text before any view
    # (PostgreSQL refuses NUL in text; it was a DataError from every route with a text segment).
    "leaderboard.request_text.NulCharacterMiddleware",
    # Every successful GET under /api/ gets an ETag and answers If-None-Match with a 304.
    "leaderboard.api.conditional.ApiConditionalGetMiddleware",
]

ROOT_URLCONF = "leaderboard.site.urls"
WSGI_APPLICATION = "leaderboard.site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# Database: SQLite in var/ unless DATABASE_URL names another (PostgreSQL via psycopg 3).
# Milliseconds sent data may go unacknowledged before the connection is dropped (libpq).
DB_TCP_USER_TIMEOUT_MS = 10_000
DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    # Health checks: a kept connection that PostgreSQL dropped (a restart, a failover) is
    # found dead and replaced before a request uses it, instead of answering that request 503.
    DATABASES = {
        "default": dj_database_url.parse(
            DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 60), conn_health_checks=True
        )
    }
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # Django's backend, whose health check asks the kernel before the server (no
        # SELECT 1 per request on a healthy kept connection): leaderboard/site/postgresql.
        DATABASES["default"]["ENGINE"] = "leaderboard.site.postgresql"
        # A database host that does not answer costs a request this many seconds, then a
        # 503 page (leaderboard.unavailable), instead of hanging a gunicorn worker.
        DATABASES["default"].setdefault("OPTIONS", {})["connect_timeout"] = env_int("DB_CONNECT_TIMEOUT", 5, minimum=1)
        # psycopg never prepares a statement on its own at this threshold (Django's ORM binds
        # client-side and never prepares anyway), but a statement may ask to be: the play
        # path's and the key lookup's do (submissions.rows.cursor). Django's default, None,
        # would refuse those requests too.
        DATABASES["default"]["OPTIONS"]["prepare_threshold"] = 2**31 - 1
        # A database host that stops answering mid-query (a partition, a dead host) must cost a
        # request seconds, not gunicorn's whole timeout: libpq's keepalives find a silent peer,
        # and tcp_user_timeout drops a connection whose sent data goes unacknowledged. (A frozen
        # but reachable server still ACKs; only gunicorn's timeout bounds that.)
        DATABASES["default"]["OPTIONS"].update(
            {
                "keepalives": 1,
                "keepalives_idle": 5,
                "keepalives_interval": 2,
                "keepalives_count": 3,
                "tcp_user_timeout": DB_TCP_USER_TIMEOUT_MS,
            }
        )
else:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(VAR_DIR / "podium.sqlite3"),
            # Several threads of the dev server and the in-process worker share one file.
            "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE"},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Cache: Redis when REDIS_URL (or the broker) is Redis, else process-local memory.
# kombu's names: redis+socket:// for a Unix socket, memory:// (one process, no Redis: tests).
CELERY_BROKER_URL = env_redis_url("CELERY_BROKER_URL", sockets=("redis+socket",), others=("memory",))
# redis-py's names: unix:// for a Unix socket. The cache defaults to the broker's Redis server.
_BROKER_IS_REDIS = urlsplit(CELERY_BROKER_URL).scheme in ("redis", "rediss")
REDIS_URL = env_redis_url("REDIS_URL", CELERY_BROKER_URL if _BROKER_IS_REDIS else "", sockets=("unix",))
if REDIS_URL:
    # Redis down is a cache miss, never an error (leaderboard.cache): pages fall back to the
    # database, and the short socket timeouts keep a Redis host that stopped answering from
    # holding a request for long.
    CACHES = {
        "default": {
            "BACKEND": "leaderboard.cache.FailSoftRedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 2},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "podium"}}

# Celery: with no broker, tasks run in-process (eagerly) so a bare machine needs no Redis.
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = False
# "localhost" named: kombu warns "No hostname was supplied" for a bare memory:// (make run showed it).
CELERY_BROKER_URL = CELERY_BROKER_URL or "memory://localhost/"
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
# A task is acknowledged only after it finished, and re-queued if its worker dies,
# so a killed worker loses nothing; one task at a time per process keeps a poison
# bundle from taking others down with it.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Seconds a broker connection may wait on Redis (connect or read).
BROKER_SOCKET_TIMEOUT_SECONDS = 3
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600, minimum=60),
    # A worker consuming several queues polls them in the order given (-Q verify,followups):
    # a waiting verdict is always taken before a waiting follow-up (Redis transport).
    "queue_order_strategy": "priority",
    # A Redis that stops answering (a frozen host, a partition) must fail an enqueue in
    # seconds, not hang it: without these the publish's PING blocked until gunicorn killed the
    # worker, a 500 after 60 s for an upload that was in fact committed. Reads wait longer than
    # the worker's blocking poll (BRPOP, 1 s).
    "socket_timeout": BROKER_SOCKET_TIMEOUT_SECONDS,
    "socket_connect_timeout": BROKER_SOCKET_TIMEOUT_SECONDS,
}
# One retry of a failed publish, promptly: the upload is committed either way (the sweeper
# enqueues what a publish lost), so a long retry only delays its answer.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.5, "interval_max": 0.5}
# Two queues: verdicts, and the follow-ups of a verdict (a run's confidence intervals). A
# worker consumes both, verdicts first: `celery -A leaderboard.site worker -Q podium,podium-followups`
# (the values of these two settings), so a burst of intervals never delays an upload's verdict.
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_QUEUE", "podium")
PODIUM_FOLLOWUP_QUEUE = env_str("CELERY_FOLLOWUP_QUEUE", f"{CELERY_TASK_DEFAULT_QUEUE}-followups")
CELERY_TASK_ROUTES = ("leaderboard.site.celery.route_task",)
# What a worker started without -Q consumes: both queues, verdicts first (the order above).
CELERY_TASK_QUEUES: dict[str, dict[str, str]] = {CELERY_TASK_DEFAULT_QUEUE: {}, PODIUM_FOLLOWUP_QUEUE: {}}
# A verifying worker holds a lease on its submission for this long, renewed by a heartbeat
# every third of it; a submission whose lease ran out (its worker was killed, lost its
# database or hangs) is taken over by the next claim or the sweeper within seconds.
PODIUM_LEASE_SECONDS = env_int("PODIUM_LEASE_SECONDS", 15, minimum=3)
# Re-enqueue submissions left in received or error (their task lost with the broker, or its
# retry lost) this long after they were last touched; at most once per such period.
PODIUM_STUCK_AFTER_SECONDS = env_int("PODIUM_STUCK_AFTER_SECONDS", 30, minimum=1)
PODIUM_SWEEP_EVERY_SECONDS = env_int("PODIUM_SWEEP_EVERY_SECONDS", 5, minimum=1)
# Re-enqueue a run's confidence follow-up when it still has no interval this long after it was
# recorded (its task lost). Longer than the submissions' limit: a follow-up may wait behind
# verdicts in a busy queue, and each sweep would otherwise queue it again.
PODIUM_CONFIDENCE_STUCK_AFTER_SECONDS = env_int("PODIUM_CONFIDENCE_STUCK_AFTER_SECONDS", 300, minimum=1)
# A bundle that kills its worker this many times ends as rejected instead of looping.
PODIUM_MAX_ATTEMPTS = env_int("PODIUM_MAX_ATTEMPTS", 3, minimum=1)
# A submission whose verification keeps meeting transient faults (storage or database away)
# is retried for this long after its upload, then ends as rejected (verification_failed).
# Those retries never count towards PODIUM_MAX_ATTEMPTS: a 13-second storage outage used up
# three attempts and rejected valid bundles for good.
PODIUM_FAULT_GIVE_UP_SECONDS = env_int("PODIUM_FAULT_GIVE_UP_SECONDS", 24 * 3600, minimum=60)
# Bootstrap resamples for a run's confidence intervals (scoring.uncertainty); 0 skips the CIs.
PODIUM_BOOTSTRAP_RESAMPLES = env_int("PODIUM_BOOTSTRAP_RESAMPLES", 1000)
# FOR TESTS ONLY: a verification sleeps this many seconds after claiming its submission,
# so the worker-kill test can kill -9 a worker that is verifying. Leave at 0.
PODIUM_VERIFY_DELAY_SECONDS = env_int("PODIUM_VERIFY_DELAY_SECONDS", 0)
# Beat's schedule state lives under var/ (never the repository root, wherever beat is started).
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULER = "leaderboard.site.celery:Scheduler"
# Seed 001 scorecards played over the API: an open card with no reset or action for this
# long is closed as if its player had closed it (unplayed levels padded as unsolved).
PODIUM_CARD_IDLE_SECONDS = env_int("PODIUM_CARD_IDLE_SECONDS", 1800, minimum=1)
CELERY_BEAT_SCHEDULE = {
    "sweep-stuck-submissions": {
        "task": "submissions.tasks.sweep_stuck_submissions",
        "schedule": float(PODIUM_SWEEP_EVERY_SECONDS),
    },
    "close-idle-scorecards": {
        "task": "submissions.tasks.close_idle_scorecards",
        "schedule": float(PODIUM_SWEEP_EVERY_SECONDS),
    },
}

# Uploads and site keys.
PODIUM_MAX_BUNDLE_BYTES = env_int("PODIUM_MAX_BUNDLE_BYTES", 256 * 1024 * 1024, minimum=1024)
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(VAR_DIR / "media")))
MEDIA_URL = "/media/"
# Site age identities: a file of AGE-SECRET-KEY lines (newest last) or the same text in
# PODIUM_SITE_KEYS. Never in the repository, never in the database.
PODIUM_SITE_KEYS_FILE = Path(env_str("PODIUM_SITE_KEYS_FILE", str(VAR_DIR / "keys" / "site-keys.txt")))
PODIUM_SITE_KEYS = env_str("PODIUM_SITE_KEYS")
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(VAR_DIR / "staticfiles")))
# Django serves static files through WhiteNoise's finders in development; it
# warns when STATIC_ROOT is missing, so make sure it exists there.
WHITENOISE_USE_FINDERS = not PRODUCTION
if not PRODUCTION:
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)
# Object storage: with PODIUM_S3_BUCKET set, bundles go to an S3-compatible bucket through
# django-storages (every web and worker host reads the same objects); otherwise to MEDIA_ROOT
# (the embedded default, one host only). Every bundle read and write goes through
# default_storage, never a path under MEDIA_ROOT.
PODIUM_S3_BUCKET = env_str("PODIUM_S3_BUCKET").strip()
if PODIUM_S3_BUCKET and not _BUCKET.match(PODIUM_S3_BUCKET):
    raise ImproperlyConfigured(
        f"PODIUM_S3_BUCKET={PODIUM_S3_BUCKET!r}: expected an S3 bucket name (3-63 lowercase letters, digits, "
        "dots or hyphens, starting and ending with a letter or digit)"
    )
AWS_S3_ENDPOINT_URL = env_url("AWS_S3_ENDPOINT_URL")
AWS_S3_REGION_NAME = env_str("AWS_S3_REGION_NAME").strip()
AWS_ACCESS_KEY_ID = env_str("AWS_ACCESS_KEY_ID")
AWS_SECRET_ACCESS_KEY = env_str("AWS_SECRET_ACCESS_KEY")
if bool(AWS_ACCESS_KEY_ID) != bool(AWS_SECRET_ACCESS_KEY):
    raise ImproperlyConfigured(
        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY: set both, or neither (then boto3 finds credentials "
        "itself: instance profile, ~/.aws)"
    )
# Most S3-compatible servers (SeaweedFS, MinIO) want path-style URLs; AWS itself takes either.
AWS_S3_ADDRESSING_STYLE = env_choice(
    "AWS_S3_ADDRESSING_STYLE", "path" if AWS_S3_ENDPOINT_URL else "auto", ("auto", "path", "virtual")
)
PODIUM_S3_PREFIX = env_str("PODIUM_S3_PREFIX").strip("/")
if PODIUM_S3_BUCKET:
    from botocore.config import Config as BotoConfig

    _default_storage = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": PODIUM_S3_BUCKET,
            "location": PODIUM_S3_PREFIX,
            "endpoint_url": AWS_S3_ENDPOINT_URL or None,
            "region_name": AWS_S3_REGION_NAME or None,
            "access_key": AWS_ACCESS_KEY_ID or None,
            "secret_key": AWS_SECRET_ACCESS_KEY or None,
            "addressing_style": None if AWS_S3_ADDRESSING_STYLE == "auto" else AWS_S3_ADDRESSING_STYLE,
            "signature_version": "s3v4",
            # Objects are private; the bucket's own policy decides, never a public ACL.
            "default_acl": None,
            # Never overwrite: names are content hashes, and a second writer must not clobber the first.
            "file_overwrite": False,
            # An object read back is spooled to disk past 2 MiB (the default, 0, keeps the whole
            # object in memory: a 256 MiB bundle per worker).
            "max_memory_size": 2 * 1024 * 1024,
            # Bounded waits: an unreachable store fails an upload with a 503 in seconds
            # (leaderboard.unavailable) instead of holding a web worker for minutes. A store
            # that stops answering without refusing (a frozen server) costs at most two
            # attempts of connect + read (2 x 20 s by default), under gunicorn's 60 s timeout:
            # 60 s reads x 3 attempts got the worker killed and the upload a 500.
            "client_config": BotoConfig(
                connect_timeout=env_int("AWS_S3_CONNECT_TIMEOUT", 5, minimum=1),
                read_timeout=env_int("AWS_S3_READ_TIMEOUT", 15, minimum=1),
                retries={"mode": "standard", "max_attempts": 2},
            ),
        },
    }
else:
    _default_storage = {"BACKEND": "django.core.files.storage.FileSystemStorage"}
STORAGES = {
    "default": _default_storage,
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if PRODUCTION
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "leaderboard.api.pagination.StrictLimitOffsetPagination",
    "PAGE_SIZE": 50,
    # Scripts send `Authorization: Api-Key <key>`; the browser uses its session (with CSRF).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "submissions.api_keys.ApiKeyAuthentication",
        # DRF's, its CSRF refusal answered as csrf_failed (the site's code and sentence).
        "leaderboard.api.session_auth.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # ?format=<unknown>: a 406 naming the parameter, not DRF's 404.
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "leaderboard.api.negotiation.ContentNegotiation",
    # DRF's parsers, refusing bodies that parse but cannot be stored (NUL, lone surrogates),
    # overflow a double, or nest deeper than Python recurses: each was a 500 further in.
    "DEFAULT_PARSER_CLASSES": [
        "submissions.api.parsers.StrictJSONParser",
        "leaderboard.request_text.StrictMultiPartParser",
    ],
    # Every error is {"error": {"code", "message"}}; nothing internal reaches a client.
    "EXCEPTION_HANDLER": "leaderboard.api_errors.api_exception_handler",
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.AnonRateThrottle",
        "rest_framework.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env_rate("PODIUM_API_ANON_RATE", "600/min"),
        "user": env_rate("PODIUM_API_USER_RATE", "1200/min"),
    },
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    # Client address for throttles: REMOTE_ADDR, unless this many trusted proxies append to
    # X-Forwarded-For (DRF's default of None would trust a client-sent header and let a
    # key guesser rotate addresses at will).
    "NUM_PROXIES": env_int("PODIUM_NUM_PROXIES", 0),
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Podium API",
    "VERSION": "1.0.0",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Without deep links: Swagger UI puts each one as a link inside the operation's toggle
    # button, a nested control (axe-core: nested-interactive) keyboard users cannot reach.
    "SWAGGER_UI_SETTINGS": {"deepLinking": False},
    # Request bodies get components of their own: a file field is then `format: binary` (an upload),
    # where one shared component typed it as a URL string and a generated client sent text.
    "COMPONENT_SPLIT_REQUEST": True,
    # A card's status (open, closed) beside the other "status" enums: named, not numbered.
    "ENUM_NAME_OVERRIDES": {"CardStatusEnum": ["open", "closed"]},
}

# Security headers. Production adds HTTPS-only cookies and HSTS.
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
if PRODUCTION:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    # Load balancers probe gunicorn directly over plain HTTP: the probes answer there.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True

# One line per record on stderr (gunicorn and celery collect it): UTC time, level, process,
# logger, message. docs/deploy.md shows a line.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "line": {
            "format": "%(asctime)s %(levelname)s [%(process)d] %(name)s: %(message)s",
            "datefmt": "%Y-%m-%dT%H:%M:%S%z",
        }
    },
    "filters": {
        "client_errors_without_traceback": {"()": "leaderboard.site.log_filters.ClientErrorsWithoutTraceback"},
        "mail_server_faults_only": {"()": "leaderboard.site.log_filters.MailServerFaultsOnly"},
        "require_debug_false": {"()": "django.utils.log.RequireDebugFalse"},
    },
    "handlers": {
        # Whatever logger a refused request (4xx) is recorded by (django.request, one of the
        # django.security.* loggers), the console gets one line without its traceback.
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "line",
            "filters": ["client_errors_without_traceback"],
        },
        # Django's error mail to PODIUM_ADMIN_EMAILS, for server faults only (not 4xx, not 503).
        "mail_admins": {
            "level": "ERROR",
            "filters": ["require_debug_false", "mail_server_faults_only"],
            "class": "django.utils.log.AdminEmailHandler",
        },
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        # Django's own logger with this mail handler (its default one mailed every 503 and every
        # bad Host header); its lines reach the console through the root.
        "django": {"handlers": ["mail_admins"], "level": "INFO"},
        # A refused request (4xx) is one line; a server error keeps its traceback.
        "django.request": {"filters": ["client_errors_without_traceback"]},
        # A bad Host header (DisallowedHost, a 400): the commonest refusal Django records at ERROR.
        "django.security.DisallowedHost": {"filters": ["client_errors_without_traceback"]},
    },
}

# Email: Django's error reports to PODIUM_ADMIN_EMAILS. SMTP when EMAIL_HOST is set,
# else printed to the console (development).
ADMINS = [(address, address) for address in env_list("PODIUM_ADMIN_EMAILS")]
EMAIL_HOST = env_str("EMAIL_HOST")
EMAIL_BACKEND = (
    "django.core.mail.backends.smtp.EmailBackend" if EMAIL_HOST else "django.core.mail.backends.console.EmailBackend"
)
EMAIL_PORT = env_int("EMAIL_PORT", 587, minimum=1)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", True)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10, minimum=1)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "podium@localhost")
SERVER_EMAIL = env_str("SERVER_EMAIL", DEFAULT_FROM_EMAIL)


# API keys: failed `Api-Key` attempts counted per client IP in the cache; past the
# limit within the window every key attempt from that IP is answered 429, so
# guessing keys is not cheap even though each check is constant-time.
PODIUM_API_KEY_FAILURE_LIMIT = env_int("PODIUM_API_KEY_FAILURE_LIMIT", 20, minimum=1)
PODIUM_API_KEY_FAILURE_WINDOW = env_int("PODIUM_API_KEY_FAILURE_WINDOW", 600, minimum=1)
# Sign-in: failures counted per (username, client address) in the database (so the count holds
# while Redis is down); the LIMITth failure within WINDOW seconds locks that pair for LOCKOUT
# seconds, during which even the right password is refused (leaderboard.services.login_throttle).
PODIUM_LOGIN_FAILURE_LIMIT = env_int("PODIUM_LOGIN_FAILURE_LIMIT", 10, minimum=1)
PODIUM_LOGIN_FAILURE_WINDOW = env_int("PODIUM_LOGIN_FAILURE_WINDOW", 900, minimum=1)
PODIUM_LOGIN_LOCKOUT_SECONDS = env_int("PODIUM_LOGIN_LOCKOUT_SECONDS", 900, minimum=1)
# Every API operation documents the common error answers (400/401/403/404/405/406/415/429).
SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"] = [
    "drf_spectacular.hooks.postprocess_schema_enums",
    "leaderboard.api.schema_hooks.add_common_error_responses",
]
SPECTACULAR_SETTINGS["DESCRIPTION"] = (
    "Podium's REST API: public leaderboards and registry, submitter uploads, admin actions. "
    'Errors are always {"error": {"code", "message"}}. See docs/api.md.'
)

# Verdict notifications (submissions.services.notifications). Email goes
# through the EMAIL_* settings above. Webhooks: a POST that takes longer than the timeout is a
# failed attempt; a failed one is retried MAX_ATTEMPTS times in all, waiting 30 s, 60 s, 120 s ...
# (capped at an hour). Private, loopback and link-local receivers are refused (SSRF) unless
# ALLOW_PRIVATE is on: for development and tests on one machine, never in production.
PODIUM_WEBHOOK_TIMEOUT_SECONDS = env_int("PODIUM_WEBHOOK_TIMEOUT_SECONDS", 5, minimum=1)
PODIUM_WEBHOOK_MAX_ATTEMPTS = env_int("PODIUM_WEBHOOK_MAX_ATTEMPTS", 6, minimum=1)
PODIUM_WEBHOOK_ALLOW_PRIVATE = env_bool("PODIUM_WEBHOOK_ALLOW_PRIVATE", False)
CELERY_BEAT_SCHEDULE["sweep-notifications"] = {
    "task": "submissions.tasks.sweep_notifications",
    "schedule": float(PODIUM_SWEEP_EVERY_SECONDS),
}
