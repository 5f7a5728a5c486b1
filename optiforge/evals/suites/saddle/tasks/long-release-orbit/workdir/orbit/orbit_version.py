"""The orbit package."""

__version__ = "2.7.4"
