"""Kubernetes protobuf request bodies → the JSON-shaped dicts the rest of the apiserver works with.

kubectl's typed clients (``create deployment``, ``run``, ``drain``'s evictions …) send bodies as
``application/vnd.kubernetes.protobuf``; responses stay JSON, which client-go accepts. Only decoding is needed:

* ``envelope``: the ``k8s\\x00`` + ``runtime.Unknown`` envelope and the object message inside it;
* ``kinds``: (apiVersion, kind) → generated message class;
* ``convert``: ``decode``, the body → JSON form (special types, inline structs, Go pointer fields);
* ``proto/`` → ``gen/``: the wire schema and its generated modules (``generate``; see README.md).
"""

from .convert import decode
from .envelope import MEDIA_TYPE

__all__ = ["MEDIA_TYPE", "decode"]
