"""The tally package."""

__version__ = "5.1.0"
