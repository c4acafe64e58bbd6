"""functools.wraps wrappers, a decorator returning its argument, decorated methods."""
import functools


def timed(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


def tag(fn):
    fn.tagged = True
    return fn


@timed
def load(path):
    return parse(path)


@tag
def parse(path):
    return path.split("/")


class Loader:
    @timed
    def run(self, path):
        return load(path)

    @tag
    def check(self):
        return self.run("a/b")


Loader().check()
