"""getattr by a name known only by how it starts (f-string, str.format, %, "+" with an unknown
string, a case change): every attribute of the receiver's class of that prefix."""


class Visitor:
    def visit(self, node):
        method = getattr(self, f"visit_{type(node).__name__}", self.generic)
        return method(node)

    def dispatch(self, kind):
        return getattr(self, "_do_{}".format(kind).lower())()

    def run(self, name):
        return getattr(self, "on_" + name)()

    def old(self, name):
        return getattr(self, "on_%s" % name)()

    def visit_Name(self, node):
        return 1

    def visit_Call(self, node):
        return 2

    def generic(self, node):
        return 0

    def _do_a(self):
        return 1

    def on_x(self):
        return 1

    def other(self):
        return 0


def walk(node, kind):
    v = Visitor()
    v.visit(node)
    v.dispatch(kind)
    v.run(kind)
    v.old(kind)


walk(object(), input())
