"""Methods called on parameters: annotated (plain, string, Optional) and unannotated."""
from typing import Optional


class Engine:
    def start(self):
        return "on"

    def stop(self):
        return "off"


class Car:
    def __init__(self, engine: Engine):
        self.engine = engine

    def drive(self):
        return self.engine.start()


def service(car: "Car", spare: Optional[Engine] = None):
    car.drive()
    if spare is not None:
        spare.stop()


def inspect(thing):
    return thing.drive()


car = Car(Engine())
service(car, Engine())
inspect(car)
