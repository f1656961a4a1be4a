"""ValidatingAdmissionPolicy: CEL validations bound to requests by ValidatingAdmissionPolicyBindings.

* ``matcher``: whether a policy's ``matchConstraints`` and a binding's ``matchResources`` take a request;
* ``params``: the parameter objects a binding's ``paramRef`` names (any served kind, by name or selector);
* ``typecheck``: ``status.typeChecking`` and ``observedGeneration`` (field selections checked against schemas);
* ``validating``: the plugin — match conditions, variables, validations with their messages, the actions
  (Deny, Warn, Audit), the failure policy and kube's texts.
"""

from __future__ import annotations

from .validating import ValidatingAdmissionPolicies

__all__ = ["ValidatingAdmissionPolicies"]
