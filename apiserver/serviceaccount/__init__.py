"""Service-account tokens: kube-apiserver's ``--service-account-*`` machinery.

* ``keys``: the signing key and the verifying keys, compact JWS (RS256/ES256), key ids, JWKs;
* ``claims``: kube's claims of a token and the validator (the account and bound objects still exist);
* ``authenticator``: the bearer-token authenticator of service-account JWTs;
* ``tokenrequest``: ``POST serviceaccounts/<name>/token``;
* ``oidc``: ``/.well-known/openid-configuration`` and ``/openid/v1/jwks``;
* ``config``: the flags' values, and building all of the above from them.

TokenReview (``registry.tokenreviews``) and the ServiceAccount admission plugin (``admission.serviceaccount``) use
these; the kubelet asks TokenRequest for the tokens of its pods' projected volumes.
"""
