"""Calls through every import form: module, dotted alias, from-import, as-name, star, package re-export."""
import util
import pkg
import pkg.tools as tools
from pkg import api
from pkg.tools import slugify as slug
from util import *

util.clean("x")
tools.slugify("y")
slug("z")
api.publish("w")
pkg.publish("u")
shout("v")
