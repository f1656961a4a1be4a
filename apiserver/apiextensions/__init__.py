"""apiextensions.k8s.io: CustomResourceDefinitions and the custom resources they define (kube-apiextensions-apiserver).

The CRD object itself is an ordinary resource (``registry.customresourcedefinitions``). This package is what
makes its custom resources served, through the same generic store, handlers, watch cache, tables and patches as
built-in resources:

* ``controller``: the CRD controllers every apiserver runs over its own CRD watch cache — accepted names,
  Established, installing/removing the served versions in the registry, OpenAPI publication, cleanup on delete;
* ``strategy``: the strategy and decoder of one served version, built from the CRD;
* ``structural`` (creation-time schema checks), ``pruning`` (unknown fields, defaults), ``schemavalidation``
  (values against the schema, and the ``RuleValidator`` hook where CEL plugs in), ``jsonpath`` (printer
  columns, selectable fields, scale paths), ``fieldschema`` (server-side apply types), ``openapi`` (v2
  definitions and paths), ``crd`` (reading a CRD).
"""
