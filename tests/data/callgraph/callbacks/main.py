"""Functions and bound methods handed to code of the program that calls them later: a hook
registry, a parameter called inside a helper, a callback kept on an instance, a builtin's key."""


class EventBus:
    def __init__(self):
        self.handlers = []

    def subscribe(self, handler):
        self.handlers.append(handler)

    def publish(self, event):
        for handler in self.handlers:
            handler(event)


def on_start(event):
    return event


class Logger:
    def record(self, event):
        return event


def apply_twice(fn, value):
    return fn(fn(value))


def increment(x):
    return x + 1


def never_passed(x):
    return x


class Timer:
    def __init__(self, on_done):
        self.on_done = on_done

    def finish(self):
        self.on_done("done")


def rank(item):
    return -item


def order(items):
    return sorted(items, key=rank)


bus = EventBus()
bus.subscribe(on_start)
bus.subscribe(Logger().record)
bus.publish("start")
apply_twice(increment, 1)
Timer(on_start).finish()
order([3, 1, 2])
