import util


def slugify(text):
    return util.clean(text).replace(" ", "-")
