"""Calls into modules outside the program are dropped; own code around them is kept."""
import json
import os.path
from collections import OrderedDict


class Settings(OrderedDict):
    def dump(self):
        return json.dumps(self)

    def path(self):
        self.update(kind="file")
        return os.path.join("/tmp", self.name())

    def name(self):
        return "settings"


def load(text):
    data = json.loads(text)
    settings = Settings(data)
    settings.path()
    return settings


load("{}").dump()
