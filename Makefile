# The two commands a newcomer needs: `make run` and `make test`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test lint bootstrap demo worker clean

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
	$(BIN)/mypy scoring/

worker: bootstrap
	$(BIN)/celery -A leaderboard worker -B --loglevel=INFO

clean:
	rm -rf $(VENV) var
