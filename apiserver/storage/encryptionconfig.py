"""``--encryption-provider-config``: kube-apiserver's ``apiserver.config.k8s.io/v1`` ``EncryptionConfiguration``.

The file says, per group of resources, which providers transform their values: the first provider (its first
key) encrypts every write, and all of them, in order, are tried to read. The file is validated as kube-apiserver
validates it, with its field paths and messages, and any fault stops the apiserver at start-up before it
serves anything (a wrong key would otherwise write data nobody can read).

Resources are named as in the file: ``secrets``, ``deployments.apps``, ``*.apps`` (every resource of a group),
``*.`` (every core resource), ``*.*`` (all); a name an earlier wildcard already covers is an error, as in kube.
Resources the file does not name are stored as they are.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from apimachinery import yamlload

from .value import (
    AESCBC,
    AESCBC_PREFIX,
    AESGCM_PREFIX,
    SECRETBOX_PREFIX,
    AESGCMTransformer,
    Identity,
    PrefixTransformer,
    PrefixTransformers,
    Secretbox,
    Transformer,
)

API_VERSION = "apiserver.config.k8s.io/v1"
KIND = "EncryptionConfiguration"
AES_KEY_SIZES = (16, 24, 32)
SECRETBOX_KEY_SIZES = (32,)
PROVIDERS = ("kms", "aesgcm", "aescbc", "secretbox", "identity")

# provider name -> (stored prefix, key sizes, transformer of one key, error when no key name matches)
_KEYED: dict[str, tuple[bytes, tuple[int, ...], Callable[[bytes], Transformer], str]] = {
    "aescbc": (AESCBC_PREFIX, AES_KEY_SIZES, AESCBC, "no matching key was found for the provided AES transformer"),
    "aesgcm": (AESGCM_PREFIX, AES_KEY_SIZES, AESGCMTransformer,
               "no matching key was found for the provided AES transformer"),
    "secretbox": (SECRETBOX_PREFIX, SECRETBOX_KEY_SIZES, Secretbox,
                  "no matching key was found for the provided Secretbox transformer"),
}

GroupResource = tuple[str, str]  # (group, resource); "*" for wildcards


class EncryptionConfigError(Exception):
    """The configuration cannot be used; the message is kube-apiserver's."""


class EncryptionConfig:
    """The transformer of each configured resource, looked up as kube does: exact, then ``*.group``, then ``*.*``."""

    def __init__(self, transformers: dict[GroupResource, Transformer]) -> None:
        self._transformers = transformers

    def transformer_for(self, group: str, resource: str) -> Transformer | None:
        for key in ((group, resource), (group, "*"), ("*", "*")):
            found = self._transformers.get(key)
            if found is not None:
                return found
        return None


def parse_group_resource(name: str) -> GroupResource:
    """``deployments.apps`` -> ("apps", "deployments"); ``secrets`` -> ("", "secrets") (schema.ParseGroupResource)."""
    resource, _, group = name.partition(".")
    return group, resource


def _yaml_name(gr: GroupResource) -> str:
    group, resource = gr
    return f"{resource}.{group}" if group or resource == "*" else resource


def load(path: str | Path) -> EncryptionConfig:
    """Read, validate and build the configuration; raises ``EncryptionConfigError`` with kube's message."""
    where = f'error while parsing encryption provider configuration file "{path}"'
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise EncryptionConfigError(f"{where}: error while parsing file: error while loading file: error reading "
                                    f"encryption provider configuration file \"{path}\": {err.strerror}") from None
    if not data.strip():
        raise EncryptionConfigError(f"{where}: error while parsing file: error while loading file: encryption "
                                    f"provider configuration file \"{path}\" is empty")
    try:
        doc = yamlload.safe_load(data)
    except yaml.YAMLError as err:
        raise EncryptionConfigError(f"{where}: error while parsing file: error decoding encryption provider "
                                    f"configuration file \"{path}\": {err}") from None
    if not isinstance(doc, dict) or doc.get("kind") != KIND or doc.get("apiVersion") != API_VERSION:
        got = doc.get("kind") if isinstance(doc, dict) else None
        raise EncryptionConfigError(f"{where}: error while parsing file: error decoding encryption provider "
                                    f"configuration file \"{path}\": no kind \"{got}\" is registered for version "
                                    f"\"{doc.get('apiVersion') if isinstance(doc, dict) else ''}\"; want {KIND} "
                                    f"{API_VERSION}")
    errors = validate(doc)
    if errors:
        message = errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]"
        raise EncryptionConfigError(f"{where}: error while parsing file: {message}")
    try:
        return build(doc)
    except EncryptionConfigError as err:
        raise EncryptionConfigError(f"{where}: {err}") from None


# --- validation (k8s.io/apiserver/pkg/apis/config/validation) --------------------------------------------------
def _required(path: str, detail: str) -> str:
    return f"{path}: Required value: {detail}"


def _invalid(path: str, value: str, detail: str) -> str:
    return f'{path}: Invalid value: "{value}": {detail}'


def validate(doc: dict[str, Any]) -> list[str]:
    resources = doc.get("resources")
    if not isinstance(resources, list) or not resources:
        return [_required("resources", "at least one resources is required")]
    errors: list[str] = []
    for i, entry in enumerate(resources):
        entry = entry if isinstance(entry, dict) else {}
        names, providers = entry.get("resources"), entry.get("providers")
        if not isinstance(names, list) or not names:
            errors.append(_required(f"resources[{i}].resources", f"at least one resources[{i}].resources is required"))
        if not isinstance(providers, list) or not providers:
            errors.append(_required(f"resources[{i}].providers", f"at least one resources[{i}].providers is required"))
            continue
        for j, provider in enumerate(providers):
            errors.extend(_validate_provider(provider, f"resources[{i}].providers[{j}]"))
    return errors


def _validate_provider(provider: Any, path: str) -> list[str]:
    found = [name for name in PROVIDERS if isinstance(provider, dict) and provider.get(name) is not None]
    if not found:
        return [_invalid(path, str(provider), "provider does not contain any of the expected providers: KMS, "
                                              "AESGCM, AESCBC, Secretbox, Identity")]
    if len(found) > 1:
        return [_invalid(path, str(provider), "more than one provider specified in a single element, should split "
                                              "into different list elements")]
    name = found[0]
    if name == "kms":
        return [_invalid(f"{path}.kms", "", "KMS providers are not supported by kubelab")]
    if name == "identity":
        return []
    body = provider[name] if isinstance(provider[name], dict) else {}
    return _validate_keys(body.get("keys"), f"{path}.{name}.keys", _KEYED[name][1])


def _validate_keys(keys: Any, path: str, sizes: tuple[int, ...]) -> list[str]:
    if not isinstance(keys, list) or not keys:
        return [_required(path, "at least one keys is required")]
    errors: list[str] = []
    seen: set[str] = set()
    for k, key in enumerate(keys):
        key = key if isinstance(key, dict) else {}
        name, secret = str(key.get("name") or ""), str(key.get("secret") or "")
        if not name:
            errors.append(_required(f"{path}[{k}].name", "name is a mandatory field for a key"))
        elif name in seen:
            errors.append(f'{path}[{k}].name: Duplicate value: "{name}"')
        seen.add(name)
        if not secret:
            errors.append(_required(f"{path}[{k}].secret", "secret is a mandatory field for a key"))
            continue
        try:
            raw = base64.b64decode(secret, validate=True)
        except (binascii.Error, ValueError):
            errors.append(_invalid(f"{path}[{k}].secret", "REDACTED", "secrets must be base64 encoded"))
            continue
        if len(raw) not in sizes:
            errors.append(_invalid(f"{path}[{k}].secret", "REDACTED", f"secret is not of the expected length, got "
                                   f"{len(raw)}, expected one of [{' '.join(map(str, sizes))}]"))
    return errors


# --- building (k8s.io/apiserver/pkg/server/options/encryptionconfig) -------------------------------------------
def build(doc: dict[str, Any]) -> EncryptionConfig:
    chains: dict[GroupResource, list[PrefixTransformer]] = {}
    for entry in doc["resources"]:
        providers = [_provider(p) for p in entry["providers"]]
        for name in entry["resources"]:
            gr = parse_group_resource(str(name))
            for wildcard in ((gr[0], "*"), ("*", "*")):
                if wildcard in chains and wildcard != gr:
                    raise EncryptionConfigError(f'resource "{_yaml_name(gr)}" is masked by earlier rule '
                                                f'"{_yaml_name(wildcard)}"')
            chains.setdefault(gr, []).extend(providers)
    return EncryptionConfig({gr: PrefixTransformers("no matching prefix found", chain)
                             for gr, chain in chains.items()})


def _provider(provider: dict[str, Any]) -> PrefixTransformer:
    if provider.get("identity") is not None:
        return PrefixTransformer(b"", Identity())
    name = next(n for n in _KEYED if provider.get(n) is not None)
    prefix, _, make, no_key = _KEYED[name]
    keys = [PrefixTransformer(f"{key['name']}:".encode(), make(base64.b64decode(key["secret"])))
            for key in provider[name]["keys"]]
    return PrefixTransformer(prefix, PrefixTransformers(no_key, keys))
