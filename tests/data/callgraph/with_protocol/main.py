"""with / async with / async for call the manager's and the iterator's dunders."""


class Managed:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def use(self):
        return 1


class AManaged:
    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        return False


class Stream:
    def __aiter__(self):
        return self

    async def __anext__(self):
        raise StopAsyncIteration


def run():
    with Managed() as m:
        m.use()


async def arun():
    async with AManaged():
        pass
    async for _ in Stream():
        pass


run()
arun()
