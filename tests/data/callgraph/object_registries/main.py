"""Objects by allocation site: two registries of one class, each holding its own items in a dict
its __init__ allocates (markdown's util.Registry). Each loop runs its own registry's items only."""


class Registry:
    def __init__(self):
        self._data = {}

    def register(self, item, name):
        self._data[name] = item

    def __iter__(self):
        return iter(list(self._data.values()))


class Pre:
    def run(self):
        pass


class Post:
    def run(self):
        pass


def build_pre():
    r = Registry()
    r.register(Pre(), "pre")
    return r


def build_post():
    r = Registry()
    r.register(Post(), "post")
    return r


class Markdown:
    def __init__(self):
        self.pre = build_pre()
        self.post = build_post()

    def run_pre(self):
        for p in self.pre:
            p.run()

    def run_post(self):
        for q in self.post:
            q.run()


md = Markdown()
md.run_pre()
md.run_post()
