def setup():
    return 3


def unused():
    return 0
