"""Podium's site package and registry app.

Kept free of Django imports at package level so that pure modules in it (such
as the manifest reader) can be used by the standalone bundle tool.
"""
