"""Field ownership and server-side apply, as kube-apiserver's fieldmanager and structured-merge-diff do them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apimachinery.errors import BadRequest, Conflict, Invalid
from apiserver.fieldmanager import FieldManager, Schema, fieldpath, manager_of, prefix_from_user_agent, typed
from apiserver.openapi import swagger

SCHEMA = Schema(swagger()["definitions"])


def deployments() -> FieldManager:
    return FieldManager(SCHEMA, "apps", "v1", "Deployment", has_status=True)


def configmaps() -> FieldManager:
    return FieldManager(SCHEMA, "", "v1", "ConfigMap", has_status=False)


def deployment(replicas: int = 2, image: str = "nginx:1.25", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", **meta},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "nginx", "image": image,
                                                       "ports": [{"containerPort": 80}]}]}}},
    }


def configmap(data: dict[str, str], **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", **meta}, "data": data}


def created(fm: FieldManager, obj: dict[str, Any], manager: str) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    fm.update(None, obj, manager)
    return obj


def updated(fm: FieldManager, old: dict[str, Any], change: Any, manager: str, subresource: str = "") -> dict:
    new = copy.deepcopy(old)
    change(new)
    fm.update(old, new, manager, subresource)
    return new


def entries(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["manager"], e["operation"]): e for e in obj["metadata"].get("managedFields") or []}


def owned_paths(obj: dict[str, Any], manager: str, operation: str = "Update") -> set[str]:
    entry = entries(obj)[(manager, operation)]
    return {fieldpath.path_string(p) for p in fieldpath.paths(entry["fieldsV1"])}


# --- field sets -------------------------------------------------------------------------------------------------
def test_set_operations_keep_membership_and_children() -> None:
    a = {"f:data": {".": {}, "f:x": {}, "f:y": {}}}
    b = {"f:data": {"f:y": {}}}
    assert fieldpath.union(a, b) == a
    assert fieldpath.difference(a, b) == {"f:data": {".": {}, "f:x": {}}}
    assert fieldpath.intersection(a, b) == {"f:data": {"f:y": {}}}
    assert fieldpath.recursive_difference(a, {"f:data": {}}) == {}
    assert a == {"f:data": {".": {}, "f:x": {}, "f:y": {}}}  # operations never mutate


def test_paths_print_as_kube_prints_them() -> None:
    tree = {"f:spec": {"f:containers": {'k:{"name":"nginx"}': {"f:image": {}}}},
            "f:metadata": {"f:finalizers": {'v:"a"': {}}}}
    assert {fieldpath.path_string(p) for p in fieldpath.paths(tree)} == {
        '.spec.containers[name="nginx"].image', '.metadata.finalizers[="a"]'}
    assert fieldpath.path_string(("f:ports", 'k:{"containerPort":80,"protocol":"TCP"}')) == \
        '.ports[containerPort=80,protocol="TCP"]'


def test_field_set_follows_the_schema() -> None:
    obj = deployment(finalizers=["a"])
    fields = typed.field_set(obj, deployments().type)
    container = fields["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"nginx"}']
    assert "." in container and "f:image" in container  # associative list items are members
    assert 'k:{"containerPort":80,"protocol":"TCP"}' in container["f:ports"]  # the defaulted key field
    assert fields["f:spec"]["f:selector"] == {}  # an atomic struct is one leaf
    assert fields["f:metadata"]["f:finalizers"] == {'v:"a"': {}}  # a set list
    assert "." not in fields["f:spec"]  # a struct field is not a member by itself


def test_lists_without_markers_are_atomic() -> None:
    pod_type = SCHEMA.kind_type("", "v1", "Pod")
    pod = {"spec": {"tolerations": [{"key": "a"}], "containers": [{"name": "c", "args": ["x", "y"]}]}}
    fields = typed.field_set(pod, pod_type)
    assert fields["f:spec"]["f:tolerations"] == {}
    assert fields["f:spec"]["f:containers"]['k:{"name":"c"}']["f:args"] == {}


# --- Update -----------------------------------------------------------------------------------------------------
def test_create_records_the_creator() -> None:
    obj = created(configmaps(), configmap({"a": "1"}, labels={"x": "y"}), "kubectl-create")
    [entry] = obj["metadata"]["managedFields"]
    assert list(entry) == ["manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1"]
    assert entry["operation"] == "Update" and entry["apiVersion"] == "v1" and entry["fieldsType"] == "FieldsV1"
    assert entry["fieldsV1"] == {"f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {".": {}, "f:x": {}}}}


def test_update_moves_changed_fields_to_the_writer() -> None:
    fm = configmaps()
    obj = created(fm, configmap({"a": "1", "b": "2"}), "creator")
    obj = updated(fm, obj, lambda o: o["data"].update(a="9"), "editor")
    assert owned_paths(obj, "editor") == {".data.a"}
    assert owned_paths(obj, "creator") == {".data", ".data.b"}


def test_removed_fields_leave_every_manager() -> None:
    fm = configmaps()
    obj = created(fm, configmap({"a": "1", "b": "2"}), "creator")
    obj = updated(fm, obj, lambda o: o["data"].pop("b"), "editor")
    assert owned_paths(obj, "creator") == {".data", ".data.a"}
    assert ("editor", "Update") not in entries(obj)  # removing owns nothing


def test_noop_update_keeps_managed_fields_and_time() -> None:
    fm = configmaps()
    obj = created(fm, configmap({"a": "1"}), "creator")
    obj["metadata"]["managedFields"][0]["time"] = "2020-01-01T00:00:00Z"
    again = updated(fm, obj, lambda o: o["metadata"].pop("managedFields"), "other")
    assert again["metadata"]["managedFields"] == obj["metadata"]["managedFields"]


def test_managed_fields_in_the_body_are_honoured_and_can_be_cleared() -> None:
    fm = configmaps()
    obj = created(fm, configmap({"a": "1"}), "creator")
    renamed = copy.deepcopy(obj["metadata"]["managedFields"])
    renamed[0]["manager"] = "someone"
    obj2 = updated(fm, obj, lambda o: o["metadata"].update(managedFields=renamed), "x")
    assert set(entries(obj2)) == {("someone", "Update")}
    cleared = updated(fm, obj, lambda o: o["metadata"].update(managedFields=[{}]), "x")
    assert "managedFields" not in cleared["metadata"]


def test_status_writes_are_their_own_entry_and_own_only_status() -> None:
    fm = deployments()
    obj = created(fm, deployment(), "kubectl-create")
    obj = updated(fm, obj, lambda o: o.update(status={"replicas": 2}), "kube-controller-manager", "status")
    status = [e for e in obj["metadata"]["managedFields"] if e.get("subresource") == "status"]
    assert status and status[0]["fieldsV1"] == {"f:status": {"f:replicas": {}}}


def test_server_owned_metadata_is_never_owned() -> None:
    obj = created(configmaps(), configmap({"a": "1"}, uid="u", creationTimestamp="t", resourceVersion="1"), "c")
    assert obj["metadata"]["managedFields"][0]["fieldsV1"] == {"f:data": {".": {}, "f:a": {}}}


# --- Apply ------------------------------------------------------------------------------------------------------
def test_apply_creates_and_owns_exactly_what_was_applied() -> None:
    fm = deployments()
    obj = fm.apply({}, deployment(), "kubectl", force=False)
    assert obj["spec"]["replicas"] == 2
    assert ".spec.replicas" in owned_paths(obj, "kubectl", "Apply")
    assert entries(obj)[("kubectl", "Apply")]["apiVersion"] == "apps/v1"


def test_conflict_with_another_manager_is_a_409_naming_it() -> None:
    fm = deployments()
    obj = created(fm, deployment(), "kubectl-client-side-apply")
    with pytest.raises(Conflict) as err:
        fm.apply(obj, deployment(replicas=3), "mine", force=False)
    assert err.value.message == ('Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using '
                                 'apps/v1: .spec.replicas')
    [cause] = err.value.causes
    assert (cause.type, cause.field) == ("FieldManagerConflict", ".spec.replicas")
    assert cause.message == 'conflict with "kubectl-client-side-apply" using apps/v1'


def test_several_conflicts_are_listed_by_manager() -> None:
    fm = deployments()
    obj = created(fm, deployment(), "b-manager")
    obj = updated(fm, obj, lambda o: o["spec"].update(replicas=5), "a-manager", "scale")
    with pytest.raises(Conflict) as err:
        fm.apply(obj, deployment(replicas=3, image="nginx:2"), "mine", force=False)
    assert err.value.message == (
        'Apply failed with 2 conflicts: conflict with "a-manager" with subresource "scale" using apps/v1:\n'
        '- .spec.replicas\nconflict with "b-manager" using apps/v1:\n'
        '- .spec.template.spec.containers[name="nginx"].image')


def test_same_value_is_shared_not_a_conflict_and_force_takes_over() -> None:
    fm = deployments()
    obj = created(fm, deployment(), "other")
    shared = fm.apply(obj, deployment(), "mine", force=False)
    assert ".spec.replicas" in owned_paths(shared, "other") and \
        ".spec.replicas" in owned_paths(shared, "mine", "Apply")
    forced = fm.apply(obj, deployment(replicas=7), "mine", force=True)
    assert forced["spec"]["replicas"] == 7
    assert ".spec.replicas" not in owned_paths(forced, "other")


def test_fields_dropped_from_the_config_are_removed_unless_someone_else_owns_them() -> None:
    fm = configmaps()
    obj = fm.apply({}, configmap({"a": "1", "b": "2", "c": "3"}), "mine", force=False)
    obj = fm.apply(obj, configmap({"a": "1", "b": "2", "c": "3"}), "theirs", force=False)
    obj = fm.apply(obj, configmap({"a": "1", "b": "2"}), "theirs", force=False)
    assert obj["data"] == {"a": "1", "b": "2", "c": "3"}  # "mine" still applies c
    obj = fm.apply(obj, configmap({"a": "1"}), "mine", force=False)
    assert obj["data"] == {"a": "1", "b": "2"}  # b is still applied by "theirs"; c nobody applies any more


def test_associative_lists_merge_by_key_and_keep_other_items() -> None:
    fm = deployments()
    obj = fm.apply({}, deployment(), "mine", force=False)
    sidecar = deployment()
    del sidecar["spec"]["replicas"]
    sidecar["spec"]["template"]["spec"]["containers"] = [{"name": "sidecar", "image": "busybox"}]
    obj = fm.apply(obj, sidecar, "theirs", force=False)
    names = [c["name"] for c in obj["spec"]["template"]["spec"]["containers"]]
    assert names == ["nginx", "sidecar"]
    obj = fm.apply(obj, deployment(image="nginx:2"), "mine", force=False)
    assert [c.get("image") for c in obj["spec"]["template"]["spec"]["containers"]] == ["nginx:2", "busybox"]


def test_atomic_lists_are_replaced_and_sets_merge() -> None:
    pods = FieldManager(SCHEMA, "", "v1", "Pod", has_status=True)
    base = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": ["a"]},
            "spec": {"containers": [{"name": "c", "image": "i", "args": ["1", "2"]}]}}
    obj = pods.apply({}, base, "mine", force=False)
    change = copy.deepcopy(base)
    change["metadata"]["finalizers"] = ["b"]
    change["spec"]["containers"][0]["args"] = ["3"]
    obj = pods.apply(obj, change, "theirs", force=True)
    assert obj["metadata"]["finalizers"] == ["a", "b"]
    assert obj["spec"]["containers"][0]["args"] == ["3"]


def test_noop_apply_changes_nothing() -> None:
    fm = configmaps()
    obj = fm.apply({}, configmap({"a": "1"}), "mine", force=False)
    obj["metadata"]["managedFields"][0]["time"] = "2020-01-01T00:00:00Z"
    assert fm.apply(obj, configmap({"a": "1"}), "mine", force=False) == obj


def test_apply_refuses_another_kind_and_managed_fields() -> None:
    fm = configmaps()
    with pytest.raises(BadRequest, match=r"invalid object type: /v1, Kind=Secret"):
        fm.apply({}, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "cfg"}}, "m", force=False)
    with pytest.raises(BadRequest, match="metadata.managedFields must be nil"):
        fm.apply({}, configmap({}, managedFields=[]), "m", force=False)


def test_status_apply_through_the_main_resource_is_ignored() -> None:
    fm = deployments()
    config = deployment()
    config["status"] = {"replicas": 9}
    obj = fm.apply({}, config, "mine", force=False)
    assert not any(p.startswith(".status") for p in owned_paths(obj, "mine", "Apply"))


def test_kubectl_upgrading_from_client_side_apply_is_not_a_conflict() -> None:
    fm = configmaps()
    last = '{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"1"},"metadata":{"name":"cfg"}}'
    obj = created(fm, configmap({"a": "1"}, annotations={"kubectl.kubernetes.io/last-applied-configuration": last}),
                  "kubectl-client-side-apply")
    applied = fm.apply(obj, configmap({"a": "2"}), "kubectl", force=False)
    assert applied["data"] == {"a": "2"}
    assert '"a":"2"' in applied["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    with pytest.raises(Conflict):
        fm.apply(obj, configmap({"a": "2"}), "another", force=False)


# --- manager names ----------------------------------------------------------------------------------------------
def test_manager_from_user_agent() -> None:
    assert prefix_from_user_agent("kubectl/v1.32.0 (linux/amd64) kubernetes/70d3cc9") == "kubectl"
    assert prefix_from_user_agent("OpenAPI-Generator/31.0.0/python") == "OpenAPI-Generator"
    assert prefix_from_user_agent("a\tb/1") == "ab"
    assert prefix_from_user_agent("x" * 200) == "x" * 128
    assert manager_of({"fieldManager": "mine"}, "kubectl/v1", "CreateOptions") == "mine"
    assert manager_of({}, "kubectl/v1", "CreateOptions") == "kubectl"


def test_bad_field_managers_are_invalid_options() -> None:
    with pytest.raises(Invalid) as err:
        manager_of({}, "kubectl/v1", "PatchOptions", apply=True)
    assert err.value.message == ('PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is '
                                 'required for apply patch')
    with pytest.raises(Invalid, match="fieldManager: Too long: may not be more than 128 bytes"):
        manager_of({"fieldManager": "x" * 129}, None, "CreateOptions")
    with pytest.raises(Invalid, match=r"invalid character U\+0009 \(at position 1\)"):
        manager_of({"fieldManager": "a\tb"}, None, "UpdateOptions")
    with pytest.raises(Invalid, match="force: Forbidden: may not be specified for non-apply patch"):
        manager_of({"force": "true"}, None, "PatchOptions")


def test_at_most_ten_updaters_the_oldest_become_ancient_changes() -> None:
    fm = configmaps()
    obj = created(fm, configmap({"k0": "0"}), "m0")
    obj["metadata"]["managedFields"][0]["time"] = "2020-01-01T00:00:00Z"
    for i in range(1, 12):
        obj = updated(fm, obj, lambda o, i=i: o["data"].update({f"k{i}": str(i)}), f"m{i}")
        obj["metadata"]["managedFields"][-1]["time"] = f"2020-01-01T00:00:{i:02d}Z"
    owners = entries(obj)
    assert len(owners) == 10
    assert ("m0", "Update") not in owners and ("m1", "Update") not in owners and ("m2", "Update") not in owners
    assert owned_paths(obj, "ancient-changes") >= {".data.k0", ".data.k1", ".data.k2"}


def test_fields_nobody_managed_belong_to_before_first_apply() -> None:
    fm = configmaps()
    with pytest.raises(Conflict, match='conflict with "before-first-apply" using v1: .data.a'):
        fm.apply(configmap({"a": "1"}), configmap({"a": "2"}), "mine", force=False)
    obj = fm.apply(configmap({"a": "1", "b": "1"}), configmap({"a": "1"}), "mine", force=False)
    assert owned_paths(obj, "before-first-apply") == {".data", ".data.a", ".data.b"}


def test_list_merge_order_is_structured_merge_diffs() -> None:
    t = SCHEMA.kind_type("", "v1", "Pod").child("metadata").child("finalizers")
    assert typed.merge(["a", "x", "b"], ["b", "c", "a"], t) == ["x", "b", "c", "a"]
    assert typed.merge(["a", "b"], ["c"], t) == ["a", "b", "c"]
    assert typed.merge(["a", "b", "c"], ["c", "a"], t) == ["b", "c", "a"]
