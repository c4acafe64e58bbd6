"""Own exception classes raised as `raise Cls` and `raise Cls(...)`; handlers calling methods."""

class ConfigError(Exception):
    def __init__(self, msg="bad config"):
        super().__init__(msg)
        self.msg = msg

    def describe(self):
        return self.msg

class Errors:
    class Timeout(Exception):
        def __init__(self):
            super().__init__("timeout")

def report(err):
    return err.describe()

def check(value):
    if value is None:
        raise ConfigError
    if value < 0:
        raise ConfigError("negative")
    raise Errors.Timeout

def run():
    for value in (None, -1, 1):
        try:
            check(value)
        except ConfigError as err:
            report(err)
        except Errors.Timeout:
            pass


run()
