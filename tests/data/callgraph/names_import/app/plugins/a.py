def setup():
    return 1
