"""A module-level __getattr__ (PEP 562): names the module does not bind."""


def _load():
    return 1


def __getattr__(name):
    return _load()
