"""ServiceAccounts: ValidateServiceAccount (metadata only), cleanSecretReferences, the table, typed decoding."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from apimachinery import errors
from apiserver.openapi.documents import swagger
from apiserver.registry import all_strategies
from apiserver.registry.decoder import Decoder
from apiserver.registry.metadata import validate_meta_create
from apiserver.registry.serviceaccounts import ServiceAccountStrategy

SA = ServiceAccountStrategy()


def account(name: str = "builder", **fields: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}, **fields}


def test_name_is_a_dns_subdomain() -> None:
    assert validate_meta_create(account("build.bot-1")["metadata"], SA) == []
    bad = validate_meta_create(account("Build_Bot")["metadata"], SA)
    assert [c.field for c in bad] == ["metadata.name"] and "RFC 1123 subdomain" in bad[0].message


def test_secret_references_keep_only_their_names() -> None:
    obj = account(secrets=[{"name": "tok", "namespace": "elsewhere", "uid": "u", "kind": "Secret"}, {"uid": "x"}],
                  imagePullSecrets=[{"name": "registry"}, {}], automountServiceAccountToken=False)
    SA.prepare_for_create(obj)
    assert obj["secrets"] == [{"name": "tok"}, {}]
    assert obj["imagePullSecrets"] == [{"name": "registry"}, {}] and obj["automountServiceAccountToken"] is False
    assert SA.validate(obj) == []  # as kube-apiserver: references are not validated
    new = account(secrets=[{"name": "tok2", "resourceVersion": "7"}])
    SA.prepare_for_update(new, obj)
    assert new["secrets"] == [{"name": "tok2"}] and SA.validate_update(new, obj) == []


def test_table_and_registration() -> None:
    stamp = (datetime.now(UTC) - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    obj = account(secrets=[{"name": "a"}, {"name": "b"}])
    obj["metadata"]["creationTimestamp"] = stamp
    assert [c.name for c in SA.columns()] == ["Name", "Secrets", "Age"]
    assert SA.row(obj) == ["builder", 2, "5m"]
    assert SA.row(account("default"))[:2] == ["default", 0]
    assert SA.short_names == ("sa",) and SA.namespaced and not SA.bumps_generation and SA.subresources == ("token",)
    core = [s.resource for s in all_strategies() if not s.group]
    assert core.index("serviceaccounts") == core.index("secrets") + 1


def test_decoder_types_automount_as_a_bool() -> None:
    decoder = Decoder(swagger()["definitions"])
    obj = account(automountServiceAccountToken=True, secrets=[{"name": "a"}], bogus=1)
    assert decoder.decode(obj, "", "v1", "ServiceAccount", "Warn") == ['unknown field "bogus"']
    with pytest.raises(errors.BadRequest, match="ServiceAccount.automountServiceAccountToken of type bool"):
        decoder.decode(account(automountServiceAccountToken="yes"), "", "v1", "ServiceAccount")
