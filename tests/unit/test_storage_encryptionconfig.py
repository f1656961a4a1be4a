"""EncryptionConfiguration files are validated with kube-apiserver's field paths and messages, and resources
are matched exactly, by group wildcard, then by ``*.*``."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from apiserver.storage import encryptionconfig
from apiserver.storage.encryptionconfig import EncryptionConfigError

GOOD = base64.b64encode(bytes(32)).decode()


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "enc.yaml"
    path.write_text("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n" + body)
    return path


def test_a_short_key_is_kube_s_start_up_error(tmp_path: Path) -> None:
    path = write(tmp_path, """resources:
- resources: [secrets]
  providers:
  - aescbc:
      keys:
      - name: key1
        secret: MTIzNDU2Nzg=
""")
    with pytest.raises(EncryptionConfigError) as err:
        encryptionconfig.load(path)
    assert str(err.value) == (
        f'error while parsing encryption provider configuration file "{path}": error while parsing file: '
        'resources[0].providers[0].aescbc.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected '
        'length, got 8, expected one of [16 24 32]')


def test_every_fault_is_reported(tmp_path: Path) -> None:
    path = write(tmp_path, f"""resources:
- resources: [secrets]
  providers:
  - secretbox:
      keys:
      - {{name: a, secret: "{base64.b64encode(bytes(16)).decode()}"}}
      - {{name: a, secret: "not base64!"}}
  - aesgcm: {{keys: [{{secret: "{GOOD}"}}]}}
    identity: {{}}
  - aescbc: {{keys: []}}
""")
    with pytest.raises(EncryptionConfigError) as err:
        encryptionconfig.load(path)
    message = str(err.value)
    assert "resources[0].providers[0].secretbox.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the " \
           "expected length, got 16, expected one of [32]" in message
    assert 'resources[0].providers[0].secretbox.keys[1].name: Duplicate value: "a"' in message
    assert "resources[0].providers[0].secretbox.keys[1].secret: Invalid value: \"REDACTED\": secrets must be base64 " \
           "encoded" in message
    assert "resources[0].providers[1]: Invalid value:" in message and "more than one provider specified" in message
    assert "resources[0].providers[2].aescbc.keys: Required value: at least one keys is required" in message


def test_wildcards_and_masking(tmp_path: Path) -> None:
    config = encryptionconfig.load(write(tmp_path, f"""resources:
- resources: [secrets, configmaps]
  providers: [{{aesgcm: {{keys: [{{name: k, secret: "{GOOD}"}}]}}}}]
- resources: ["*.apps"]
  providers: [{{secretbox: {{keys: [{{name: k, secret: "{GOOD}"}}]}}}}]
- resources: ["*.*"]
  providers: [{{identity: {{}}}}]
"""))
    assert config.transformer_for("", "secrets") is config.transformer_for("", "secrets")
    assert config.transformer_for("", "secrets") is not None
    assert config.transformer_for("apps", "deployments") is config.transformer_for("apps", "replicasets")
    assert config.transformer_for("", "pods") is config.transformer_for("batch", "jobs") is not None
    with pytest.raises(EncryptionConfigError, match='resource "deployments.apps" is masked by earlier rule "\\*.apps"'):
        encryptionconfig.load(write(tmp_path, """resources:
- resources: ["*.apps"]
  providers: [{identity: {}}]
- resources: [deployments.apps]
  providers: [{identity: {}}]
"""))


def test_unconfigured_resources_are_not_transformed(tmp_path: Path) -> None:
    config = encryptionconfig.load(write(tmp_path, f"""resources:
- resources: [secrets]
  providers: [{{aescbc: {{keys: [{{name: k, secret: "{GOOD}"}}]}}}}]
"""))
    assert config.transformer_for("", "pods") is None


def test_missing_and_wrong_files(tmp_path: Path) -> None:
    with pytest.raises(EncryptionConfigError, match="error reading encryption provider configuration file"):
        encryptionconfig.load(tmp_path / "absent.yaml")
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("apiVersion: v1\nkind: ConfigMap\n")
    with pytest.raises(EncryptionConfigError, match='no kind "ConfigMap" is registered'):
        encryptionconfig.load(wrong)
