"""Label selectors: what ``kubectl get -l …`` and controllers' selectors select, and kube-apiserver's errors."""

from __future__ import annotations

import pytest

from apimachinery.errors import BadRequest
from apimachinery.labels import (
    Requirement,
    everything,
    new_requirement,
    node_selector_requirement_matches,
    nothing,
    parse_selector,
    selector_from_label_selector,
    selector_from_set,
    validate_label_key,
    validate_label_value,
)

WEB = {"app": "web", "tier": "frontend", "release": "3"}
DB = {"app": "db", "tier": "backend"}
BARE: dict[str, str] = {}


@pytest.mark.parametrize(("text", "web", "db", "bare"), [
    ("app=web", True, False, False),
    ("app==web", True, False, False),
    ("app!=web", False, True, True),  # != also selects objects without the label
    ("app in (web, db)", True, True, False),
    ("app notin (web)", False, True, True),
    ("release", True, False, False),
    ("!release", False, True, True),
    ("app=web,tier=frontend", True, False, False),
    ("app=web,tier=backend", False, False, False),
    ("release>2", True, False, False),
    ("release<3", False, False, False),
    ("  app = web ,  tier in(frontend)  ", True, False, False),
    ("", True, True, True),
])
def test_selector_matches_like_kubectl_get_l(text: str, web: bool, db: bool, bare: bool) -> None:
    selector = parse_selector(text)
    assert (selector.matches(WEB), selector.matches(DB), selector.matches(BARE)) == (web, db, bare)


@pytest.mark.parametrize(("text", "canonical"), [
    ("tier=frontend,app=web", "app=web,tier=frontend"),
    ("x in (c,a,b)", "x in (a,b,c)"),
    ("x notin ()", "x notin ()"),
    ("x in (foo,,baz),y,!z", "x in (,baz,foo),y,!z"),
    ("a>1,b<2", "a>1,b<2"),
    ("a==b", "a==b"),
    ("a=", "a="),
    ("in=in", "in=in"),  # "in" and "notin" are keywords only where an operator may stand
    ("x in (in,notin)", "x in (in,notin)"),
])
def test_selector_string_is_canonical(text: str, canonical: str) -> None:
    assert str(parse_selector(text)) == canonical


def test_empty_values_select_missing_and_empty_labels_as_kubernetes_does() -> None:
    selector = parse_selector("x in (a,)")
    assert selector.matches({"x": ""}) and selector.matches({"x": "a"})
    assert not selector.matches({})
    assert parse_selector("x=").matches({"x": ""}) and not parse_selector("x=").matches({})


def test_gt_lt_compare_integers_and_ignore_non_integers() -> None:
    assert parse_selector("n>9").matches({"n": "10"})  # numeric, not string, comparison
    assert not parse_selector("n>9").matches({"n": "abc"})
    assert not parse_selector("n<9").matches({})


@pytest.mark.parametrize(("text", "message"), [
    ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
    ("app:monolith", "unable to parse requirement: <nil>: Invalid value: \"app:monolith\": name part must consist "
                     "of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
                     "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
                     "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
    ("a,", "found '', expected: identifier after ','"),
    ("a=b c", "found 'c', expected: ',' or 'end of string'"),
    ("=a", "found '=', expected: !, identifier, or 'end of string'"),
    ("a in b", "unable to parse requirement: found 'b' expected: '('"),
    ("a in (b", "unable to parse requirement: found '', expected: ',' or ')'"),
    ("a in (b c)", "unable to parse requirement: found 'c', expected: ',' or ')'"),
    ("!", "unable to parse requirement: found '', expected: identifier"),
    ("a>x", "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value "
            "must be an integer"),
    ("app=web-", "unable to parse requirement: values[0][app]: Invalid value: \"web-\": a valid label must be an "
                 "empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
                 "an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
                 "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
])
def test_parse_errors_carry_kube_apiserver_messages(text: str, message: str) -> None:
    with pytest.raises(BadRequest) as caught:
        parse_selector(text)
    assert caught.value.message == message
    assert caught.value.to_status()["code"] == 400


def test_invalid_key_prefix_is_reported_with_prefix_wording() -> None:
    with pytest.raises(BadRequest, match=r"prefix part a lowercase RFC 1123 subdomain"):
        parse_selector("app.kubernetes_io/name=x")


def test_label_selector_object_semantics() -> None:
    assert selector_from_label_selector(None) is nothing()
    assert not nothing().matches(WEB) and not nothing().empty()
    assert selector_from_label_selector({}).empty()
    assert selector_from_label_selector({"matchLabels": {}, "matchExpressions": []}).matches(BARE)
    selector = selector_from_label_selector({
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["frontend", "edge"]},
                             {"key": "canary", "operator": "DoesNotExist"}],
    })
    assert selector.matches(WEB)
    assert not selector.matches({**WEB, "canary": "yes"})
    assert str(selector) == "app=web,!canary,tier in (edge,frontend)"  # sorted by key, as Go sorts them


def test_label_selector_requirements_sort_by_key() -> None:
    selector = selector_from_label_selector({"matchExpressions": [
        {"key": "b", "operator": "Exists"}, {"key": "a", "operator": "NotIn", "values": ["x"]}]})
    assert str(selector) == "a notin (x),b"


@pytest.mark.parametrize(("label_selector", "message"), [
    ({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
     '"Gt" is not a valid label selector operator'),
    ({"matchExpressions": [{"key": "a", "operator": "In"}]},
     "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"),
    ({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["v"]}]},
     'values: Invalid value: []string{"v"}: values set must be empty for exists and does not exist'),
    ({"matchLabels": {"bad key": "v"}}, 'key: Invalid value: "bad key": name part must consist of'),
])
def test_invalid_label_selector_objects_are_rejected(label_selector: dict, message: str) -> None:
    with pytest.raises(BadRequest) as caught:
        selector_from_label_selector(label_selector)
    assert caught.value.message.startswith(message)


def test_selector_from_set_matches_exactly_and_empty_set_matches_everything() -> None:
    assert selector_from_set({"app": "web"}).matches(WEB)
    assert not selector_from_set({"app": "web", "x": "y"}).matches(WEB)
    assert selector_from_set({}) is everything() and selector_from_set(None).matches(BARE)
    assert str(selector_from_set({"b": "2", "a": "1"})) == "a=1,b=2"


def test_requires_exact_match_exposes_pinned_values() -> None:
    selector = parse_selector("app=web,tier in (a),x in (a,b),y!=z")
    assert selector.requires_exact_match("app") == "web"
    assert selector.requires_exact_match("tier") == "a"
    assert selector.requires_exact_match("x") is None
    assert selector.requires_exact_match("y") is None
    assert selector.requires_exact_match("nope") is None


def test_selectors_are_immutable_values() -> None:
    first, second = parse_selector("a=1,b in (x,y)"), parse_selector("b in (y,x), a=1")
    assert first == second and hash(first) == hash(second)
    extended = first.add(new_requirement("c", "exists"))
    assert str(extended) == "a=1,b in (x,y),c" and str(first) == "a=1,b in (x,y)"
    with pytest.raises(AttributeError):
        first.requirements[0].key = "z"  # type: ignore[misc]


def test_new_requirement_validates_like_kubernetes() -> None:
    assert new_requirement("a", "in", ["x"]).matches({"a": "x"})
    with pytest.raises(BadRequest, match=r"exact-match compatibility requires one single value"):
        new_requirement("a", "=", ["x", "y"])
    with pytest.raises(BadRequest, match=r'operator: Unsupported value: "~"'):
        new_requirement("a", "~", [])


@pytest.mark.parametrize(("operator", "values", "labels", "expected"), [
    ("In", ["ssd", "nvme"], {"disk": "ssd"}, True),
    ("In", ["ssd"], {}, False),
    ("NotIn", ["hdd"], {"disk": "ssd"}, True),
    ("NotIn", ["hdd"], {}, True),
    ("Exists", [], {"disk": ""}, True),
    ("DoesNotExist", [], {"disk": "x"}, False),
    ("Gt", ["4"], {"disk": "8"}, True),
    ("Gt", ["4"], {"disk": "4"}, False),
    ("Lt", ["4"], {"disk": "-1"}, True),
    ("Gt", ["4"], {"disk": "big"}, False),  # a non-integer label value never satisfies Gt/Lt
    ("Gt", ["four"], {"disk": "8"}, False),  # an invalid requirement matches nothing
    ("Gt", ["1", "2"], {"disk": "8"}, False),
    ("Exists", ["x"], {"disk": "8"}, False),
    ("Bogus", [], {"disk": "8"}, False),
])
def test_node_selector_requirements(operator: str, values: list[str], labels: dict[str, str],
                                    expected: bool) -> None:
    requirement = {"key": "disk", "operator": operator, "values": values}
    assert node_selector_requirement_matches(requirement, labels) is expected


def test_label_key_and_value_validation_wording() -> None:
    assert validate_label_key("example.com/app") == []
    assert validate_label_key("app") == []
    assert validate_label_key("a" * 64) == ["name part must be no more than 63 characters"]
    assert validate_label_key("/x") == ["prefix part must be non-empty"]
    assert validate_label_key("a/b/c")[0].startswith("a qualified name must consist of alphanumeric characters")
    assert validate_label_value("") == []
    assert validate_label_value("v1.2_beta-3") == []
    assert validate_label_value("x" * 64) == ["must be no more than 63 characters"]
    assert validate_label_value("-x")[0].startswith("a valid label must be an empty string")


def test_requirement_string_forms() -> None:
    assert str(Requirement("k", "!")) == "!k"
    assert str(Requirement("k", "exists")) == "k"
    assert str(Requirement("k", "notin", ("b", "a"))) == "k notin (a,b)"
    assert str(Requirement("k", "gt", ("5",))) == "k>5"
