"""The structure server-side apply needs from a kind's schema: which maps are structs, which lists are atomic,
sets or associative (keyed) lists — structured-merge-diff's ``schema.Schema``, built from ``swagger.json``.

Our ``swagger.json`` carries kube's strategic-merge markers (``x-kubernetes-patch-merge-key``/``-strategy``) but
not the ``+listType``/``+listMapKey``/``+mapType`` markers kube publishes in its OpenAPI v3. ``LIST_TYPES`` and
``ATOMIC_STRUCTS`` are that table, in one place: a list with a patch merge key is a map keyed by it, one with
strategy ``merge`` and no key is a set, any other list is atomic, unless ``LIST_TYPES`` says otherwise (kube's
markers differ where a list is keyed by several fields). Types are resolved lazily and cached per definition, so
a write walks only the fields its object has. Without definitions (unit fakes) every type is "deduced" as SMD
deduces unknown types: maps are granular, lists atomic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

NodeKind = Literal["struct", "map", "list", "scalar"]
ListType = Literal["atomic", "set", "map"]

# (definition short name, field) → (list type, keys) where kube's markers say more than the SMP key.
LIST_TYPES: dict[tuple[str, str], tuple[ListType, tuple[str, ...]]] = {
    ("Container", "ports"): ("map", ("containerPort", "protocol")),
    ("EphemeralContainer", "ports"): ("map", ("containerPort", "protocol")),
    ("ServiceSpec", "ports"): ("map", ("port", "protocol")),
    ("PodSpec", "topologySpreadConstraints"): ("map", ("topologyKey", "whenUnsatisfiable")),
    ("ObjectMeta", "finalizers"): ("set", ()),
    ("NodeSpec", "podCIDRs"): ("set", ()),
    ("ObjectMeta", "managedFields"): ("atomic", ()),
}
# Key fields kube's schema defaults, so an applied item may omit them.
KEY_DEFAULTS: dict[str, Any] = {"protocol": "TCP"}
# Structs kube marks ``+structType=atomic`` / ``x-kubernetes-map-type: atomic``: replaced whole, owned as one.
ATOMIC_STRUCTS = frozenset({
    "LabelSelector", "LocalObjectReference", "ObjectReference", "NodeSelector", "NodeSelectorTerm",
    "TopologySelectorTerm", "ConfigMapKeySelector", "SecretKeySelector", "ObjectFieldSelector",
    "ResourceFieldSelector", "FileKeySelector", "ConfigMapEnvSource", "SecretEnvSource", "SecretReference",
    "TypedLocalObjectReference", "TypedObjectReference", "VolumeNodeAffinity",
})
# Definitions whose JSON is a string or number in Go (custom marshalers), or free-form: leaves.
SCALAR_DEFINITIONS = frozenset({
    "io.k8s.apimachinery.pkg.api.resource.Quantity", "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time", "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Duration",
})
ATOMIC_DEFINITIONS = frozenset({
    "io.k8s.apimachinery.pkg.runtime.RawExtension", "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
})


@dataclass(eq=False, slots=True)
class TypeNode:
    """One type: a struct (named fields), a granular map, a list (atomic/set/map with ``keys``) or a scalar.

    ``atomic`` structs, maps and lists are leaves for ownership: owned, compared and replaced whole."""

    kind: NodeKind
    atomic: bool = False
    element: TypeNode | None = None  # map values, list items
    list_type: ListType = "atomic"
    keys: tuple[str, ...] = ()
    definition: str = ""  # struct: the definition name, whose fields resolve lazily
    schema: Schema | None = None
    leaf: bool = field(init=False)
    _children: dict[str, TypeNode] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.leaf = self.atomic or self.kind == "scalar"
        self._children = {}

    def child(self, name: str) -> TypeNode:
        """The type of field or map value ``name`` (deduced for names the schema does not declare). A struct's
        declared fields are resolved once, then looked up (undeclared names are not kept: they are user input)."""
        found = self._children.get(name)
        if found is not None:
            return found
        if self.kind == "map":
            return self.element or DEDUCED
        if self.kind == "struct" and self.schema is not None:
            found = self.schema.field_type(self.definition, name)
            if found is not DEDUCED:
                self._children[name] = found
            return found
        return DEDUCED

    def item(self) -> TypeNode:
        return self.element or DEDUCED


DEDUCED = TypeNode("map")  # unknown shapes: granular maps, atomic lists, leaves otherwise
SCALAR = TypeNode("scalar")
ATOMIC_LIST = TypeNode("list", atomic=True, list_type="atomic")


def deduce(value: Any) -> TypeNode:
    """SMD's deduced type of an untyped value: maps are granular, lists atomic, the rest scalars."""
    if isinstance(value, dict):
        return DEDUCED
    if isinstance(value, list):
        return ATOMIC_LIST
    return SCALAR


class Schema:
    """Type nodes of every kind in the OpenAPI definitions, resolved on first use."""

    def __init__(self, definitions: dict[str, dict[str, Any]] | None) -> None:
        self.definitions = definitions or {}
        self.by_kind: dict[tuple[str, str, str], str] = {}
        for name, schema in self.definitions.items():
            for gvk in schema.get("x-kubernetes-group-version-kind") or []:
                self.by_kind.setdefault((gvk.get("group", ""), gvk.get("version", ""), gvk.get("kind", "")), name)
        self._structs: dict[str, TypeNode] = {}

    def kind_type(self, group: str, version: str, kind: str) -> TypeNode:
        name = self.by_kind.get((group, version, kind))
        return self.ref_type(name) if name else DEDUCED

    def ref_type(self, name: str) -> TypeNode:
        node = self._structs.get(name)
        if node is None:
            node = self._structs[name] = self._definition_type(name)
        return node

    def _definition_type(self, name: str) -> TypeNode:
        if name in SCALAR_DEFINITIONS:
            return SCALAR
        definition = self.definitions.get(name) or {}
        if name in ATOMIC_DEFINITIONS:
            return TypeNode("map", atomic=True)
        if "properties" in definition:
            short = name.rsplit(".", 1)[-1]
            atomic = short in ATOMIC_STRUCTS or definition.get("x-kubernetes-map-type") == "atomic"
            return TypeNode("struct", atomic=atomic, definition=name, schema=self)
        return self._schema_type(definition, "", "")

    def field_type(self, definition: str, name: str) -> TypeNode:
        prop = ((self.definitions.get(definition) or {}).get("properties") or {}).get(name)
        if prop is None:
            return DEDUCED
        return self._schema_type(prop, definition.rsplit(".", 1)[-1], name)

    def _schema_type(self, schema: dict[str, Any], owner: str, name: str) -> TypeNode:
        ref = schema.get("$ref")
        if ref:
            return self.ref_type(ref.rsplit("/", 1)[-1])
        kind = schema.get("type")
        if kind == "array":
            element = self._schema_type(schema.get("items") or {}, "", "")
            list_type, keys = list_type_of(schema, owner, name)
            return TypeNode("list", atomic=list_type == "atomic", element=element, list_type=list_type, keys=keys)
        if kind == "object":
            inner = schema.get("additionalProperties")
            element = self._schema_type(inner, "", "") if isinstance(inner, dict) else DEDUCED
            return TypeNode("map", element=element)
        return SCALAR


def list_type_of(schema: dict[str, Any], owner: str, name: str) -> tuple[ListType, tuple[str, ...]]:
    """kube's list type for field ``owner.name``: the table, else the markers, else the strategic-merge key."""
    known = LIST_TYPES.get((owner, name))
    if known is not None:
        return known
    marked = schema.get("x-kubernetes-list-type")
    if marked in ("atomic", "set", "map"):
        return marked, tuple(schema.get("x-kubernetes-list-map-keys") or ())
    key = schema.get("x-kubernetes-patch-merge-key")
    if key:
        return "map", (key,)
    if "merge" in (schema.get("x-kubernetes-patch-strategy") or "").split(","):
        return "set", ()
    return "atomic", ()
