"""Functions bound to names through assignments: plain, chained, tuple, starred, re-bound."""

def load():
    return 1

def save():
    return 2

def close():
    return 3

def reopen():
    return 4


first = load
first()

a = b = save
a()
b()

c, (d, e) = close, (load, save)
c()
d()
e()

head, *rest = reopen, load, save
head()
rest[1]()

first = reopen
first()

def local_rebind():
    save = load  # a local named like a global
    save = close
    save()


local_rebind()
