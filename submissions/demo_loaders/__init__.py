"""Demo data of the scorecard (seed 001) and race (seed 002) schemes, loaded by
``manage.py load_demo`` through the real upload and verification path."""
