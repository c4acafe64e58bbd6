"""A table module another module reads back through sys.modules (as PLY reads its tables)."""


def action():
    return 1


def unused():
    return 0


TABLE = [action]
