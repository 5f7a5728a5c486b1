"""Bundled benchmark suites (one subpackage each)."""
