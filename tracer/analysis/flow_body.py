"""Statements and tests of the flow: each path the code can take, walked once;
tests the code decides statically (hasattr, isinstance, `is None` on an object) pick
their branch, the others run both."""

from __future__ import annotations

import ast

from tracer.analysis.flow_exprs import Expressions, dotted_source
from tracer.analysis.flow_values import (
    ClassObj,
    Const,
    Env,
    Evaluator,
    Flow,
    Ids,
    Inst,
    Opaque,
    Problem,
    Values,
    Write,
    closest,
    tainted,
    union_values,
)
from tracer.bind.syntax import hasattr_test
from tracer.resolve.resolver import ClassRef


class _Stop(Exception):
    """The path ends (return or raise)."""


class BodyWalker(Expressions):
    """One method's statements, walked once along each path the code can take."""

    def __init__(self, analysis: Evaluator, flow: Flow, owner: ClassRef, concrete: ClassRef, offset: int,
                 value_mode: bool, function: ast.AST):
        self.function = function
        self.a = analysis
        self.flow = flow
        self.owner = owner
        self.concrete = concrete
        self.offset = offset
        self.value_mode = value_mode
        self.resolver = analysis.resolver

    def line(self, node: ast.AST) -> int:
        return int(getattr(node, "lineno", 0)) + self.offset

    # -- statements -------------------------------------------------------------------------------
    def run(self, body: list[ast.stmt], env: Env) -> Env | None:
        """The env at the end of ``body``, or None when every path ends in it."""
        for stmt in body:
            try:
                result = self.statement(stmt, env)
            except _Stop:
                return None
            if result is None:
                return None
            env = result
        return env

    def statement(self, node: ast.stmt, env: Env) -> Env | None:
        if isinstance(node, ast.Assign):
            value = self.expr(node.value, env)
            for target in node.targets:
                self.assign(target, value, env, node)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self.assign(node.target, self.expr(node.value, env), env, node)
        elif isinstance(node, ast.AugAssign):
            value = union_values(self.expr(node.value, env), self.expr(node.target, env))
            self.assign(node.target, value, env, node)
        elif isinstance(node, ast.Expr):
            self.expr(node.value, env)
        elif isinstance(node, ast.Return):
            if node.value is not None:
                self.flow.returns = union_values(self.flow.returns, self.expr(node.value, env))
            raise _Stop
        elif isinstance(node, ast.Raise):
            if node.exc is not None:
                name = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if isinstance(name, ast.Name) and name.id == "NotImplementedError":
                    self.flow.problems.append(Problem("not-implemented", self.line(node), node.col_offset,
                                                      "raise NotImplementedError", "raises NotImplementedError"))
            raise _Stop
        elif isinstance(node, ast.If):
            return self.branch(node, env)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            items = self.expr(node.iter, env)
            inner = Env(env)
            self.assign(node.target, (Ids("an element of the ids"),) if tainted(items) else (Opaque("a loop value"),),
                        inner, node)
            after = self.run(node.body, inner)
            return self._merge(env, after, self.run(node.orelse, Env(env)) if node.orelse else env)
        elif isinstance(node, ast.While):
            self.expr(node.test, env)
            return self._merge(env, self.run(node.body, Env(env)), env)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                value = self.expr(item.context_expr, env)
                if item.optional_vars is not None:
                    self.assign(item.optional_vars, value, env, node)
            return self.run(node.body, env)
        elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            ends = [self.run(node.body, Env(env))]  # type: ignore[attr-defined]
            for handler in node.handlers:  # type: ignore[attr-defined]
                ends.append(self.run(handler.body, Env(env)))
            merged = self._merge(env, *ends)
            if merged is not None and node.finalbody:  # type: ignore[attr-defined]
                merged = self.run(node.finalbody, merged)  # type: ignore[attr-defined]
            return merged
        elif isinstance(node, ast.Assert):
            self.check_assert(node, env)
        elif isinstance(node, ast.Match):
            ends = [self.run(case.body, Env(env)) for case in node.cases]
            return self._merge(env, *ends, env)
        return env

    def _merge(self, base: Env, *ends: Env | None) -> Env | None:
        alive = [e for e in ends if e is not None]
        if not alive:
            return None
        merged = Env()
        for name in dict.fromkeys(n for e in alive for n in e):
            merged[name] = union_values(*(e.get(name, ()) for e in alive))
        return merged

    def branch(self, node: ast.If, env: Env) -> Env | None:
        decided = self.truth(node.test, env)
        if decided is True:
            after = self.run(node.body, env)
            if after is None and not self.value_mode:
                self._guard_raises(node, env)
            return after
        if decided is False:
            self._skipped_guard(node, env)
            return self.run(node.orelse, env)
        return self._merge(env, self.run(node.body, Env(env)), self.run(node.orelse, Env(env)))

    def _guard_raises(self, node: ast.If, env: Env) -> None:
        """`if not hasattr(x, "m"): raise ...` where x has no m: the setter fails at start-up.
        The problem is the call of x.m the guard protects (else the raise)."""
        raised = next((s for s in node.body if isinstance(s, ast.Raise)), None)
        if raised is None:
            return
        for test in ast.walk(node.test):
            if (tested := hasattr_test(test)) is None:
                continue
            wanted, receiver = tested.name, ast.unparse(tested.receiver)
            if self.has(self.expr(tested.receiver, env), wanted) is not False:
                continue
            types = [v for v in self.expr(tested.receiver, env) if isinstance(v, Inst)]
            kinds = ", ".join(f"a {t.cls.name} ({t.how})" for t in types) or "its class"
            names = self.resolver.method_names_in_mro(types[0].cls) if types else []
            call = next((c for c in ast.walk(self.function) if isinstance(c, ast.Call)
                         and isinstance(c.func, ast.Attribute) and c.func.attr == wanted
                         and ast.unparse(c.func.value) == receiver), None)
            where = call if call is not None else raised
            self.flow.problems.append(Problem(
                "missing-method", self.line(where), where.col_offset, f"{receiver}.{wanted}",
                f"{receiver}, {kinds}, which has no {wanted} (the guard at line {self.line(node)} raises instead)",
                receiver, wanted, closest(wanted, names)))
            return

    def _skipped_guard(self, node: ast.If, env: Env) -> None:
        """`if hasattr(x, "m"): x.m(ids)` where x has no m: the guard skips the call silently."""
        test = node.test
        if node.orelse:
            return  # the else branch says what happens instead
        if (tested := hasattr_test(test)) is None:
            return
        wanted = tested.name
        receiver = ast.unparse(tested.receiver)
        for sub in ast.walk(ast.Module(body=node.body, type_ignores=[])):
            if (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == wanted
                    and ast.unparse(sub.func.value) == receiver
                    and (tainted(v for a in sub.args for v in self.expr(a, env)) or wanted in self.a.carriers)):
                types = [v for v in self.expr(tested.receiver, env) if isinstance(v, Inst)]
                kinds = ", ".join(f"a {t.cls.name} ({t.how})" for t in types) or "its class"
                self.flow.problems.append(Problem(
                    "guarded-missing", self.line(sub), sub.col_offset, ast.unparse(sub.func),
                    f"{receiver}, {kinds}, which has no {wanted} (the hasattr guard skips the call silently)",
                    receiver, wanted))
                return

    def assign(self, target: ast.expr, value: Values, env: Env, node: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self.assign(element, (Ids("an element of the ids"),) if tainted(value) else (Opaque("unpacked"),),
                            env, node)
        elif isinstance(target, ast.Starred):
            self.assign(target.value, value, env, node)
        elif isinstance(target, ast.Attribute):
            self.write(target, value, env, node)
        elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Attribute):
            # `self.table[f"out_{layer}"] = True`: the ids become the keys of a stored table
            if tainted(value) or tainted(self.expr(target.slice, env)):
                self.write(target.value, (Ids("a key or value of the ids"),), env, node)

    def write(self, target: ast.Attribute, value: Values, env: Env, node: ast.stmt) -> None:
        if self.value_mode:
            return
        base = self.a.typed(self.expr(target.value, env))
        owners = tuple(v for v in base if isinstance(v, Inst))
        why = "; ".join(dict.fromkeys(v.why for v in base if isinstance(v, Opaque)))
        self.flow.writes.append(Write(self.line(node), node.col_offset, ast.unparse(target), owners, why,
                                      target.attr, tainted(value)))

    def check_assert(self, node: ast.Assert, env: Env) -> None:
        """`assert isinstance(holder, Mixin)`: a holder whose class lacks the base fails at start-up."""
        test = node.test
        if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance"
                and len(test.args) == 2):
            return
        wanted = self.class_of(test.args[1])
        if wanted is None:
            return
        atoms = self.expr(test.args[0], env)
        failing = []
        for atom in atoms:
            if isinstance(atom, Inst):
                classes, problems = self.resolver.mro(atom.cls)
                if wanted not in classes and not problems:
                    failing.append(atom)
                    self.flow.problems.append(Problem(
                        "assert-fails", self.line(node), node.col_offset, ast.unparse(test),
                        f"{ast.unparse(test.args[0])}, a {atom.cls.name} ({atom.how}), is not a {wanted.name}: "
                        f"`assert {ast.unparse(test)}` fails at start-up"))
        if failing and len(failing) == len(atoms):
            raise _Stop  # AssertionError: nothing after it runs

    def class_of(self, node: ast.expr) -> ClassRef | None:
        dotted = dotted_source(node)
        if not dotted:
            return None
        found = self.resolver.resolve_class(self.owner.module, dotted)
        return found if isinstance(found, ClassRef) else None

    # -- tests ------------------------------------------------------------------------------------
    def truth(self, node: ast.expr, env: Env) -> bool | None:
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self.truth(node.operand, env)
            return None if inner is None else not inner
        if isinstance(node, ast.BoolOp):
            values = [self.truth(v, env) for v in node.values]
            if isinstance(node.op, ast.And):
                return False if False in values else (True if all(v is True for v in values) else None)
            return True if True in values else (False if all(v is False for v in values) else None)
        if isinstance(node, ast.Constant):
            return bool(node.value)
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)):
            other = node.comparators[0]
            if isinstance(other, ast.Constant) and other.value is None:
                left = self.expr(node.left, env)
                is_none = self._is_none(left)
                if is_none is None:
                    return None
                return is_none if isinstance(node.ops[0], ast.Is) else not is_none
        if (tested := hasattr_test(node)) is not None:
            return self.has(self.expr(tested.receiver, env), tested.name)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 2:
            if node.func.id == "isinstance":
                wanted = self.class_of(node.args[1])
                atoms = self.expr(node.args[0], env)
                if wanted is not None and atoms and all(isinstance(a, Inst) for a in atoms):
                    answers = {wanted in self.resolver.mro(a.cls)[0] for a in atoms}  # type: ignore[union-attr]
                    return answers.pop() if len(answers) == 1 else None
        result = self.expr(node, env)
        if result and all(isinstance(v, Const) for v in result):
            answers = {bool(v.value) for v in result}  # type: ignore[union-attr]
            return answers.pop() if len(answers) == 1 else None
        return None

    @staticmethod
    def _is_none(values: Values) -> bool | None:
        if not values:
            return None
        answers = set()
        for v in values:
            if isinstance(v, Const):
                answers.add(v.value is None)
            elif isinstance(v, (Inst, ClassObj)):
                answers.add(False)
            else:
                return None
        return answers.pop() if len(answers) == 1 else None

    def has(self, values: Values, name: str) -> bool | None:
        answers = set()
        for atom in values:
            if not isinstance(atom, Inst):
                return None
            if self.resolver.find_method(atom.cls, name) is not None:
                answers.add(True)
                continue
            typed = self.resolver.attribute_types(atom.cls, name)
            if isinstance(typed, list) or not typed.why.startswith("no assignment of"):
                answers.add(True)  # assigned (whatever its class): hasattr is true
                continue
            _, problems = self.resolver.mro(atom.cls)
            if problems:
                return None
            answers.add(False)
        return answers.pop() if len(answers) == 1 else None

