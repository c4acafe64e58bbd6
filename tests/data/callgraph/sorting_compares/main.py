import bisect
import heapq
from heapq import heappush


class Version:
    def __init__(self, n):
        self.n = n

    def __lt__(self, other):
        return self.n < other.n


class Greater:
    def __gt__(self, other):
        return True


class Both:
    def __lt__(self, other):
        return True

    def __gt__(self, other):
        return False


def largest(bs):
    return max(bs)


def least(bs):
    return min(bs)


class Unordered:
    def __eq__(self, other):
        return True


def key_of(v):
    return v.n


def newest(vs):
    return max(vs)


def ordered(vs):
    return sorted(vs)


def by_key(vs):
    return sorted(vs, key=key_of)


def in_place(vs):
    vs.sort()


def smaller(a, b):
    return min(a, b)


def queue(items):
    heap = []
    for item in items:
        heappush(heap, item)
    return heapq.heappop(heap)


def insert(xs, x):
    bisect.insort(xs, x)


def reflected(gs):
    return sorted(gs)


def plain(us):
    return sorted(us, key=id)


def main():
    vs = [Version(1), Version(2)]
    newest(vs)
    ordered(vs)
    by_key(vs)
    in_place(vs)
    smaller(Version(3), Version(4))
    queue([Version(5)])
    insert([Version(6)], Version(7))
    reflected([Greater(), Greater()])
    plain([Unordered()])
    largest([Both(), Both()])
    least([Both(), Both()])
