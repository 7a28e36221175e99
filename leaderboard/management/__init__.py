"""Management commands of the registry app."""
