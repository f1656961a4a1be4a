"""apiserver.cel: compiling (syntax, undeclared variables, bool results, estimated cost), evaluating with kube's
error texts and runtime cost limit, the Kubernetes libraries, and the CRD rule entry point (self/oldSelf)."""

from __future__ import annotations

import pytest

from apiserver import cel
from apiserver.cel.render import render
from apiserver.cel.syntax import parse

OBJ = {"metadata": {"name": "web", "labels": {"app": "web"}},
       "spec": {"replicas": 3, "containers": [{"name": "a", "image": "registry.example.com/a"}]}}


def run(expression: str, **values: object) -> object:
    return cel.compile(expression, tuple(values) or ("object",)).evaluate(values)[0]


@pytest.mark.parametrize(("expression", "expected"), [
    ("object.spec.replicas <= 5", True),
    ("has(object.metadata.labels) && 'app' in object.metadata.labels", True),
    ("object.spec.containers.all(c, c.image.startsWith('registry.example.com/'))", True),
    ("object.spec.containers.map(c, c.name)", ["a"]),
    ("object.metadata.name.matches('^[a-z]+$')", True),
    ("'%s has %d replicas'.format([object.metadata.name, object.spec.replicas])", "web has 3 replicas"),
    ("object.metadata.name.upperAscii()", "WEB"),
    ("[3, 1, 2].sort()", [1, 2, 3]),
    ("[1, 2, 3].isSorted() && ![2, 1].isSorted()", True),
    ("'abc123def45'.findAll('[0-9]+')", ["123", "45"]),
    ("quantity('1Gi').isGreaterThan(quantity('1000Mi'))", True),
    ("quantity('1500m').add(quantity('500m')).asInteger()", 2),
    ("isQuantity('1Gi') && !isQuantity('1 Gi')", True),
    ("url('https://example.com:8443/a/b?x=1').getHostname()", "example.com"),
    ("url('https://example.com:8443/a/b?x=1').getPort()", "8443"),
    ("cidr('127.16.0.0/12').containsIP(ip('127.16.3.4'))", True),
    ("ip('::1').family() == 6 && ip('127.0.0.1').isLoopback()", True),
    ("cidr('10.1.2.3/8').masked() == cidr('10.0.0.0/8')", True),
    ("authorizer.group('apps').resource('deployments').namespace('x').check('delete').allowed()", True),
])
def test_expressions(expression: str, expected: object) -> None:
    assert run(expression, object=OBJ, authorizer=cel.authorizer()) == expected


def test_compile_errors_read_as_cel_go() -> None:
    with pytest.raises(cel.CompileError, match=r"^ERROR: <input>:1:12: undeclared reference to 'params' "
                                               r"\(in container ''\)$"):
        cel.compile("object.x > params.y", ("object",))
    with pytest.raises(cel.CompileError, match=r"^ERROR: <input>:1:\d+: Syntax error"):
        cel.compile("object.spec.replicas <", ("object",))
    with pytest.raises(cel.CompileError, match="cel expression must evaluate to a bool"):
        cel.compile("'a string'", ("object",), boolean=True)
    cel.compile("object.spec.containers.all(c, c.name != '')", ("object",), boolean=True)  # c is bound


def test_evaluation_errors_read_as_cel_go() -> None:
    with pytest.raises(cel.EvaluationError, match="^no such key: missing$"):
        run("object.missing > 1", object={})
    with pytest.raises(cel.EvaluationError, match="^quantities must match the regular expression"):
        run("quantity('x1') == quantity('1')", object={})


def test_runtime_cost_limit() -> None:
    program = cel.compile("object.items.all(x, object.items.all(y, x + y >= 0))", ("object",))
    value, cost = program.evaluate({"object": {"items": list(range(10))}})
    assert value is True and 100 < cost < 1000
    with pytest.raises(cel.CostLimitExceeded, match="^operation cancelled: actual cost limit exceeded$"):
        program.evaluate({"object": {"items": list(range(2000))}})


def test_rendering_counts_comprehension_bodies_and_rewrites_optionals() -> None:
    assert render(parse("a.all(x, b.exists(y, y == x))")) == \
        "a.all(x, __kubelab_cost(3, b.exists(y, __kubelab_cost(4, (y) == (x)))))"
    assert render(parse("object.?spec.replicas.orValue(1) + -x[0]")) == \
        "(__kubelab_opt_select(__kubelab_opt_select(object, 'spec'), 'replicas').orValue(1)) + (-(x[0]))"


@pytest.mark.parametrize(("expression", "expected"), [
    ("object.?spec.?replicas.orValue(1)", 3),
    ("object.?spec.?paused.orValue(false)", False),
    ("object.?spec.paused.hasValue()", False),
    ("object.metadata.labels[?'app'].value()", "web"),
    ("object.metadata.labels[?'tier'].orValue('none')", "none"),
    ("optional.of(1).or(optional.of(2)).value()", 1),
    ("optional.none().or(optional.ofNonZeroValue(0)).hasValue()", False),
    ("(1 + 2) * 3 == 9 && !(true ? false : true) && -(1) < 0", True),
])
def test_optional_values(expression: str, expected: object) -> None:
    assert run(expression, object=OBJ) == expected


def test_crd_rules_with_self_and_old_self() -> None:
    rule = cel.compile_rule("self.replicas >= oldSelf.replicas", transition=True)
    assert rule.evaluate({"self": {"replicas": 3}, "oldSelf": {"replicas": 2}})[0] is True
    with pytest.raises(cel.CompileError, match="undeclared reference to 'oldSelf'"):
        cel.compile_rule("self.replicas >= oldSelf.replicas")
    # Unbounded nested lists are over budget, as kube estimates them without maxItems; bounded they are not.
    nested = "self.items.all(x, self.items.all(y, x != y || x == y))"
    with pytest.raises(cel.CompileError, match=r"^estimated rule cost exceeds budget by factor of .*x \(try "
                                               r"simplifying the rule, or adding maxItems"):
        cel.compile_rule(nested)
    assert cel.compile_rule(nested, sizes=lambda path: 10 if path == "self.items" else None).estimated_cost < 1000
