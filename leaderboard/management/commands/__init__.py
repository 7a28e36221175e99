"""`manage.py sync_manifest` and `manage.py ensure_admin`."""
