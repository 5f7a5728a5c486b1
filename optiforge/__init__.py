"""optiforge: an open framework for automated optimization engineering with LLM agents."""

__version__ = "0.1.0"
