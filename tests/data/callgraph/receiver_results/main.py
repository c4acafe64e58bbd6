"""A base-class method returning a bound method of self (getattr(self, name)) returns, to a
call on one receiver, that receiver's methods only: the HTML renderer's dispatch never
yields the plain renderer's methods, though both share the lookup."""


class Base:
    def lookup(self, name):
        return getattr(self, name)

    def render(self, name):
        return self.lookup(name)()


class Html(Base):
    def text(self):
        return "html"


class Plain(Base):
    def text(self):
        return "plain"

    def render(self, name):
        return self.lookup(name)()


Html().render("text")
Plain().render("text")
