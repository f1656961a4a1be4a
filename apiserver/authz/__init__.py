"""Authorization: kube-apiserver's authorizers and the filter that asks them on every request.

* ``rules``: PolicyRule matching (``rbac.RuleAllows``, ``ResourceMatches``, non-resource URL globs), pure;
* ``rbac``: the RBAC authorizer and rule resolver over the watch caches of the four rbac.authorization.k8s.io kinds;
* ``nodegraph`` and ``node``: the Node authorizer (``system:node:<name>`` reads only what its pods use);
* ``policy``: the bootstrap policy (kube's ``bootstrappolicy``), reconciled at start-up (``reconcile``);
* ``escalation``: no one grants, through a role or a binding, what they may not do themselves;
* ``attributes`` and ``filter``: a request's authorizer attributes and the ASGI filter (403 as kube words it).

``apiserver.authorizer`` is the façade the rest of the server uses (``AUTHORIZER``, ``Decision``).
"""
