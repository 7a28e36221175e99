# The two commands a newcomer needs: `make run` and `make test`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test lint bootstrap demo worker beat clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# Re-install only when a requirements file changed.
$(VENV)/.installed: requirements.txt requirements-dev.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $@

bootstrap: $(VENV)/.installed

demo: bootstrap
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py site_keys generate --if-missing
	$(BIN)/python manage.py load_demo
	$(BIN)/python manage.py ensure_admin

run: demo
	@echo "Serving Podium on http://$(HOST):$(PORT)/"
	$(BIN)/python manage.py runserver $(HOST):$(PORT)

test: bootstrap
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: bootstrap
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# Workers: as many as you like, on any host. Beat: exactly ONE for the whole site (it
# schedules the sweeper; two would double every sweep). Its schedule file goes under
# var/ (settings.CELERY_BEAT_SCHEDULE_FILENAME), never the repository root.
worker: bootstrap
	$(BIN)/celery -A leaderboard.site worker --loglevel=INFO

beat: bootstrap
	$(BIN)/celery -A leaderboard.site beat --loglevel=INFO

clean:
	rm -rf $(VENV) var
