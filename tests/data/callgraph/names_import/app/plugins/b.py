def setup():
    return 2
