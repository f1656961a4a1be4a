"""TokenRequest: ``POST serviceaccounts/<name>/token`` (kube's ``pkg/registry/core/serviceaccount/storage/token.go``).

The answer is the request (an ``authentication.k8s.io/v1`` TokenRequest) with ``status.token`` and
``status.expirationTimestamp``; nothing is stored. In kube's order:

1. ``metadata.name`` / ``metadata.namespace``, when given, must match the URL's (422);
2. the service account must exist (404); unset ``spec.audiences`` become ``--api-audiences``;
3. ``spec.expirationSeconds`` (default 3600) is at least 600 and at most 2^32 (422);
4. ``spec.boundObjectRef`` names a Pod (whose node is then named too), a Secret or a Node that exists, with the
   given uid if any (409 otherwise); any other kind is a 400;
5. an expiration beyond ``--service-account-max-token-expiration`` is shortened, with a warning;
6. the admission's projected token (3607 s, bound to a pod, for the apiserver's audiences) lives a year and
   carries ``warnafter`` instead (``--service-account-extend-token-expiration``, on by default).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from apimachinery import errors
from apimachinery.errors import Cause
from apimachinery.meta import format_rfc3339

from ..registry.registry import Registry
from ..registry.strategy import Object
from .claims import EXTENSION_SECONDS, WARN_ONLY_EXPIRATION_SECONDS, make_claims
from .keys import PrivateKey, sign

GROUP = "authentication.k8s.io"
DEFAULT_EXPIRATION_SECONDS = 3600
MIN_EXPIRATION_SECONDS = 600
MAX_EXPIRATION_SECONDS = 1 << 32


def validate_token_request(request: Object) -> list[Cause]:
    """``ValidateTokenRequest``."""
    seconds = request["spec"]["expirationSeconds"]
    if seconds < MIN_EXPIRATION_SECONDS:
        return [Cause("FieldValueInvalid", f"Invalid value: {seconds}: may not specify a duration less than 10 "
                      "minutes", "spec.expirationSeconds")]
    if seconds > MAX_EXPIRATION_SECONDS:
        return [Cause("FieldValueInvalid", f"Invalid value: {seconds}: may not specify a duration larger than 2^32 "
                      "seconds", "spec.expirationSeconds")]
    return []


@dataclass
class TokenIssuer:
    """What ``--service-account-*`` configure for issuing tokens."""

    issuer: str
    key: PrivateKey
    api_audiences: list[str]
    max_expiration_seconds: int = 0  # 0: no maximum
    extend_expiration: bool = True
    on_warning: Callable[[str], None] = field(default=lambda _: None)


class TokenRequests:
    """The ``token`` subresource of serviceaccounts."""

    def __init__(self, issuer: TokenIssuer, registry: Registry) -> None:
        self.issuer = issuer
        self.registry = registry

    async def _get(self, resource: str, namespace: str | None, name: str) -> Object:
        co = await self.registry.stores[("", resource)].get(namespace, name)
        return co.obj

    async def create(self, request: Object, namespace: str, name: str) -> Object:
        """The TokenRequest answered (``request`` decoded, of kind TokenRequest)."""
        meta = request["metadata"] = request.get("metadata") or {}  # null as absent, as Go's decoder
        if meta.get("name") and meta["name"] != name:
            raise errors.invalid("TokenRequest", name, [Cause("FieldValueInvalid", f'Invalid value: "{meta["name"]}": '
                                 "must match the service account name if specified", "metadata.name")], GROUP)
        if meta.get("namespace") and meta["namespace"] != namespace:
            raise errors.invalid("TokenRequest", name, [Cause(
                "FieldValueInvalid", f'Invalid value: "{meta["namespace"]}": must match the service account '
                "namespace if specified", "metadata.namespace")], GROUP)
        account = await self._get("serviceaccounts", namespace, name)
        spec = request["spec"] = request.get("spec") or {}
        spec["audiences"] = list(spec.get("audiences") or self.issuer.api_audiences)
        if spec.get("expirationSeconds") is None:
            spec["expirationSeconds"] = DEFAULT_EXPIRATION_SECONDS
        meta.update(name=account["metadata"]["name"], namespace=namespace)
        now = time.time()
        meta["creationTimestamp"] = format_rfc3339(now)
        request["status"] = {}
        causes = validate_token_request(request)
        if causes:
            raise errors.invalid("TokenRequest", "", causes, GROUP)
        pod, secret, node = await self._bound_objects(spec.get("boundObjectRef"), namespace, name)
        maximum = self.issuer.max_expiration_seconds
        if maximum > 0 and spec["expirationSeconds"] > maximum:
            self.issuer.on_warning(f"requested expiration of {spec['expirationSeconds']} seconds shortened to "
                                   f"{maximum} seconds")
            spec["expirationSeconds"] = maximum
        expiration, warn_after = spec["expirationSeconds"], 0
        if (self.issuer.extend_expiration and pod is not None and expiration == WARN_ONLY_EXPIRATION_SECONDS
                and set(spec["audiences"]) <= set(self.issuer.api_audiences)):
            warn_after, expiration = expiration, EXTENSION_SECONDS
        claims = make_claims(self.issuer.issuer, account, spec["audiences"], expiration, pod=pod, secret=secret,
                             node=node, warn_after=warn_after, now=now)
        request["apiVersion"], request["kind"] = f"{GROUP}/v1", "TokenRequest"
        request["status"] = {"token": sign(self.issuer.key, claims),
                             "expirationTimestamp": format_rfc3339(int(now) + spec["expirationSeconds"])}
        return request

    async def _bound_objects(self, ref: Object | None, namespace: str,
                             name: str) -> tuple[Object | None, Object | None, Object | None]:
        """The pod, secret or node the token is bound to (a pod's node too), checked against the ref's uid."""
        if not ref:
            return None, None, None
        api_version, kind, bound_name = ref.get("apiVersion") or "", ref.get("kind") or "", ref.get("name") or ""
        group = api_version.rpartition("/")[0] if "/" in api_version else ""
        pod = secret = node = None
        if group == "" and kind == "Pod":
            pod = await self._get("pods", namespace, bound_name)
            node_name = (pod.get("spec") or {}).get("nodeName")
            if node_name:
                try:
                    node = await self._get("nodes", None, node_name)
                except errors.NotFound as err:
                    raise errors.InternalError(f"failed to get node for bound pod: {err}") from None
            obj = pod
        elif group == "" and kind == "Node":
            node = obj = await self._get("nodes", None, bound_name)
        elif group == "" and kind == "Secret":
            secret = obj = await self._get("secrets", namespace, bound_name)
        else:
            version = api_version.rpartition("/")[2]
            raise errors.BadRequest(f'cannot bind token for serviceaccount "{name}" to object of type '
                                    f"{group + '/' if group else '/'}{version}, Kind={kind}")
        if ref.get("uid") and ref["uid"] != obj["metadata"].get("uid"):
            raise errors.conflict(kind, bound_name, why=f"the UID in the bound object reference ({ref['uid']}) does "
                                  "not match the UID in record. The object might have been deleted and then recreated")
        return pod, secret, node
