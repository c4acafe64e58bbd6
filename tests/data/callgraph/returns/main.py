"""Values returned from functions and methods, then called."""


def target():
    return 0


def pick(flag):
    if flag:
        return target
    return fallback


def fallback():
    return 1


def passthrough(fn):
    return fn


class Factory:
    def build(self):
        return Product()


class Product:
    def use(self):
        return target()


pick(True)()
pick(False)()
passthrough(target)()
Factory().build().use()
