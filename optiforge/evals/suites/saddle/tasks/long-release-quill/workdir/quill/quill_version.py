"""The quill package."""

__version__ = "0.9.12"
