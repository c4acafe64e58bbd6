__all__ = ["shout"]


def clean(text):
    return text.strip()


def shout(text):
    return clean(text).upper()
