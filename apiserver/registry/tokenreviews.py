"""authentication.k8s.io/v1 TokenReview: is this token good, and whose is it? (virtual: answered, never stored).

kube-apiserver's ``pkg/registry/authentication/tokenreview``: ``spec.token`` is required (400 ``token is required
for TokenReview in authentication``); the token goes through the same bearer-token authenticators as a request
would, for ``spec.audiences`` (default: ``--api-audiences``). ``status.authenticated`` says whether one accepted
it, ``status.user`` who it is, ``status.audiences`` the audiences both sides accept, ``status.error`` why a token
was refused. An authenticator that knows audiences (the service-account one) checks them itself; the others
accept only requests for the apiserver's own audiences (kube's ``WrapAudienceAgnosticToken``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from apimachinery import errors

from ..authentication import TokenAuthenticator, UserInfo, with_authenticated_group
from .strategy import Object
from .virtual import VirtualStrategy


@runtime_checkable
class AudienceAuthenticator(Protocol):
    """A token authenticator that checks audiences: the user and the audiences it accepted, None if not its token."""

    def authenticate(self, token: str, audiences: Sequence[str]) -> tuple[UserInfo, list[str]] | None: ...


async def review(authenticators: Sequence[TokenAuthenticator], api_audiences: Sequence[str], token: str,
                 audiences: Sequence[str]) -> Object:
    """A TokenReview's ``status``."""
    wanted = list(audiences) or list(api_audiences)
    failures: list[str] = []
    for authenticator in authenticators:
        try:
            if isinstance(authenticator, AudienceAuthenticator):
                found = authenticator.authenticate(token, wanted)
            else:
                common = [a for a in wanted if a in api_audiences] if api_audiences else wanted
                user = await authenticator.authenticate_token(token) if common or not wanted else None
                found = (user, common) if user is not None else None
        except Exception as err:  # its kind of token, refused
            failures.append(str(err))
            continue
        if found is not None:
            status: Object = {"authenticated": True, "user": with_authenticated_group(found[0]).to_dict()}
            if found[1]:
                status["audiences"] = found[1]
            return status
    status = {"user": {}}
    status["error"] = failures[0] if len(failures) == 1 else f"[{', '.join(failures or ['invalid bearer token'])}]"
    return status


class TokenReviewStrategy(VirtualStrategy):
    kind = "TokenReview"
    resource = "tokenreviews"
    singular = "tokenreview"
    group = "authentication.k8s.io"
    namespaced = False
    # Set when the apiserver is built: the bearer-token authenticators and --api-audiences.
    authenticators: Sequence[TokenAuthenticator] = ()
    api_audiences: Sequence[str] = ()

    async def answer_async(self, obj: Object, user: UserInfo) -> Object:
        spec: Object = obj["spec"] if isinstance(obj.get("spec"), dict) else {}
        token = spec.get("token") or ""
        if not token:
            raise errors.BadRequest("token is required for TokenReview in authentication")
        obj["status"] = await review(self.authenticators, self.api_audiences, token, spec.get("audiences") or [])
        return obj
