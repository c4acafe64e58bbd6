from .tools import slugify


def publish(text):
    return slugify(text)
