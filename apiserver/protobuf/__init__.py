"""Kubernetes protobuf request bodies → the JSON-shaped dicts the rest of the apiserver works with.

kubectl's typed clients (``create deployment``, ``run``, ``drain``'s evictions …) send bodies as
``application/vnd.kubernetes.protobuf``; responses stay JSON, which client-go accepts. Only decoding is needed:

* ``decode``: the ``k8s\\x00`` + ``runtime.Unknown`` envelope and the object inside it;
* ``kinds``: (apiVersion, kind) → generated message class;
* ``convert``: message → JSON form (special types, inline structs, Go pointer fields);
* ``proto/`` → ``gen/``: the wire schema and its generated modules (``generate``; see README.md).
"""

from .decode import MEDIA_TYPE, decode

__all__ = ["MEDIA_TYPE", "decode"]
