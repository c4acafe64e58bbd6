from .api import publish

__all__ = ["publish"]
