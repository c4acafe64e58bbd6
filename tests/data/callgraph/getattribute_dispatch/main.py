"""object.__getattribute__(self, name) is getattr's lookup: a renderer dispatching on the
type of the token it is given reaches the methods those types name, no other."""


class Renderer:
    def text(self, tok):
        return tok

    def strong(self, tok):
        return tok

    def unused(self, tok):
        return tok

    def render(self, tok):
        func = object.__getattribute__(self, tok["type"])
        return func(tok)


r = Renderer()
for t in ({"type": "text"}, {"type": "strong"}):
    r.render(t)
