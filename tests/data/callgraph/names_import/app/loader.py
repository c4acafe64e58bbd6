"""Plugins imported by a name computed from a constant start: every module of that start."""

import importlib


def load(name):
    return importlib.import_module("app.plugins." + name).setup()


def load_f(name):
    return importlib.import_module(f"app.plugins.{name}").setup()


def load_exact():
    return importlib.import_module("app.other.c").setup()


load(input())
load_f(input())
load_exact()
