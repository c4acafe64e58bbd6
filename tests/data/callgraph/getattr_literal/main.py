"""getattr with a literal name (with and without a default), hasattr guards, setattr'd callables."""


class Model:
    def set_eagle3_layers_to_capture(self, ids):
        self.ids = ids

    def forward(self, x):
        return x


class Wrapper:
    def __init__(self):
        self.model = Model()

    def set_eagle3_layers_to_capture(self, ids):
        getattr(self.model, "set_eagle3_layers_to_capture")(ids)

    def run(self, x):
        fn = getattr(self, "forward_impl", None) or getattr(self.model, "forward")
        return fn(x)


def helper():
    return 0


w = Wrapper()
if hasattr(w, "set_eagle3_layers_to_capture"):
    w.set_eagle3_layers_to_capture([1])
w.run(1)
setattr(w, "hook", helper)
w.hook()
