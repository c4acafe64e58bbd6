"""Names computed by the program: a parser generator's reflection (PLY's yacc/lex), a visitor's
``visit_`` + class name, ``inspect.getmembers``. What no name reaches stays absent."""

import inspect


class Production:
    def __init__(self, func):
        self.func = func
        self.callable = None

    def bind(self, pdict):
        self.callable = pdict[self.func]


def yacc(module):
    items = [(k, getattr(module, k)) for k in dir(module)]
    pdict = dict(items)
    prods = []
    for name, item in pdict.items():
        if not name.startswith("p_") or name == "p_error":
            continue
        prods.append(Production(name))
    for p in prods:
        p.bind(pdict)
    return prods


def parse(prods, slot):
    for p in prods:
        p.callable(slot)


def lex(obj):
    ldict = dict([(k, getattr(obj, k)) for k in dir(obj)])
    rules = [f for f in ldict if f[:2] == "t_"]
    return [ldict[f] for f in rules]


def tokens(funcs, text):
    for fn in funcs:
        fn(text)


class Parser:
    def __init__(self):
        self.prods = yacc(self)
        self.funcs = lex(self)

    def p_expr(self, p):
        return 1

    def p_term(self, p):
        return 2

    def t_NUMBER(self, t):
        return t

    def helper(self):
        return 0

    def run(self, text):
        parse(self.prods, text)
        tokens(self.funcs, text)


class Node:
    pass


class Name(Node):
    pass


class Call(Node):
    pass


class Visitor:
    def visit(self, node):
        method = "visit_" + type(node).__name__
        return getattr(self, method, self.generic_visit)(node)

    def visit_Name(self, node):
        return 1

    def visit_Call(self, node):
        return 2

    def generic_visit(self, node):
        return 0

    def unrelated(self):
        return 0


def members(obj):
    for name, _ in inspect.getmembers(obj):
        if name.startswith("on_"):
            getattr(obj, name)()


def handlers(cls):
    table = {k: v for k, v in vars(cls).items() if k.startswith("on_")}
    table["on_start"](None)
    return cls.__dict__["off"]


def marked(fn):
    fn._marked = True
    return fn


class Rules:
    @marked
    def p_marked(self):
        return 1

    def p_plain(self):
        return 2


def collect(cls):
    for name in dir(cls):
        if name.startswith("p_"):
            method = getattr(cls, name)
            if hasattr(method, "_marked"):
                method(None)


def table_of(name):
    import sys
    return sys.modules[name].TABLE


class Events:
    def on_start(self):
        return 1

    def on_stop(self):
        return 2

    def off(self):
        return 0


Parser().run("1")
Visitor().visit(Name())
Visitor().visit(Call())
members(Events())
handlers(Events)(None)
collect(Rules)
table_of("tables")[0]()
