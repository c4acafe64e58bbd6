"""Dynamic dispatch whose targets are still fixed by string literals in the program."""


def handle_start():
    return "start"


def handle_stop():
    return "stop"


class Machine:
    def on_reset(self):
        return "reset"

    def fire(self, event):
        return getattr(self, "on_" + event)()


def route(kind):
    return globals()["handle_" + kind]()


route("start")
route("stop")
Machine().fire("reset")
eval("handle_start()")
